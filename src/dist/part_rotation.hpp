#pragma once
/// @file part_rotation.hpp
/// Moving the output parts of a run over GPUs one rank round the ring (dist/part_backend.hpp):
/// every rank sends the part its GPU holds to the rank before it, (r + N − 1) % N, and receives
/// the part of the rank after it, (r + 1) % N, in place, in the same device buffer. Parts differ
/// by at most one row, and a part's table can take most of a GPU, so the bytes go through a
/// small staging chunk, never a second buffer of the part's size: chunk c of the buffer is sent
/// from where it lies, the neighbour's chunk c lands in the staging chunk, and only when both
/// are done does it overwrite chunk c.
///
/// Two paths, chosen once for the job: NCCL (send and receive on the GPUs, over NVLink where
/// there is one) when the build has it and every rank has a GPU of its own; else host memory,
/// each chunk copied to pinned host memory, exchanged with MPI and copied back.
///
/// Owns: the NCCL communicator, the device staging chunk (NCCL) or the pinned host chunks
/// (host path). May not touch: which part a rank holds or trains (the caller counts the moves),
/// the buffer beyond the bytes rotate() is given, any stream but the one rotate() is given.
/// Built only with MPI and CUDA.

#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "gpu/device_buffer.hpp"

namespace pagedw2v::dist {

class MpiComm;
class NcclComm;

/// How the rotation moves bytes.
enum class RotationPath { kNccl, kHost };

class PartRotation {
 public:
  /// For the ranks of `comm`, on the current CUDA device, buffers of at most `max_bytes`.
  /// Chooses NCCL (ncclCommInitRank with the unique id broadcast by MPI) when the build has it
  /// (PAGEDW2V_HAVE_NCCL) and every rank is on a different GPU (compare the devices' UUIDs,
  /// `uuid` (DeviceFacts::uuid) of every rank, gathered); else the host path: chunks copied to
  /// pinned host memory, exchanged with MPI (MpiComm::send_receive), copied back. With one rank
  /// nothing moves and nothing is allocated. Throws Error when the staging memory cannot be
  /// allocated or NCCL cannot start. Collective.
  PartRotation(MpiComm& comm, uint64_t max_bytes, const std::array<unsigned char, 16>& uuid);
  /// Destroys the NCCL communicator (aborts it after a failed rotation, or while an exception
  /// unwinds, so that it never waits on a rank that is gone) and frees the staging.
  ~PartRotation();
  PartRotation(const PartRotation&) = delete;
  PartRotation& operator=(const PartRotation&) = delete;

  /// Sends `send_bytes` at device pointer `buffer` to the previous rank and receives
  /// `recv_bytes` from the next rank into `buffer` (in place, chunk by chunk), on `stream`;
  /// returns when done (the buffer holds the received bytes). `recv_bytes` is what the next
  /// rank sends; both are at most `max_bytes`, and equal with one rank (then nothing moves).
  /// Collective.
  void rotate(void* buffer, uint64_t send_bytes, uint64_t recv_bytes, cudaStream_t stream);

  RotationPath path() const { return path_; }
  /// "NCCL" or "host memory (MPI)", for the backend's description.
  std::string describe() const;
  /// Bytes of device staging memory it holds (not counting what NCCL allocates for itself).
  uint64_t device_bytes() const { return staging_.bytes(); }

 private:
  /// Defined in builds with NCCL only.
  void rotate_nccl(uint8_t* buffer, uint64_t send_bytes, uint64_t recv_bytes, cudaStream_t stream);
  void rotate_host(uint8_t* buffer, uint64_t send_bytes, uint64_t recv_bytes, cudaStream_t stream);

  MpiComm& comm_;
  RotationPath path_ = RotationPath::kHost;
  uint64_t max_bytes_;
  uint64_t chunk_ = 0;                  ///< bytes a chunk, the same on every rank
  std::unique_ptr<NcclComm> nccl_;      ///< NCCL path, several ranks
  DeviceBuffer<uint8_t> staging_;       ///< NCCL path: the chunk being received
  PinnedBuffer<uint8_t> host_send_;     ///< host path: the chunk being sent
  PinnedBuffer<uint8_t> host_receive_;  ///< host path: the chunk being received
};

}  // namespace pagedw2v::dist
