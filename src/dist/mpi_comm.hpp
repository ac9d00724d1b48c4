#pragma once
/// @file mpi_comm.hpp
/// The MPI calls distributed training makes, as a small RAII object over MPI_COMM_WORLD: init
/// and finalize, and the collectives (all-to-all, all-reduce, broadcast, strided row transfers)
/// issued non-blocking and waited on by polling. A rank that waits on the others and is then
/// asked to stop by SIGTERM (mpirun sends it to every rank when one dies) prints one line saying
/// that the job ends and how to resume, and aborts the job, instead of hanging in a collective that
/// can never complete.
/// Built only with MPI (PAGEDW2V_DISTRIBUTED).

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace pagedw2v::dist {

class MpiComm {
 public:
  /// MPI_Init_thread (funneled: only the training thread calls MPI). `stop` is the process's
  /// signal flag, watched while waiting; `output` names the run for the error a lost rank gives.
  MpiComm(const std::atomic<int>* stop, std::string output);
  /// MPI_Finalize, unless the job is being aborted.
  ~MpiComm();
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;

  uint32_t rank() const { return rank_; }
  uint32_t size() const { return size_; }

  /// Each rank sends send[r] to rank r and returns what every rank sent it, concatenated in rank
  /// order; `counts` receives how many elements came from each rank.
  std::vector<uint32_t> all_to_all(const std::vector<std::vector<uint32_t>>& send,
                                   std::vector<int>* counts);
  /// all_to_all of floats with counts known on both sides (elements to and from each rank).
  void all_to_all(const float* send, const std::vector<int>& send_counts, float* recv,
                  const std::vector<int>& recv_counts);
  /// Element-wise sums of `values` over all ranks, in place.
  void sum(double* values, int n);
  /// The same for `n` floats, any n (pieces of at most 2^30 elements, one all-reduce each).
  void sum(float* values, uint64_t n);
  /// The largest `value` of any rank.
  int max(int value);
  /// Rank 0's bytes, on every rank.
  void broadcast(void* data, int bytes);
  /// Every rank's `bytes` bytes at `data`, concatenated in rank order, on every rank.
  std::vector<uint8_t> all_gather(const void* data, int bytes);
  /// Sends `send_bytes` at `send` to rank `to` and receives `recv_bytes` from rank `from` into
  /// `recv`, both at once (so a ring of ranks each sending to a neighbour cannot deadlock).
  /// `recv_bytes` must be what `from` sends this rank; zero bytes move no message. Sizes may
  /// exceed 2^31: both sides cut a transfer into the same pieces of at most 1 GiB.
  void send_receive(const void* send, uint64_t send_bytes, uint32_t to, void* recv,
                    uint64_t recv_bytes, uint32_t from);
  /// The rows of words [first, last) of `tables` (this rank's owned rows of each, compact:
  /// row k is word rank() + k·size(), dist/owned_rows.hpp), gathered on rank 0: `out` receives
  /// tables.size() blocks of (last − first) × dim floats, table t's word id at row
  /// t·(last − first) + id − first (strided, in place; rank 0's own rows copied). The other
  /// ranks send theirs (one contiguous run of rows a table) and pass no `out`.
  void gather_rows(const std::vector<const float*>& tables, uint64_t first, uint64_t last,
                   uint32_t dim, float* out);
  /// `values` (n of them) of every rank, concatenated in rank order, on rank 0 (empty on others).
  std::vector<uint64_t> gather(const uint64_t* values, int n);

  /// Marks that training has started: from then on, a rank that finds the job ending names the
  /// checkpoint that resumes it.
  void training_started() { training_ = true; }

  /// Aborts every rank of the job with `code` (MPI_Abort).
  [[noreturn]] void abort(int code);

 private:
  /// Waits for `requests`, polling; ends the job (see above) when a stop request came and the
  /// others have not answered within a grace period.
  void wait(std::vector<MPI_Request>& requests, const char* what);

  const std::atomic<int>* stop_;
  std::string output_;
  uint32_t rank_ = 0;
  uint32_t size_ = 1;
  bool aborting_ = false;
  bool training_ = false;
};

}  // namespace pagedw2v::dist
