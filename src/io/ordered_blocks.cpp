#include "io/ordered_blocks.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <vector>

#include "base/worker_threads.hpp"

namespace pagedw2v {

void write_ordered_blocks(AtomicFile& out, uint64_t blocks, uint32_t threads,
                          const std::function<void(uint64_t, std::string&)>& make) {
  threads = static_cast<uint32_t>(std::clamp<uint64_t>(threads, 1, blocks + 1));
  if (threads == 1) {
    std::string bytes;
    for (uint64_t b = 0; b < blocks; ++b) {
      bytes.clear();
      make(b, bytes);
      out.write(bytes);
    }
    return;
  }
  const uint32_t makers = threads - 1;
  const uint64_t window = uint64_t{2} * makers;
  // Slot b % window holds block b once made; `made[slot]` says which block it holds (or none).
  constexpr uint64_t kNone = ~uint64_t{0};
  std::vector<std::string> slots(window);
  std::vector<uint64_t> made(window, kNone);
  std::mutex mutex;
  std::condition_variable changed;
  uint64_t written = 0;  // blocks written so far
  bool failed = false;
  std::exception_ptr error;
  std::atomic<uint64_t> next{0};
  auto fail = [&](std::exception_ptr e) {
    const std::lock_guard<std::mutex> lock(mutex);
    if (!error) error = e;
    failed = true;
    changed.notify_all();
  };
  run_workers(threads, [&](uint32_t k) {
    if (k == 0) {
      for (uint64_t b = 0; b < blocks; ++b) {
        const uint64_t slot = b % window;
        {
          std::unique_lock<std::mutex> lock(mutex);
          changed.wait(lock, [&] { return failed || made[slot] == b; });
          if (failed) return;
        }
        try {
          out.write(slots[slot]);
        } catch (...) {
          fail(std::current_exception());
          return;
        }
        const std::lock_guard<std::mutex> lock(mutex);
        made[slot] = kNone;
        written = b + 1;
        changed.notify_all();
      }
      return;
    }
    for (uint64_t b = next++; b < blocks; b = next++) {
      const uint64_t slot = b % window;
      {
        std::unique_lock<std::mutex> lock(mutex);
        changed.wait(lock, [&] { return failed || b < written + window; });
        if (failed) return;
      }
      try {
        slots[slot].clear();
        make(b, slots[slot]);
      } catch (...) {
        fail(std::current_exception());
        return;
      }
      const std::lock_guard<std::mutex> lock(mutex);
      made[slot] = b;
      changed.notify_all();
    }
  });
  if (error) std::rethrow_exception(error);
}

}  // namespace pagedw2v
