// How a process tells that an MPI launcher started it with several ranks (ranks.hpp).
#include <cstdlib>

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

}  // namespace pagedw2v::dist
