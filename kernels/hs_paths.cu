#include "kernels/hs_paths.hpp"

#include <algorithm>

#include "kernels/cuda_check.hpp"
#include "kernels/device_limits.hpp"
#include "model/huffman.hpp"

namespace pagedw2v {
namespace {

constexpr int kThreads = 256;

unsigned grid_for(uint64_t items) {
  const int sms = detail::device_limits().sms;
  const uint64_t want = (items + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::max<uint64_t>(1, std::min<uint64_t>(want, uint64_t(sms) * 16)));
}

// Thread mapping: one thread per token (grid-stride), walking its word's path up the links, at
// most kMaxCodeLength (40) nodes: paths are short and their lengths differ little among the
// frequent words that make most tokens, so a thread per node would add an index search and save
// little. Writes need no atomics: every writer of a mark or a map entry stores the same value.

__global__ void mark_paths_kernel(const uint32_t* __restrict__ tokens, uint64_t n,
                                  const uint32_t* __restrict__ word_links,
                                  const uint32_t* __restrict__ node_links, uint32_t hot,
                                  uint8_t* __restrict__ marks) {
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += uint64_t{gridDim.x} * blockDim.x) {
    for (uint32_t link = word_links[tokens[i]]; link != kHuffmanRootLink;) {
      const uint32_t r = link & kHuffmanLinkRow;
      // Rows fall towards the root: every node above a hot one is hot.
      if (r < hot) break;
      marks[r] = 1;
      link = node_links[r];
    }
  }
}

__global__ void map_paths_kernel(const uint32_t* __restrict__ tokens, uint64_t n,
                                 const uint32_t* __restrict__ word_links,
                                 const uint32_t* __restrict__ node_links, uint32_t hot,
                                 const uint32_t* __restrict__ where,
                                 uint32_t* __restrict__ node_rows) {
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += uint64_t{gridDim.x} * blockDim.x) {
    for (uint32_t link = word_links[tokens[i]]; link != kHuffmanRootLink;) {
      const uint32_t r = link & kHuffmanLinkRow;
      node_rows[r] = r < hot ? r : where[r];
      link = node_links[r];
    }
  }
}

}  // namespace

void launch_mark_cold_paths(const uint32_t* tokens, uint64_t n, const uint32_t* word_links,
                            const uint32_t* node_links, uint32_t hot, uint8_t* marks,
                            cudaStream_t stream) {
  if (n == 0) return;
  mark_paths_kernel<<<grid_for(n), kThreads, 0, stream>>>(tokens, n, word_links, node_links, hot,
                                                          marks);
  PAGEDW2V_CUDA_CHECK_LAUNCH();
}

void launch_map_paths(const uint32_t* tokens, uint64_t n, const uint32_t* word_links,
                      const uint32_t* node_links, uint32_t hot, const uint32_t* where,
                      uint32_t* node_rows, cudaStream_t stream) {
  if (n == 0) return;
  map_paths_kernel<<<grid_for(n), kThreads, 0, stream>>>(tokens, n, word_links, node_links, hot,
                                                         where, node_rows);
  PAGEDW2V_CUDA_CHECK_LAUNCH();
}

}  // namespace pagedw2v
