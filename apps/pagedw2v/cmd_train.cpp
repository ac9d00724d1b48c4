// `pagedw2v train`: flags and TOML into one Config, then the library's run_training().
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cxxopts.hpp>
#include <iostream>

#include <unistd.h>

#include "base/atomic_file.hpp"
#include "base/error.hpp"
#include "cli.hpp"
#include "commands.hpp"
#include "config/config.hpp"
#include "dist/ranks.hpp"
#include "train/run_plan.hpp"
#include "train/trainer.hpp"
#include "train_setup.hpp"

namespace pagedw2v::app {
namespace {

std::atomic<int> g_stop_signal{0};
std::atomic<int> g_stop_count{0};

extern "C" void on_stop_signal(int sig) {
  // The first signal asks for a stop at the next safe point, with a checkpoint. A second one
  // while that checkpoint is being written only says that it is awaited; a third removes the
  // temporary files being written (a checkpoint's, the export's) and ends the process the
  // default way, unless the output set is being moved into place (it then completes).
  const int count = g_stop_count.fetch_add(1) + 1;
  int expected = 0;
  g_stop_signal.compare_exchange_strong(expected, sig);
  if (count == 2) {
    static const char kNote[] =
        "pagedw2v: writing the checkpoint before stopping; signal again to stop at once\n";
    const ssize_t ignored = ::write(STDERR_FILENO, kNote, sizeof kNote - 1);
    (void)ignored;
  } else if (count >= 3) {
    if (!remove_own_temps_now()) return;
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
}

}  // namespace

int cmd_train(int argc, char** argv) {
  cxxopts::Options options("pagedw2v train", "Train word vectors from a corpus file.");
  options.custom_help("--corpus FILE... --output DIR [--config FILE.toml] [options]");
  options.add_options()("config", "TOML file with any of the options below (flags win)",
                        cxxopts::value<std::string>())("h,help", "print this help");
  add_train_options(options, [](const std::string&) { return false; });

  std::vector<std::string> arg_text = gather_corpus_inputs(argc, argv);
  std::vector<char*> arg_ptrs;
  for (std::string& a : arg_text) arg_ptrs.push_back(a.data());
  cxxopts::ParseResult args;
  if (!parse_command_line(options, static_cast<int>(arg_ptrs.size()), arg_ptrs.data(), &args)) {
    return 0;
  }

  Config config;
  if (args.count("config")) apply_toml_file(config, args["config"].as<std::string>());
  apply_train_flags(config, args);
  // Every core to every rank would oversubscribe the host: the ranks on it share its cores.
  if (dist::launched_with_ranks() && config.given.count("threads") == 0 && !config.deterministic) {
    config.threads = dist::default_threads_per_rank();
  }
  // A GPU each, chosen before anything starts CUDA.
  dist::choose_gpu_of_local_rank();
  dist::limit_gpu_queues();
  // The one device query of this process: the settings print from it and the run plans with it.
  const DeviceFacts device = query_run_device(config);
  prepare_training(config, device, args.count("config") ? args["config"].as<std::string>() : "",
                   dist::launch_rank() == 0 ? stderr : nullptr);
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  // A closed terminal stops the run as Ctrl-C does, with a checkpoint; under nohup it stays
  // ignored.
  struct sigaction hangup {};
  if (::sigaction(SIGHUP, nullptr, &hangup) == 0 && hangup.sa_handler != SIG_IGN) {
    std::signal(SIGHUP, on_stop_signal);
  }
  // Under mpirun with several ranks, every rank runs this; an error on one rank ends them all
  // (the others may be waiting on it), and a stop on a signal ends each one quietly but rank 0.
  const std::unique_ptr<dist::Ranks> ranks = dist::join_ranks(&g_stop_signal, config.output);
  if (!ranks) {
    run_training(config, stderr, &g_stop_signal, nullptr, &device);
    return 0;
  }
  try {
    run_training(config, stderr, &g_stop_signal, ranks.get(), &device);
  } catch (const Interrupted& e) {
    if (ranks->rank() == 0) throw;
    return 128 + e.signal();
  } catch (const UsageError& e) {
    dist::abort_job(*ranks, e.what(), 2);
  } catch (const std::bad_alloc&) {
    dist::abort_job(*ranks, "out of memory", 1);
  } catch (const std::exception& e) {
    dist::abort_job(*ranks, e.what(), 1);
  }
  return 0;
}

}  // namespace pagedw2v::app
