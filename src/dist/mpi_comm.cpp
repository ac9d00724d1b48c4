#include "dist/mpi_comm.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include <unistd.h>

#include "base/error.hpp"

namespace pagedw2v::dist {
namespace {

/// How long a rank that was asked to stop waits for the others before it decides that the job
/// is ending. mpirun sends every rank SIGTERM when one rank dies (or when mpirun itself is
/// stopped) and SIGKILL one second later (odls_base_sigkill_timeout), so this stays below that.
constexpr double kGraceSeconds = 0.4;

/// The tag of send_receive()'s messages, apart from gather_rows()' (the tables' indices).
constexpr int kSendReceiveTag = 1000;

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    throw Error(std::string("MPI ") + what + " failed: " + std::string(text, len));
  }
}

}  // namespace

MpiComm::MpiComm(const std::atomic<int>* stop, std::string output)
    : stop_(stop), output_(std::move(output)) {
  int provided = 0;
  check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "init");
  // Errors come back as codes (thrown as Error), not as a silent abort inside MPI.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int r = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  rank_ = static_cast<uint32_t>(r);
  size_ = static_cast<uint32_t>(n);
}

MpiComm::~MpiComm() {
  if (!aborting_) MPI_Finalize();
}

void MpiComm::abort(int code) {
  aborting_ = true;
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::abort();  // MPI_Abort does not return
}

void MpiComm::wait(std::vector<MPI_Request>& requests, const char* what) {
  using Clock = std::chrono::steady_clock;
  bool stopping = false;
  Clock::time_point asked;
  for (uint32_t polls = 0;; ++polls) {
    int done = 0;
    check(
        MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE),
        what);
    if (done) return;
    // SIGTERM is how mpirun ends the ranks (a rank died, or mpirun was stopped); another signal
    // (SIGINT sent to every rank) stops the ranks together at the end of the span.
    if (stop_ != nullptr && stop_->load() == SIGTERM) {
      if (!stopping) {
        stopping = true;
        asked = Clock::now();
      } else if (std::chrono::duration<double>(Clock::now() - asked).count() > kGraceSeconds) {
        // The job is ending (a rank died, or mpirun was stopped) and mpirun kills this rank
        // within a second: say so and end every rank now, without unwinding (which would wait
        // for a checkpoint write in progress).
        const std::string latest = output_ + "/checkpoints/latest.h5";
        std::string next = "training had not started";
        if (training_) {
          next = ::access(latest.c_str(), R_OK) == 0
                     ? "resume with: mpirun -np " + std::to_string(size_) +
                           " pagedw2v train --output " + output_ + " --resume " + latest
                     : "no checkpoint was written yet";
        }
        std::fprintf(stderr,
                     "pagedw2v: rank %u of %u: the job is ending (signal %d while waiting on the "
                     "other ranks in %s: a rank ended or mpirun was stopped); %s\n",
                     rank_, size_, stop_->load(), what, next.c_str());
        abort(1);
      }
    }
    // Spin briefly (a peer is usually close), then yield the core to the training threads.
    if (polls > 256) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

std::vector<uint32_t> MpiComm::all_to_all(const std::vector<std::vector<uint32_t>>& send,
                                          std::vector<int>* counts) {
  const int n = static_cast<int>(size_);
  std::vector<int> send_counts(n), send_displs(n), recv_displs(n);
  counts->assign(n, 0);
  std::vector<uint32_t> flat;
  for (int r = 0; r < n; ++r) {
    send_counts[r] = static_cast<int>(send[r].size());
    send_displs[r] = static_cast<int>(flat.size());
    flat.insert(flat.end(), send[r].begin(), send[r].end());
  }
  std::vector<MPI_Request> req(1);
  check(MPI_Ialltoall(send_counts.data(), 1, MPI_INT, counts->data(), 1, MPI_INT, MPI_COMM_WORLD,
                      &req[0]),
        "all-to-all (counts)");
  wait(req, "all-to-all (counts)");
  int total = 0;
  for (int r = 0; r < n; ++r) {
    recv_displs[r] = total;
    total += (*counts)[r];
  }
  std::vector<uint32_t> recv(total);
  check(
      MPI_Ialltoallv(flat.data(), send_counts.data(), send_displs.data(), MPI_UINT32_T, recv.data(),
                     counts->data(), recv_displs.data(), MPI_UINT32_T, MPI_COMM_WORLD, &req[0]),
      "all-to-all (ids)");
  wait(req, "all-to-all (ids)");
  return recv;
}

void MpiComm::all_to_all(const float* send, const std::vector<int>& send_counts, float* recv,
                         const std::vector<int>& recv_counts) {
  const int n = static_cast<int>(size_);
  std::vector<int> sd(n), rd(n);
  for (int r = 1; r < n; ++r) {
    sd[r] = sd[r - 1] + send_counts[r - 1];
    rd[r] = rd[r - 1] + recv_counts[r - 1];
  }
  std::vector<MPI_Request> req(1);
  check(MPI_Ialltoallv(send, send_counts.data(), sd.data(), MPI_FLOAT, recv, recv_counts.data(),
                       rd.data(), MPI_FLOAT, MPI_COMM_WORLD, &req[0]),
        "all-to-all (rows)");
  wait(req, "all-to-all (rows)");
}

void MpiComm::sum(double* values, int n) {
  std::vector<MPI_Request> req(1);
  check(MPI_Iallreduce(MPI_IN_PLACE, values, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req[0]),
        "all-reduce");
  wait(req, "all-reduce");
}

void MpiComm::sum(float* values, uint64_t n) {
  constexpr uint64_t kPiece = uint64_t{1} << 30;
  for (uint64_t at = 0; at < n; at += kPiece) {
    std::vector<MPI_Request> req(1);
    check(MPI_Iallreduce(MPI_IN_PLACE, values + at, static_cast<int>(std::min(kPiece, n - at)),
                         MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req[0]),
          "all-reduce");
    wait(req, "all-reduce");
  }
}

int MpiComm::max(int value) {
  std::vector<MPI_Request> req(1);
  int out = 0;
  check(MPI_Iallreduce(&value, &out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &req[0]), "all-reduce");
  wait(req, "all-reduce");
  return out;
}

void MpiComm::broadcast(void* data, int bytes) {
  std::vector<MPI_Request> req(1);
  check(MPI_Ibcast(data, bytes, MPI_BYTE, 0, MPI_COMM_WORLD, &req[0]), "broadcast");
  wait(req, "broadcast");
}

std::vector<uint8_t> MpiComm::all_gather(const void* data, int bytes) {
  std::vector<uint8_t> all(static_cast<size_t>(bytes) * size_);
  std::vector<MPI_Request> req(1);
  check(MPI_Iallgather(data, bytes, MPI_BYTE, all.data(), bytes, MPI_BYTE, MPI_COMM_WORLD, &req[0]),
        "all-gather");
  wait(req, "all-gather");
  return all;
}

void MpiComm::send_receive(const void* send, uint64_t send_bytes, uint32_t to, void* recv,
                           uint64_t recv_bytes, uint32_t from) {
  // MPI counts are ints; messages between the same two ranks with one tag arrive in the order
  // sent, so the receiver's pieces match the sender's one by one.
  constexpr uint64_t kPiece = uint64_t{1} << 30;
  std::vector<MPI_Request> req;
  req.reserve((recv_bytes + kPiece - 1) / kPiece + (send_bytes + kPiece - 1) / kPiece);
  auto* in = static_cast<uint8_t*>(recv);
  for (uint64_t at = 0; at < recv_bytes; at += kPiece) {
    req.emplace_back();
    check(MPI_Irecv(in + at, static_cast<int>(std::min(kPiece, recv_bytes - at)), MPI_BYTE,
                    static_cast<int>(from), kSendReceiveTag, MPI_COMM_WORLD, &req.back()),
          "receive");
  }
  const auto* out = static_cast<const uint8_t*>(send);
  for (uint64_t at = 0; at < send_bytes; at += kPiece) {
    req.emplace_back();
    check(MPI_Isend(out + at, static_cast<int>(std::min(kPiece, send_bytes - at)), MPI_BYTE,
                    static_cast<int>(to), kSendReceiveTag, MPI_COMM_WORLD, &req.back()),
          "send");
  }
  wait(req, "send-receive");
}

void MpiComm::gather_rows(const std::vector<const float*>& tables, uint64_t first, uint64_t last,
                          uint32_t dim, float* out) {
  const uint32_t n = size_;
  const uint64_t block = last - first;
  // Rank r's words in [first, last): from its first one there, every n-th; their rows lie side
  // by side in r's compact tables, from that word's row (id / n).
  auto first_of = [&](uint32_t r) { return first + (r + n - first % n) % n; };
  auto count_of = [&](uint32_t r) {
    const uint64_t a = first_of(r);
    return a < last ? (last - a + n - 1) / n : 0;
  };
  std::vector<MPI_Request> req;
  std::vector<MPI_Datatype> types;
  auto free_types = [&] {
    for (MPI_Datatype& t : types) MPI_Type_free(&t);
  };
  try {
    if (rank_ == 0) {
      for (uint32_t r = 1; r < n; ++r) {
        const uint64_t count = count_of(r);
        if (count == 0) continue;
        types.emplace_back();
        check(MPI_Type_vector(static_cast<int>(count), static_cast<int>(dim),
                              static_cast<int>(n * dim), MPI_FLOAT, &types.back()),
              "datatype");
        check(MPI_Type_commit(&types.back()), "datatype");
        for (size_t t = 0; t < tables.size(); ++t) {
          req.emplace_back();
          check(MPI_Irecv(out + (t * block + first_of(r) - first) * dim, 1, types.back(),
                          static_cast<int>(r), static_cast<int>(t), MPI_COMM_WORLD, &req.back()),
                "receive rows");
        }
      }
      const uint64_t count = count_of(0), from = first_of(0) / n;
      for (size_t t = 0; t < tables.size(); ++t) {
        for (uint64_t k = 0; k < count; ++k) {
          std::copy_n(tables[t] + (from + k) * dim, dim,
                      out + (t * block + first_of(0) - first + k * n) * dim);
        }
      }
    } else if (const uint64_t count = count_of(rank_); count > 0) {
      const uint64_t from = first_of(rank_) / n;
      for (size_t t = 0; t < tables.size(); ++t) {
        req.emplace_back();
        check(MPI_Isend(tables[t] + from * dim, static_cast<int>(count * dim), MPI_FLOAT, 0,
                        static_cast<int>(t), MPI_COMM_WORLD, &req.back()),
              "send rows");
      }
    }
    wait(req, "gather rows");
  } catch (...) {
    free_types();
    throw;
  }
  free_types();
}

}  // namespace pagedw2v::dist

namespace pagedw2v::dist {

std::vector<uint64_t> MpiComm::gather(const uint64_t* values, int n) {
  std::vector<uint64_t> all(rank_ == 0 ? static_cast<size_t>(n) * size_ : 0);
  std::vector<MPI_Request> req(1);
  check(
      MPI_Igather(values, n, MPI_UINT64_T, all.data(), n, MPI_UINT64_T, 0, MPI_COMM_WORLD, &req[0]),
      "gather");
  wait(req, "gather");
  return all;
}

}  // namespace pagedw2v::dist
