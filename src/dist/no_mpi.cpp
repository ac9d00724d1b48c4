// Ranks in a build without MPI (PAGEDW2V_DISTRIBUTED off or MPI not found): one process trains
// alone, and a launch with several ranks is refused with one clear error.
#include <cstdlib>

#include "base/error.hpp"
#include "dist/ranks.hpp"

namespace pagedw2v::dist {

std::unique_ptr<Ranks> join_ranks(const std::atomic<int>*, const std::string&) {
  if (launched_with_ranks()) {
    throw Error(
        "launched with several ranks, but this pagedw2v was built without MPI; install OpenMPI "
        "(libopenmpi-dev) and rebuild with -DPAGEDW2V_DISTRIBUTED=ON");
  }
  return nullptr;
}

// No Ranks exists in this build (join_ranks returns none), so nothing can call this.
void abort_job(Ranks&, const std::string&, int) { std::abort(); }

}  // namespace pagedw2v::dist
