#include "dist/part_rotation.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "dist/mpi_comm.hpp"
#include "dist/nccl_comm.hpp"
#include "kernels/cuda_check.hpp"

namespace pagedw2v::dist {
namespace {

/// Bytes a chunk moves: large enough that a transfer runs at the link's speed, small beside a
/// GPU's memory.
constexpr uint64_t kChunkBytes = uint64_t{64} << 20;

/// The bytes of a transfer of `total` bytes that the chunk starting at `at` carries.
uint64_t piece(uint64_t total, uint64_t at, uint64_t chunk) {
  return at < total ? std::min(chunk, total - at) : 0;
}

/// What every rank tells the others before a path is chosen: its GPU and its largest buffer.
struct RankFacts {
  unsigned char uuid[16];
  uint64_t max_bytes;
};
static_assert(sizeof(RankFacts) == 24, "RankFacts travels as raw bytes");

}  // namespace

PartRotation::PartRotation(MpiComm& comm, uint64_t max_bytes,
                           const std::array<unsigned char, 16>& uuid)
    : comm_(comm), max_bytes_(max_bytes) {
  RankFacts mine{};
  std::memcpy(mine.uuid, uuid.data(), sizeof mine.uuid);
  mine.max_bytes = max_bytes;
  const std::vector<uint8_t> gathered = comm.all_gather(&mine, static_cast<int>(sizeof mine));
  std::vector<RankFacts> all(comm.size());
  std::memcpy(all.data(), gathered.data(), gathered.size());

  // NCCL refuses two ranks on one GPU; such ranks exchange through host memory.
  bool own_gpus = true;
  uint64_t largest = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    largest = std::max(largest, all[i].max_bytes);
    for (size_t j = 0; j < i; ++j) {
      if (std::memcmp(all[i].uuid, all[j].uuid, sizeof all[i].uuid) == 0) own_gpus = false;
    }
  }
#ifdef PAGEDW2V_HAVE_NCCL
  if (own_gpus) path_ = RotationPath::kNccl;
#else
  (void)own_gpus;
#endif
  if (comm.size() == 1) return;
  // Every rank cuts a transfer at the same offsets, so each chunk sent meets a receive of its
  // size: the chunk is agreed from the largest buffer of any rank.
  chunk_ = std::min(kChunkBytes, largest);
  if (chunk_ == 0) return;
#ifdef PAGEDW2V_HAVE_NCCL
  if (path_ == RotationPath::kNccl) {
    staging_ = DeviceBuffer<uint8_t>(chunk_, "the staging chunk of the output parts' rotation");
    nccl_ = std::make_unique<NcclComm>(comm);
    return;
  }
#endif
  host_send_ = PinnedBuffer<uint8_t>(chunk_, "the output parts' rotation (sending)");
  host_receive_ = PinnedBuffer<uint8_t>(chunk_, "the output parts' rotation (receiving)");
}

PartRotation::~PartRotation() = default;

std::string PartRotation::describe() const {
  return path_ == RotationPath::kNccl ? "NCCL" : "host memory (MPI)";
}

void PartRotation::rotate(void* buffer, uint64_t send_bytes, uint64_t recv_bytes,
                          cudaStream_t stream) {
  if (send_bytes > max_bytes_ || recv_bytes > max_bytes_) {
    throw Error("rotating an output part: " + std::to_string(send_bytes) + " bytes out and " +
                std::to_string(recv_bytes) + " in, over a buffer of " + std::to_string(max_bytes_));
  }
  if (comm_.size() == 1) {
    if (send_bytes != recv_bytes) {
      throw Error("rotating an output part over one rank: " + std::to_string(send_bytes) +
                  " bytes out but " + std::to_string(recv_bytes) + " in");
    }
    return;
  }
  if (chunk_ == 0) return;  // every rank's buffer is empty
  auto* bytes = static_cast<uint8_t*>(buffer);
#ifdef PAGEDW2V_HAVE_NCCL
  if (path_ == RotationPath::kNccl) {
    rotate_nccl(bytes, send_bytes, recv_bytes, stream);
    return;
  }
#endif
  rotate_host(bytes, send_bytes, recv_bytes, stream);
}

// Both paths loop over the chunks of the larger of the two transfers. A rank's sends of chunk c
// meet its previous rank's receives of chunk c, whose size that rank computes from its
// `recv_bytes` (this rank's `send_bytes`) by the same rule; a chunk that is empty on one side is
// empty on the other and skipped by both, so ranks that loop a different number of times still
// issue matching calls.

#ifdef PAGEDW2V_HAVE_NCCL
void PartRotation::rotate_nccl(uint8_t* buffer, uint64_t send_bytes, uint64_t recv_bytes,
                               cudaStream_t stream) {
  const uint32_t n = comm_.size(), r = comm_.rank();
  const int previous = static_cast<int>((r + n - 1) % n), next = static_cast<int>((r + 1) % n);
  const uint64_t total = std::max(send_bytes, recv_bytes);
  try {
    for (uint64_t at = 0; at < total; at += chunk_) {
      const uint64_t out = piece(send_bytes, at, chunk_), in = piece(recv_bytes, at, chunk_);
      nccl_check(ncclGroupStart(), "ncclGroupStart");
      if (out > 0) {
        nccl_check(ncclSend(buffer + at, out, ncclUint8, previous, nccl_->get(), stream),
                   "ncclSend");
      }
      if (in > 0) {
        nccl_check(ncclRecv(staging_.data(), in, ncclUint8, next, nccl_->get(), stream),
                   "ncclRecv");
      }
      nccl_check(ncclGroupEnd(), "ncclGroupEnd");
      // In stream order, after the group: the chunk has left before the received one
      // overwrites it, and the next group's receive waits for this copy out of the staging.
      if (in > 0) {
        PAGEDW2V_CUDA_TRY(
            cudaMemcpyAsync(buffer + at, staging_.data(), in, cudaMemcpyDeviceToDevice, stream));
      }
    }
    nccl_->wait(stream, "send/receive (asynchronous error)");
  } catch (...) {
    nccl_->fail();
    throw;
  }
}
#endif

void PartRotation::rotate_host(uint8_t* buffer, uint64_t send_bytes, uint64_t recv_bytes,
                               cudaStream_t stream) {
  const uint32_t n = comm_.size(), r = comm_.rank();
  const uint32_t previous = (r + n - 1) % n, next = (r + 1) % n;
  const uint64_t total = std::max(send_bytes, recv_bytes);
  for (uint64_t at = 0; at < total; at += chunk_) {
    const uint64_t out = piece(send_bytes, at, chunk_), in = piece(recv_bytes, at, chunk_);
    if (out > 0) {
      PAGEDW2V_CUDA_TRY(
          cudaMemcpyAsync(host_send_.data(), buffer + at, out, cudaMemcpyDeviceToHost, stream));
    }
    // Also finishes the previous chunk's copy out of host_receive_ before MPI writes it again.
    PAGEDW2V_CUDA_TRY(cudaStreamSynchronize(stream));
    comm_.send_receive(host_send_.data(), out, previous, host_receive_.data(), in, next);
    if (in > 0) {
      PAGEDW2V_CUDA_TRY(
          cudaMemcpyAsync(buffer + at, host_receive_.data(), in, cudaMemcpyHostToDevice, stream));
    }
  }
  PAGEDW2V_CUDA_TRY(cudaStreamSynchronize(stream));
}

}  // namespace pagedw2v::dist
