// How a process tells that an MPI launcher started it with several ranks (ranks.hpp).
#include <dirent.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "dist/ranks.hpp"

namespace pagedw2v::dist {

bool launched_with_ranks() {
  // OpenMPI's mpirun, then PMI/PMIx launchers (srun, MPICH's hydra).
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && std::atoi(v) > 1) return true;
  }
  return false;
}

uint32_t launch_rank() {
  if (!launched_with_ranks()) return 0;
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}) {
    if (const char* v = std::getenv(name)) return static_cast<uint32_t>(std::atoi(v));
  }
  return 0;
}

uint32_t default_threads_per_rank() {
  int local = 1;
  for (const char* name :
       {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"}) {
    if (const char* v = std::getenv(name)) {
      local = std::max(1, std::atoi(v));
      break;
    }
  }
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return std::max(1u, cores / static_cast<unsigned>(local));
}

void limit_gpu_queues() {
  if (launched_with_ranks()) return;
  ::setenv("CUDA_DEVICE_MAX_CONNECTIONS", "4", 0);
}

void choose_gpu_of_local_rank() {
  if (!launched_with_ranks()) return;
  const char* local = nullptr;
  for (const char* name :
       {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMIX_LOCAL_RANK", "SLURM_LOCALID"}) {
    if ((local = std::getenv(name)) != nullptr) break;
  }
  if (local == nullptr) return;
  std::vector<std::string> gpus;
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES")) {
    std::string list = visible;
    for (size_t at = 0; at <= list.size();) {
      const size_t comma = std::min(list.find(',', at), list.size());
      if (comma > at) gpus.push_back(list.substr(at, comma - at));
      at = comma + 1;
    }
  } else if (DIR* d = ::opendir("/proc/driver/nvidia/gpus")) {
    // One entry a GPU, by PCI address; CUDA numbers them 0, 1, … (in its own order, which
    // only matters for which rank gets which).
    uint32_t n = 0;
    while (const dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
    ::closedir(d);
    for (uint32_t k = 0; k < n; ++k) gpus.push_back(std::to_string(k));
  }
  if (gpus.size() < 2) return;
  const uint32_t k = static_cast<uint32_t>(std::max(0, std::atoi(local))) % gpus.size();
  ::setenv("CUDA_VISIBLE_DEVICES", gpus[k].c_str(), 1);
}

}  // namespace pagedw2v::dist
