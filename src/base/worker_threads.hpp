#pragma once
/// @file worker_threads.hpp
/// Running one function on several threads so that a failure becomes one exception: a thread
/// that cannot be started, or a worker that throws (out of memory included), never leaves a
/// joinable std::thread behind (which would end the process in std::terminate).

#include <cstdint>
#include <functional>
#include <thread>

namespace pagedw2v {

/// Starts a thread running its argument (std::thread by default; tests make it fail).
using ThreadStarter = std::function<std::thread(std::function<void()>)>;

/// Runs `work(t)` for t = 0 … n-1, `work(0)` on the calling thread and the others on threads of
/// their own, and returns when all have returned. No call begins before every thread has
/// started: when a thread cannot be started, none runs, those started are joined and
/// Error("cannot start thread K of N: reason") is thrown; when workers throw, the
/// first exception is rethrown after all have ended (std::bad_alloc as Error "not enough memory
/// …"). `work` must stop soon by itself once one of its calls fails (e.g. through shared
/// state); the others are not interrupted.
void run_workers(uint32_t n, const std::function<void(uint32_t)>& work,
                 const ThreadStarter& start = {});

}  // namespace pagedw2v
