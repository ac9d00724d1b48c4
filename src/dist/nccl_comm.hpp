#pragma once
/// @file nccl_comm.hpp
/// The NCCL communicator of every rank of an MPI job, for ranks whose GPUs are their own: its
/// unique id broadcast by MPI, NCCL's errors as pagedw2v::Error, and a wait on a stream that
/// polls NCCL so that a peer or link lost ends it with an error instead of a hang. Used by the
/// output parts' rotation (part_rotation.hpp) and the replicas' sums (gpu_replica_backend.hpp).
/// Built with MPI, CUDA and NCCL (PAGEDW2V_HAVE_NCCL); every_rank_has_its_gpu needs MPI only.

#include <cuda_runtime_api.h>

#include <array>

#ifdef PAGEDW2V_HAVE_NCCL
#include <nccl.h>
#endif

#include "dist/mpi_comm.hpp"

namespace pagedw2v::dist {

/// Whether every rank of `comm` runs on a GPU of its own, each rank giving its device's UUID
/// (`uuid`, DeviceFacts::uuid; collective). NCCL refuses two ranks of a communicator on one GPU.
bool every_rank_has_its_gpu(MpiComm& comm, const std::array<unsigned char, 16>& uuid);

#ifdef PAGEDW2V_HAVE_NCCL
/// Throws Error naming `call` and NCCL's message unless `rc` is ncclSuccess.
void nccl_check(ncclResult_t rc, const char* call);

class NcclComm {
 public:
  /// Joins the communicator of every rank of `mpi` (collective).
  explicit NcclComm(MpiComm& mpi);
  /// Destroys the communicator, or aborts it when a call failed or an exception is unwinding
  /// (destroying flushes what was issued, which never ends when a peer is gone).
  ~NcclComm();
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  ncclComm_t get() const { return comm_; }
  /// Marks the communicator failed: it is aborted, not destroyed.
  void fail() { failed_ = true; }
  /// Waits for `stream`, polling NCCL's asynchronous error; `what` names the operation in the
  /// error. Marks the communicator failed when it throws.
  void wait(cudaStream_t stream, const char* what);

 private:
  ncclComm_t comm_ = nullptr;
  bool failed_ = false;
};
#else
/// Without NCCL nothing creates one (the paths through host memory are taken).
class NcclComm {};
#endif

}  // namespace pagedw2v::dist
