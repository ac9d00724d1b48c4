#include "base/worker_threads.hpp"

#include <condition_variable>
#include <exception>
#include <mutex>
#include <new>
#include <string>
#include <system_error>
#include <vector>

#include "base/error.hpp"

namespace pagedw2v {

void run_workers(uint32_t n, const std::function<void(uint32_t)>& work,
                 const ThreadStarter& start) {
  std::exception_ptr failure;
  std::mutex failure_mutex;
  // Threads wait until every one has started, so that a failed start leaves no work half done.
  std::mutex gate_mutex;
  std::condition_variable gate;
  enum class Gate { kWait, kGo, kCancel } state = Gate::kWait;
  auto guarded = [&](uint32_t t) {
    try {
      if (t > 0) {
        std::unique_lock<std::mutex> lock(gate_mutex);
        gate.wait(lock, [&] { return state != Gate::kWait; });
        if (state == Gate::kCancel) return;
      }
      work(t);
    } catch (...) {
      const std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
    }
  };

  std::vector<std::thread> pool;
  std::string start_error;
  try {
    pool.reserve(n > 0 ? n - 1 : 0);
    for (uint32_t t = 1; t < n; ++t) {
      std::function<void()> body = [&guarded, t] { guarded(t); };
      try {
        pool.push_back(start ? start(std::move(body)) : std::thread(std::move(body)));
      } catch (const std::system_error& e) {
        start_error = "cannot start thread " + std::to_string(t + 1) + " of " + std::to_string(n) +
                      ": " + e.code().message();
        break;
      }
    }
  } catch (const std::bad_alloc&) {
    start_error = "not enough memory to start " + std::to_string(n) + " threads";
  }
  {
    const std::lock_guard<std::mutex> lock(gate_mutex);
    state = start_error.empty() ? Gate::kGo : Gate::kCancel;
  }
  gate.notify_all();
  if (start_error.empty() && n > 0) guarded(0);
  for (std::thread& th : pool) {
    if (th.joinable()) th.join();
  }
  if (!start_error.empty()) throw Error(start_error);
  if (failure) {
    try {
      std::rethrow_exception(failure);
    } catch (const std::bad_alloc&) {
      throw Error("not enough memory in a worker thread");
    }
  }
}

}  // namespace pagedw2v
