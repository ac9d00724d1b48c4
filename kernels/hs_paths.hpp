#pragma once
/// @file hs_paths.hpp
/// The paging steps of hierarchical softmax's inner nodes (kernels/paging.hpp names the steps):
/// with --hs the inner nodes of the Huffman tree are rows of the output table (model.hpp), inner
/// node row r held with id r's rows, so they page, cache and move as the ids' rows do. A piece
/// reads the nodes of the paths of its tokens' words: collect them (mark_cold_paths, beside
/// mark_cold_ids of the tokens), and once the piece's rows are cached, map each of them to its
/// device row (map_paths) into a table the training launch reads (SgnsArgs::hs_node_rows).
///
/// The tree is the device copy of huffman_links' array (model/huffman.hpp): word w's link is
/// word_links[w], inner-node row r's node_links[r], each its parent's row and its code; a path is
/// walked up from the word's link to kHuffmanRootLink, its rows falling towards the root.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace pagedw2v {

/// marks[r] = 1 for every inner-node row r ≥ hot of the path of the word of every token
/// tokens[0 … n) (a cold row the piece touches). Tokens repeat words: every writer stores 1.
void launch_mark_cold_paths(const uint32_t* tokens, uint64_t n, const uint32_t* word_links,
                            const uint32_t* node_links, uint32_t hot, uint8_t* marks,
                            cudaStream_t stream);

/// node_rows[r] = r < hot ? r : where[r] for every inner-node row r of the path of the word of
/// every token tokens[0 … n): the device row of each node the piece reads (every one of them is
/// cached once the piece's rows are taken). Entries for rows the piece does not read are left as
/// they are. Tokens repeat words: every writer of an entry stores the same value.
void launch_map_paths(const uint32_t* tokens, uint64_t n, const uint32_t* word_links,
                      const uint32_t* node_links, uint32_t hot, const uint32_t* where,
                      uint32_t* node_rows, cudaStream_t stream);

}  // namespace pagedw2v
