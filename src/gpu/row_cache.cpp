#include "gpu/row_cache.hpp"

#include <algorithm>

#include "gpu/device_tables.hpp"
#include "gpu/gpu_plan.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/hs_paths.hpp"

namespace pagedw2v {

RowCache::RowCache(uint64_t rows, uint64_t hot, uint64_t slots, uint64_t max_list,
                   size_t scratch_bytes, bool listed, cudaStream_t stream)
    : rows_(rows),
      hot_(hot),
      slots_(slots),
      max_list_(max_list),
      select_temp_bytes_(listed ? 0 : scratch_bytes) {
  where_ = DeviceBuffer<uint32_t>(rows_, "the row slots");
  slot_id_ = DeviceBuffer<uint32_t>(slots_, "the cache's ids");
  slot_use_ = DeviceBuffer<uint32_t>(slots_, "the cache's use");
  free_ = DeviceBuffer<uint32_t>(slots_, "free cache slots");
  hand_ = DeviceBuffer<uint32_t>(2, "the cache's clock hand");
  if (!listed) {
    marks_ = DeviceBuffer<uint8_t>(rows_, "the row marks");
    flags_ = DeviceBuffer<uint8_t>(std::max(slots_, max_list_), "cache flags");
    zero_async(marks_, stream);
    order_keys_ = DeviceBuffer<uint32_t>(max_list_, "the slot order");
    order_slots_ = DeviceBuffer<uint32_t>(max_list_, "the slot order");
    select_temp_ = DeviceBuffer<unsigned char>(std::max<size_t>(select_temp_bytes_, 1), "scratch");
  }
  counters_ = DeviceBuffer<PagingCounters>(1, "paging counters");
  PAGEDW2V_CUDA_TRY(cudaMemsetAsync(counters_.data(), 0, sizeof(PagingCounters), stream));
}

size_t RowCache::bytes() const {
  return where_.bytes() + marks_.bytes() + slot_id_.bytes() + slot_use_.bytes() + flags_.bytes() +
         free_.bytes() + hand_.bytes() + order_keys_.bytes() + order_slots_.bytes() +
         select_temp_.bytes() + counters_.bytes();
}

void RowCache::mark_cold(const uint32_t* ids, uint64_t n, cudaStream_t stream) {
  launch_mark_cold_ids(ids, n, static_cast<uint32_t>(hot_), marks_.data(), nullptr, stream);
}

void RowCache::mark_cold_paths(const uint32_t* tokens, uint64_t n, const uint32_t* word_links,
                               const uint32_t* node_links, cudaStream_t stream) {
  launch_mark_cold_paths(tokens, n, word_links, node_links, static_cast<uint32_t>(hot_),
                         marks_.data(), stream);
}

void RowCache::map_paths(const uint32_t* tokens, uint64_t n, const uint32_t* word_links,
                         const uint32_t* node_links, uint32_t* node_rows, cudaStream_t stream) {
  launch_map_paths(tokens, n, word_links, node_links, static_cast<uint32_t>(hot_), where_.data(),
                   node_rows, stream);
}

void RowCache::find(uint32_t* list, uint32_t* fresh, uint32_t* counts, uint64_t number,
                    uint32_t depth, cudaStream_t stream) {
  const uint32_t slots = static_cast<uint32_t>(slots_);
  const uint32_t* hand = hand_.data() + number % 2;
  launch_select_marked_ids(marks_.data(), rows_, list, counts, select_temp_.data(),
                           select_temp_bytes_, stream);
  launch_flag_new_ids(list, counts, static_cast<uint32_t>(max_list_), where_.data(), flags_.data(),
                      stream);
  launch_select_flagged(list, flags_.data(), max_list_, fresh, counts + 1, select_temp_.data(),
                        select_temp_bytes_, stream);
  launch_flag_free_slots(slot_id_.data(), slot_use_.data(), marks_.data(), slots, hand, number,
                         depth, flags_.data(), stream);
  launch_select_marked_ids(flags_.data(), slots, free_.data(), counts + 2, select_temp_.data(),
                           select_temp_bytes_, stream);
}

void RowCache::clear_marks(const uint32_t* list, uint32_t n, cudaStream_t stream) {
  launch_clear_marks(list, n, marks_.data(), stream);
}

void RowCache::take(const uint32_t* fresh, uint32_t fresh_n, const uint32_t* list, uint32_t cold,
                    uint64_t number, uint32_t* evicted, uint32_t* fresh_rows, cudaStream_t stream) {
  const uint32_t hot = static_cast<uint32_t>(hot_);
  // The slots the new rows take, by the ids they hold, so that the rows written back ascend
  // as the new ones do; its lists live in `evicted` and `fresh_rows` until install.
  const uint32_t* taken = launch_order_free_slots(
      free_.data(), fresh_n, static_cast<uint32_t>(slots_), hand_.data() + number % 2,
      hand_.data() + (number + 1) % 2, slot_id_.data(), static_cast<uint32_t>(rows_),
      order_key_bits(rows_), evicted, order_keys_.data(), fresh_rows, order_slots_.data(),
      select_temp_.data(), select_temp_bytes_, stream);
  launch_install_rows(fresh, fresh_n, taken, hot, slot_id_.data(), where_.data(), evicted,
                      fresh_rows, &counters_.data()->to_host, stream);
  launch_claim_rows(list, cold, where_.data(), hot, number, slot_use_.data(), marks_.data(),
                    stream);
}

void RowCache::take_listed(const uint32_t* list, uint32_t n, uint64_t number, uint32_t depth,
                           const uint32_t* tokens, uint64_t tokens_n, uint32_t* token_rows,
                           const uint32_t* pool, uint64_t pool_n, uint32_t* pool_rows,
                           uint32_t* fresh, uint32_t* fresh_rows, uint32_t* evicted,
                           cudaStream_t stream) {
  TakeListedArgs a;
  a.list = list;
  a.n = n;
  a.hot = static_cast<uint32_t>(hot_);
  a.slots = static_cast<uint32_t>(slots_);
  a.number = number;
  a.depth = depth;
  a.where = where_.data();
  a.slot_id = slot_id_.data();
  a.slot_use = slot_use_.data();
  a.hand = hand_.data();
  a.fresh = fresh;
  a.fresh_rows = fresh_rows;
  a.evicted = evicted;
  a.ids[0] = tokens;
  a.ids_n[0] = tokens_n;
  a.rows[0] = token_rows;
  a.ids[1] = pool;
  a.ids_n[1] = pool_n;
  a.rows[1] = pool_rows;
  PagingCounters* c = counters_.data();
  a.fresh_count = &c->fresh;
  a.evictions = &c->to_host;
  a.cold_refs = &c->refs_cold;
  a.failures = &c->failures;
  launch_take_listed_rows(a, stream);
}

void RowCache::map(const uint32_t* ids, uint64_t n, uint32_t* rows, cudaStream_t stream) {
  launch_map_rows(ids, n, static_cast<uint32_t>(hot_), where_.data(), rows,
                  &counters_.data()->refs_cold, stream);
}

void RowCache::flush(MoveArgs move, uint64_t first_number, cudaStream_t stream) {
  launch_flag_used_slots(slot_id_.data(), slot_use_.data(), static_cast<uint32_t>(slots_),
                         first_number, free_.data(), &counters_.data()->to_host, stream);
  move.host_rows = free_.data();
  move.dev_rows = nullptr;
  move.n = static_cast<uint32_t>(slots_);
  launch_move_rows(MoveKind::kToHost, move, stream);
}

void RowCache::invalidate(cudaStream_t stream) {
  PAGEDW2V_CUDA_TRY(cudaMemsetAsync(where_.data(), 0xFF, where_.bytes(), stream));
  PAGEDW2V_CUDA_TRY(cudaMemsetAsync(slot_id_.data(), 0xFF, slot_id_.bytes(), stream));
  PAGEDW2V_CUDA_TRY(cudaMemsetAsync(slot_use_.data(), 0, slot_use_.bytes(), stream));
  PAGEDW2V_CUDA_TRY(cudaMemsetAsync(hand_.data(), 0, hand_.bytes(), stream));
  PAGEDW2V_CUDA_TRY(cudaStreamSynchronize(stream));
}

PagingCounters RowCache::counters() const {
  PagingCounters c{};
  PAGEDW2V_CUDA_TRY(cudaMemcpy(&c, counters_.data(), sizeof c, cudaMemcpyDeviceToHost));
  return c;
}

}  // namespace pagedw2v
