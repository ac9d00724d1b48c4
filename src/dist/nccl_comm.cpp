#include "dist/nccl_comm.hpp"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "kernels/cuda_check.hpp"

namespace pagedw2v::dist {

bool every_rank_has_its_gpu(MpiComm& comm, const std::array<unsigned char, 16>& uuid) {
  const std::vector<uint8_t> all = comm.all_gather(uuid.data(), static_cast<int>(uuid.size()));
  for (size_t i = 0; i < comm.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (std::memcmp(all.data() + 16 * i, all.data() + 16 * j, 16) == 0) return false;
    }
  }
  return true;
}

#ifdef PAGEDW2V_HAVE_NCCL
void nccl_check(ncclResult_t rc, const char* call) {
  if (rc == ncclSuccess) return;
  std::string msg = std::string("NCCL ") + call + " failed: " + ncclGetErrorString(rc);
  const char* detail = ncclGetLastError(nullptr);
  if (detail != nullptr && detail[0] != '\0') msg += std::string(" (") + detail + ")";
  throw Error(msg);
}

NcclComm::NcclComm(MpiComm& mpi) {
  ncclUniqueId id{};
  if (mpi.rank() == 0) nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  mpi.broadcast(&id, static_cast<int>(sizeof id));
  nccl_check(
      ncclCommInitRank(&comm_, static_cast<int>(mpi.size()), id, static_cast<int>(mpi.rank())),
      "ncclCommInitRank");
}

NcclComm::~NcclComm() {
  if (comm_ == nullptr) return;
  const bool abort = failed_ || std::uncaught_exceptions() > 0;
  const ncclResult_t rc = abort ? ncclCommAbort(comm_) : ncclCommDestroy(comm_);
  if (rc != ncclSuccess) {
    std::fprintf(stderr, "pagedw2v: NCCL %s failed: %s (ignored during cleanup)\n",
                 abort ? "ncclCommAbort" : "ncclCommDestroy", ncclGetErrorString(rc));
  }
}

void NcclComm::wait(cudaStream_t stream, const char* what) {
  try {
    for (uint32_t polls = 0; cudaStreamQuery(stream) == cudaErrorNotReady; ++polls) {
      ncclResult_t async = ncclSuccess;
      nccl_check(ncclCommGetAsyncError(comm_, &async), "ncclCommGetAsyncError");
      nccl_check(async, what);
      if (polls > 256) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    // The stream is done or failed: the error, if any, with the call's name.
    PAGEDW2V_CUDA_TRY(cudaStreamSynchronize(stream));
  } catch (...) {
    failed_ = true;
    throw;
  }
}
#endif

}  // namespace pagedw2v::dist
