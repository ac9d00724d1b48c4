// How a process tells that an MPI launcher started it with several ranks (ranks.hpp).
#include <algorithm>
#include <cstdlib>
#include <thread>

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

}  // namespace pagedw2v::dist
