// `pagedw2v bench train`: the training flags of `train` plus --repeat or --synthetic, then
// run_train_bench().
// `pagedw2v bench transfer`: the shape of SpeedTorch's benchmark, then run_transfer_bench()
// (CUDA builds only).
// `pagedw2v bench synthetic`: the corpus of `bench train --synthetic` written as files.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cxxopts.hpp>
#include <exception>
#include <filesystem>
#include <iostream>
#include <limits>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "bench/ingest_bench.hpp"
#include "bench/synthetic_corpus.hpp"
#include "bench/train_bench.hpp"
#ifdef PAGEDW2V_HAVE_TRANSFER_BENCH
#include "bench/transfer_bench.hpp"
#endif
#include "base/error.hpp"
#include "cli.hpp"
#include "commands.hpp"
#include "config/config.hpp"
#include "dist/ranks.hpp"

namespace pagedw2v::app {

namespace {

constexpr const char* kBenchUsage =
    "usage: `pagedw2v bench train --corpus FILE [--repeat N] [--device cuda|cpu]`, "
    "`bench train --synthetic VOCAB,WORDS,ZIPF [--device cuda|cpu]` or "
    "`bench transfer [--rows N] [--dim D] [--table-rows N]`, `bench ingest --corpus FILE...` or "
    "`bench synthetic --synthetic VOCAB,WORDS,ZIPF --output DIR`";

/// "0,0.5,0.75" as numbers in [0, 1]; "none" or "" as no numbers.
std::vector<double> parse_shares(const std::string& text) {
  std::vector<double> shares;
  if (text.empty() || text == "none") return shares;
  size_t at = 0;
  for (;;) {
    const size_t comma = text.find(',', at);
    const std::string item = text.substr(at, comma == std::string::npos ? comma : comma - at);
    size_t used = 0;
    double v = -1;
    try {
      v = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size() || !(v >= 0.0 && v <= 1.0)) {
      throw UsageError("--hybrid takes shares in [0, 1] separated by commas (or none), not '" +
                       text + "'");
    }
    shares.push_back(v);
    if (comma == std::string::npos) return shares;
    at = comma + 1;
  }
}

int cmd_bench_transfer(int argc, char** argv) {
  cxxopts::Options options("pagedw2v bench transfer",
                           "Time moving random rows between a pinned host table and the GPU, "
                           "each way: the PCIe floor, naive methods, ours and hybrids of ours "
                           "with host threads and DMA.");
  options.add_options()("rows", "rows moved per transfer",
                        cxxopts::value<uint32_t>()->default_value("131072"))(
      "dim", "floats per row", cxxopts::value<uint32_t>()->default_value("128"))(
      "table-rows", "rows of the pinned host table",
      cxxopts::value<uint64_t>()->default_value("10000000"))(
      "reps", "timed repetitions (the median is printed)",
      cxxopts::value<uint32_t>()->default_value("30"))(
      "warmup", "untimed repetitions first", cxxopts::value<uint32_t>()->default_value("3"))(
      "threads", "threads of the host gathers and scatters, naive and hybrid (0: up to 16)",
      cxxopts::value<uint32_t>()->default_value("0"))(
      "hybrid",
      "shares of the rows the hybrid method moves by the zero-copy kernel, the rest by host "
      "threads and DMA at the same time: a comma-separated list in [0, 1], or none",
      cxxopts::value<std::string>()->default_value("0,0.5,0.6,0.7,0.8"))(
      "hybrid-chunks", "chunks of the hybrid's host part, each one DMA",
      cxxopts::value<uint32_t>()->default_value("16"))(
      "slab-mib", "pin the table in slabs of this many MiB (0: in one piece)",
      cxxopts::value<uint64_t>()->default_value("1024"))(
      "pin-method",
      "register (mmap + cudaHostRegister per slab), hostalloc (cudaHostAlloc) or pool (a "
      "host-located CUDA memory pool)",
      cxxopts::value<std::string>()->default_value("register"))(
      "seed", "seed of the ids", cxxopts::value<uint64_t>()->default_value("1"))(
      "tuning", "also time our kernels at other launch shapes")("h,help", "print this help");
  cxxopts::ParseResult args;
  if (!parse_command_line(options, argc, argv, &args)) return 0;
  const std::string method = args["pin-method"].as<std::string>();
  if (method != "register" && method != "hostalloc" && method != "pool") {
    throw UsageError("--pin-method must be register, hostalloc or pool, not '" + method + "'");
  }
  const std::vector<double> shares = parse_shares(args["hybrid"].as<std::string>());
#ifdef PAGEDW2V_HAVE_TRANSFER_BENCH
  TransferBenchOptions bench;
  bench.rows = args["rows"].as<uint32_t>();
  bench.dim = args["dim"].as<uint32_t>();
  bench.table_rows = args["table-rows"].as<uint64_t>();
  bench.reps = args["reps"].as<uint32_t>();
  bench.warmup = args["warmup"].as<uint32_t>();
  bench.host_threads = args["threads"].as<uint32_t>();
  bench.seed = args["seed"].as<uint64_t>();
  bench.tuning = args.count("tuning") > 0;
  bench.hybrid_fractions = shares;
  bench.hybrid_chunks = args["hybrid-chunks"].as<uint32_t>();
  bench.pin.slab_bytes = args["slab-mib"].as<uint64_t>() << 20;
  bench.pin.method = method == "hostalloc" ? PinMethod::kHostAlloc
                     : method == "pool"    ? PinMethod::kHostPool
                                           : PinMethod::kRegisterSlabs;
  run_transfer_bench(bench, stdout);
  return 0;
#else
  throw Error("bench transfer needs the CUDA backend; this pagedw2v was built without it");
#endif
}

int cmd_bench_ingest(int argc, char** argv) {
  cxxopts::Options options("pagedw2v bench ingest",
                           "Time reading a corpus into a vocabulary and encoding it.");
  options.custom_help("--corpus FILE... [--threads N] [--repeat N] [--min-count N] [--lowercase]");
  options.add_options()("repeat", "timed runs (the fastest is printed)",
                        cxxopts::value<uint32_t>()->default_value("3"))(
      "reference", "also time the one-thread reference count and encoding")("h,help",
                                                                            "print this help");
  add_train_options(options, [](const std::string& name) {
    return name != "corpus" && name != "threads" && name != "min-count" && name != "max-vocab" &&
           name != "lowercase";
  });
  std::vector<std::string> arg_text = gather_corpus_inputs(argc, argv);
  std::vector<char*> arg_ptrs;
  for (std::string& a : arg_text) arg_ptrs.push_back(a.data());
  cxxopts::ParseResult args;
  if (!parse_command_line(options, static_cast<int>(arg_ptrs.size()), arg_ptrs.data(), &args)) {
    return 0;
  }
  IngestBenchOptions bench;
  apply_train_flags(bench.config, args);
  bench.repeat = args["repeat"].as<uint32_t>();
  bench.reference = args.count("reference") > 0;
  run_ingest_bench(bench, stdout);
  return 0;
}

int cmd_bench_synthetic(int argc, char** argv) {
  cxxopts::Options options(
      "pagedw2v bench synthetic",
      "Write the corpus and vocabulary of `bench train --synthetic` as files that `train` reads "
      "(and mpirun can run over ranks).");
  options.custom_help("--synthetic VOCAB,WORDS,ZIPF --output DIR [--seed N] [--threads N]");
  options.add_options()("synthetic", "VOCAB,WORDS,ZIPF, as bench train takes it",
                        cxxopts::value<std::string>())(
      "output", "directory for corpus.txt and vocab.tsv (made when missing; neither may exist)",
      cxxopts::value<std::string>())(
      "seed", "the corpus's seed (bench train's --seed draws the same tokens)",
      cxxopts::value<uint64_t>()->default_value("1"))(
      "threads", "threads drawing it (0: every core; the tokens do not depend on it)",
      cxxopts::value<uint32_t>()->default_value("0"))("h,help", "print this help");
  cxxopts::ParseResult args;
  if (!parse_command_line(options, argc, argv, &args)) return 0;
  if (args.count("synthetic") == 0 || args.count("output") == 0) {
    throw UsageError("bench synthetic needs --synthetic VOCAB,WORDS,ZIPF and --output DIR");
  }
  const SyntheticSpec spec = parse_synthetic_spec(args["synthetic"].as<std::string>());
  const std::string dir = args["output"].as<std::string>();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    throw Error("cannot make the directory " + dir + (ec ? ": " + ec.message() : std::string()));
  }
  uint32_t threads = args["threads"].as<uint32_t>();
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  const std::string corpus = dir + "/corpus.txt", vocab = dir + "/vocab.tsv";
  write_synthetic_files(spec, args["seed"].as<uint64_t>(), threads, corpus, vocab);
  std::printf(
      "wrote %s (%llu words, %llu a line) and %s (%llu words with their expected counts)\n"
      "train on them: pagedw2v train --corpus %s --vocab %s --min-count 1 --output RUN ...\n",
      corpus.c_str(), static_cast<unsigned long long>(spec.words),
      static_cast<unsigned long long>(kSyntheticSentenceLength), vocab.c_str(),
      static_cast<unsigned long long>(spec.vocab), corpus.c_str(), vocab.c_str());
  return 0;
}

}  // namespace

int cmd_bench(int argc, char** argv) {
  if (argc >= 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::printf(
        "%s\n\n`pagedw2v bench train --help` and `pagedw2v bench transfer --help` list the "
        "options of each.\n",
        kBenchUsage);
    return 0;
  }
  if (argc >= 2 && std::string(argv[1]) == "transfer")
    return cmd_bench_transfer(argc - 1, argv + 1);
  if (argc >= 2 && std::string(argv[1]) == "ingest") return cmd_bench_ingest(argc - 1, argv + 1);
  if (argc >= 2 && std::string(argv[1]) == "synthetic") {
    return cmd_bench_synthetic(argc - 1, argv + 1);
  }
  if (argc < 2 || std::string(argv[1]) != "train") throw UsageError(kBenchUsage);
  cxxopts::Options options("pagedw2v bench train",
                           "Time training on a corpus: words/s, time split, GPU memory, table "
                           "placement and paging, host memory.");
  options.custom_help(
      "--corpus FILE [--repeat N] | --synthetic VOCAB,WORDS,ZIPF; [--device cuda|cpu] [train "
      "options]");
  options.add_options()("repeat", "train on the corpus repeated N times",
                        cxxopts::value<uint32_t>()->default_value("1"))(
      "synthetic",
      "no corpus file: VOCAB words w0, w1, ... with Zipf's expected counts and WORDS tokens "
      "drawn from Zipf(ZIPF), seeded by --seed, e.g. 10000000,200000000,1.0",
      cxxopts::value<std::string>())(
      "stream", "CUDA: stream the corpus in chunks even when it fits on the GPU")(
      "chunk-tokens", "CUDA: tokens per streamed chunk",
      cxxopts::value<uint64_t>()->default_value(std::to_string(uint64_t{32} << 20)))(
      "paging-sms",
      "CUDA, paged tables: multiprocessors the training kernel leaves to the paging kernels "
      "(default 4)",
      cxxopts::value<uint32_t>())(
      "move-blocks",
      "CUDA, paged tables: blocks of 8 warps every piece's row moves take (default: three on "
      "each multiprocessor left to them, more for pieces that bring many rows)",
      cxxopts::value<uint32_t>())(
      "cache-rows",
      "CUDA, paged tables: slots of the GPU's row cache (the rest of the budget holds the most "
      "frequent rows; default: a third of what fits)",
      cxxopts::value<uint64_t>())(
      "hot-rows",
      "CUDA, paged tables: rows kept on the GPU for the whole run, the most frequent (default: "
      "what the budget holds beside the cache)",
      cxxopts::value<uint64_t>())(
      "sgd-piece-words", "CUDA, paged tables with sgd: the longest piece in words (default 262144)",
      cxxopts::value<uint64_t>())(
      "cut-threads",
      "CUDA, paged tables, pieces cut on the host: threads that cut them (default: a quarter of "
      "the host's, 1 to 4)",
      cxxopts::value<uint32_t>())(
      "no-cut-ahead",
      "CUDA, paged tables, pieces cut on the host: do not cut the next span's pieces while a "
      "span trains")(
      "paging-trace",
      "CUDA, paged tables: append each piece's device and host times to FILE (one line a piece)",
      cxxopts::value<std::string>())(
      "piece-cuts",
      "CUDA, paged tables with sgd: where pieces are cut: \"host\" (ahead, by their cold "
      "rows), \"device\" (a try at a time), \"auto\" (host for a row cache of at most 16,384 "
      "slots or one that would cut the largest pieces short; the default)",
      cxxopts::value<std::string>())(
      "item-tokens",
      "CUDA: positions per work item of the training kernel (default: sized per launch; "
      "\"sentence\": a sentence each)",
      cxxopts::value<std::string>())(
      "table-skew",
      "CUDA: bytes between the end of the input vectors and the start of the output vectors "
      "on the GPU (default: the backend's)",
      cxxopts::value<uint64_t>())(
      "table-layout",
      "CUDA: how the GPU holds each pair of tables: \"apart\" (one after the other) or "
      "\"interleaved\" (a word's output row after its input row) (default: the backend's)",
      cxxopts::value<std::string>())(
      "parts",
      "CUDA, skip-gram sgd: time what rank 0 of N GPU ranks trains on partitioned tables, its "
      "output parts brought from host memory in turn (untimed)",
      cxxopts::value<uint32_t>())(
      "replicas",
      "CUDA, skip-gram sgd: time what rank 0 of N GPU ranks on replicated tables does (its "
      "share of every span and the sums' passes on its GPU; the all-reduce not counted)",
      cxxopts::value<uint32_t>())("h,help", "print this help");
  // A timing has nothing to export, and --deterministic's single thread or warp is no speed.
  add_train_options(options, [](const std::string& name) {
    return name == "output" || name == "format" || name == "save-context" ||
           name == "deterministic";
  });
  cxxopts::ParseResult args;
  if (!parse_command_line(options, argc - 1, argv + 1, &args)) return 0;
  TrainBenchOptions bench;
  apply_train_flags(bench.config, args);
  bench.repeat = args["repeat"].as<uint32_t>();
  if (args.count("synthetic")) {
    bench.synthetic = parse_synthetic_spec(args["synthetic"].as<std::string>());
  }
  bench.force_stream = args.count("stream") > 0;
  bench.chunk_tokens = args["chunk-tokens"].as<uint64_t>();
  if (args.count("move-blocks")) {
    bench.move_blocks = std::min<uint32_t>(args["move-blocks"].as<uint32_t>(), 65535);
  }
  if (args.count("cache-rows")) bench.cache_rows = args["cache-rows"].as<uint64_t>();
  if (args.count("hot-rows")) bench.hot_rows = args["hot-rows"].as<uint64_t>();
  if (args.count("sgd-piece-words")) {
    bench.sgd_piece_words = args["sgd-piece-words"].as<uint64_t>();
  }
  if (args.count("cut-threads")) {
    bench.cut_threads = std::min<uint32_t>(args["cut-threads"].as<uint32_t>(), 64);
  }
  bench.cut_ahead = args.count("no-cut-ahead") == 0;
  if (args.count("paging-trace")) bench.paging_trace = args["paging-trace"].as<std::string>();
  if (args.count("piece-cuts")) {
    const std::string v = args["piece-cuts"].as<std::string>();
    if (v != "auto" && v != "host" && v != "device") {
      throw UsageError("--piece-cuts: expected auto, host or device, got \"" + v + "\"");
    }
    bench.piece_cuts = v == "host" ? 1 : v == "device" ? 2 : 0;
  }
  if (args.count("item-tokens")) {
    const std::string v = args["item-tokens"].as<std::string>();
    constexpr uint32_t kSentence = std::numeric_limits<uint32_t>::max();
    char* end = nullptr;
    const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
    if (v != "sentence" && (v.empty() || *end != '\0' || n == 0 || n >= kSentence)) {
      throw UsageError("--item-tokens: expected a positive number or \"sentence\", got \"" + v +
                       "\"");
    }
    bench.item_tokens = v == "sentence" ? kSentence : static_cast<uint32_t>(n);
  }
  if (args.count("table-skew")) {
    bench.table_skew = static_cast<int64_t>(
        std::min<uint64_t>(args["table-skew"].as<uint64_t>(), uint64_t{1} << 40));
  }
  if (args.count("table-layout")) {
    const std::string v = args["table-layout"].as<std::string>();
    if (v != "apart" && v != "interleaved") {
      throw UsageError("--table-layout: expected apart or interleaved, got \"" + v + "\"");
    }
    bench.table_layout = v == "interleaved" ? 2 : 1;
  }
  if (args.count("paging-sms")) {
    bench.paging_sms =
        static_cast<int>(std::min<uint32_t>(args["paging-sms"].as<uint32_t>(), 1024));
  }
  if (args.count("parts")) bench.parts = args["parts"].as<uint32_t>();
  if (args.count("replicas")) bench.replicas = args["replicas"].as<uint32_t>();
  dist::limit_gpu_queues();  // as `train` runs
  run_train_bench(bench, stdout);
  return 0;
}

}  // namespace pagedw2v::app
