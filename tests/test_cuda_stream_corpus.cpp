// A corpus larger than --max-corpus-memory streamed to the CUDA backend: the device corpus of a
// window (chunks hold the window's sentences with corpus-wide positions, and the host window is
// not read once for_each_chunk returns); whole runs as `pagedw2v train` makes them, held whole
// and streamed, which with --deterministic give the same bits, tables resident or paged, with
// sgd or adam (whose spans are whole super-batches, refused in one line when the cap cannot hold
// one); and the host memory a streamed run saves.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "base/error.hpp"
#include "config/config.hpp"
#include "corpus/corpus.hpp"
#include "cuda_test_util.hpp"
#include "gpu/cuda_backend.hpp"
#include "gpu/device_buffer.hpp"
#include "gpu/device_corpus.hpp"
#include "gpu/gpu_plan.hpp"
#include "gpu/stream.hpp"
#include "kernels/cuda_check.hpp"
#include "model/params.hpp"
#include "test_util.hpp"
#include "train/trainer.hpp"

namespace pagedw2v {
namespace {

using testing_util::download;
using testing_util::expect_same_bits;
using testing_util::hot_rows;
using testing_util::Log;
using testing_util::peak_rss_of_run;
using testing_util::read_file;
using testing_util::TempDir;
using testing_util::write_file;

/// An encoded corpus of random ids: sentences of 1 … 40 tokens, every 50th of the longest
/// (kMaxSentenceLength), so that blocks of every shape occur.
EncodedCorpus random_corpus(uint64_t seed, uint64_t tokens) {
  std::mt19937_64 rng(seed);
  EncodedCorpus c;
  c.sentence_starts.push_back(0);
  while (c.sentence_starts.back() < tokens) {
    const uint64_t len = rng() % 50 == 0 ? kMaxSentenceLength : 1 + rng() % 40;
    c.sentence_starts.push_back(std::min(tokens, c.sentence_starts.back() + len));
  }
  c.tokens.resize(tokens);
  for (uint32_t& t : c.tokens) t = static_cast<uint32_t>(rng() % 100000);
  return c;
}

/// Blocks [first, last) of `whole` as CorpusStream::take hands them over: a window with bases.
void fill_window(const EncodedCorpus& whole, const std::vector<uint64_t>& blocks, uint64_t first,
                 uint64_t last, EncodedCorpus& window) {
  const uint64_t s0 = blocks[first], s1 = blocks[last];
  window.sentence_base = s0;
  window.token_base = whole.sentence_starts[s0];
  window.sentence_starts.assign(whole.sentence_starts.begin() + s0,
                                whole.sentence_starts.begin() + s1 + 1);
  window.tokens.assign(whole.tokens.begin() + whole.sentence_starts[s0],
                       whole.tokens.begin() + whole.sentence_starts[s1]);
}

// Each window's sentences reach the device, chunk by chunk, with corpus-wide positions; the
// window is overwritten as soon as for_each_chunk returns, before the copies made from the
// chunks on the training stream have run, and they still hold the window's contents.
TEST(DeviceCorpusWindow, ChunksHoldTheWindowAndDoNotReadItLater) {
  PAGEDW2V_REQUIRE_GPU();
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const EncodedCorpus whole = random_corpus(seed, 200000);
  const std::vector<uint64_t> blocks = make_blocks(whole, kBlockWords);
  ASSERT_GT(blocks.size(), 20u);

  EncodedCorpus window;  // empty when the device corpus is made, as in a streamed run
  DeviceCorpusOptions options;
  options.window = true;
  options.chunk_tokens = 3000;  // several chunks per window, each at least one longest sentence
  options.resident_max_bytes = size_t{1} << 30;
  DeviceCorpus corpus(window, options);
  EXPECT_FALSE(corpus.resident());
  Stream compute;

  std::mt19937_64 rng(seed);
  for (uint64_t first = 0; first + 1 < blocks.size();) {
    const uint64_t last = std::min<uint64_t>(blocks.size() - 1, first + 1 + rng() % 5);
    fill_window(whole, blocks, first, last, window);
    // Train a part of the window, as a span may: from its second block when it has several.
    const uint64_t s0 = blocks[first + (last - first > 1 ? 1 : 0)], s1 = blocks[last];
    const uint64_t t0 = whole.sentence_starts[s0], t1 = whole.sentence_starts[s1];
    DeviceBuffer<uint32_t> got_tokens(t1 - t0, "test tokens");
    DeviceBuffer<uint64_t> got_starts(s1 - s0 + 1, "test starts");
    std::vector<CorpusChunk> chunks;
    uint64_t next_sentence = s0;
    corpus.for_each_chunk(s0, s1, compute.get(), [&](const CorpusChunk& c) {
      chunks.push_back(c);
      ASSERT_LE(c.token_count, options.chunk_tokens);
      // Copies on the training stream, as a launch would read the chunk.
      const uint64_t at = whole.sentence_starts[next_sentence] - t0;
      PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(got_tokens.data() + at, c.tokens, c.token_count * 4,
                                        cudaMemcpyDeviceToDevice, compute.get()));
      PAGEDW2V_CUDA_TRY(cudaMemcpyAsync(got_starts.data() + (next_sentence - s0), c.sentence_starts,
                                        (c.sentences + 1) * 8, cudaMemcpyDeviceToDevice,
                                        compute.get()));
      next_sentence += c.sentences;
    });
    // The trainer refills the window now: nothing may read it any more.
    std::fill(window.tokens.begin(), window.tokens.end(), 0xFFFFFFFFu);
    std::fill(window.sentence_starts.begin(), window.sentence_starts.end(), ~uint64_t{0});
    compute.synchronize();

    ASSERT_EQ(next_sentence, s1);
    ASSERT_FALSE(chunks.empty());
    uint64_t sentence = s0;
    for (const CorpusChunk& c : chunks) {
      EXPECT_EQ(c.token_base, whole.sentence_starts[sentence]);
      EXPECT_EQ(c.token_count,
                whole.sentence_starts[sentence + c.sentences] - whole.sentence_starts[sentence]);
      sentence += c.sentences;
    }
    const std::vector<uint32_t> tokens = download(got_tokens);
    const std::vector<uint64_t> starts = download(got_starts);
    ASSERT_TRUE(std::equal(tokens.begin(), tokens.end(), whole.tokens.begin() + t0))
        << "blocks [" << first << ", " << last << ")";
    // Sentence starts are corpus-wide; each chunk's last entry is the next chunk's first.
    ASSERT_TRUE(std::equal(starts.begin(), starts.end(), whole.sentence_starts.begin() + s0))
        << "blocks [" << first << ", " << last << ")";
    first = last;
  }

  // Sentences outside the window are an error, not a read past it.
  fill_window(whole, blocks, 2, 4, window);
  EXPECT_THROW(corpus.for_each_chunk(
                   blocks[1], blocks[3], compute.get(),
                   [](const CorpusChunk&) { FAIL() << "trained sentences outside the window"; }),
               Error);
  EXPECT_THROW(corpus.for_each_chunk(
                   blocks[3], blocks[5], compute.get(),
                   [](const CorpusChunk&) { FAIL() << "trained sentences outside the window"; }),
               Error);
}

// A window is streamed even where the whole corpus would fit, and its chunks hold the longest
// sentence however small a chunk is asked to be.
TEST(DeviceCorpusWindow, IsNeverResidentAndItsChunksHoldTheLongestSentence) {
  PAGEDW2V_REQUIRE_GPU();
  const EncodedCorpus whole = random_corpus(7, 60000);
  const std::vector<uint64_t> blocks = make_blocks(whole, kBlockWords);
  EncodedCorpus window;
  DeviceCorpusOptions options;
  options.window = true;
  options.chunk_tokens = 10;
  options.resident_max_bytes = size_t{1} << 30;
  DeviceCorpus corpus(window, options);
  EXPECT_FALSE(corpus.resident());
  EXPECT_GE(corpus.device_bytes(), size_t{kMaxSentenceLength} * 12 * 2);
  fill_window(whole, blocks, 0, blocks.size() - 1, window);
  Stream compute;
  uint64_t sentences = 0, tokens = 0;
  corpus.for_each_chunk(0, whole.sentences(), compute.get(), [&](const CorpusChunk& c) {
    EXPECT_LE(c.token_count, uint64_t{kMaxSentenceLength});
    sentences += c.sentences;
    tokens += c.token_count;
  });
  compute.synchronize();
  EXPECT_EQ(sentences, whole.sentences());
  EXPECT_EQ(tokens, whole.size());
  // The same corpus held whole is resident under that limit.
  DeviceCorpusOptions whole_options;
  whole_options.resident_max_bytes = size_t{1} << 30;
  EXPECT_TRUE(DeviceCorpus(whole, whole_options).resident());
}

constexpr uint32_t kVocab = 6000;
constexpr uint32_t kDim = 16;
constexpr uint32_t kPool = 256;
constexpr uint64_t kBatchWords = 8192;  // two blocks
constexpr uint64_t kLongLine = 2600;    // words: cut into sentences of 1000, 1000 and 600

/// Lines of 3 … 40 words from Zipf(1) over w0 … w(kVocab − 1), every word at least once, and
/// every 100th line kLongLine words long; about `tokens` words.
std::string zipf_corpus(uint64_t seed, uint64_t tokens) {
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> ids = testing_util::zipf_ids(kVocab, tokens, rng);
  for (uint32_t i = 0; i < kVocab; ++i) ids[(uint64_t{i} * 7919) % tokens] = i;
  std::string text;
  uint64_t line = 0;
  for (size_t i = 0; i < ids.size();) {
    const uint64_t len = ++line % 100 == 0 ? kLongLine : 3 + rng() % 38;
    const size_t end = std::min<size_t>(ids.size(), i + len);
    for (; i < end; ++i) text += "w" + std::to_string(ids[i]) + (i + 1 < end ? " " : "\n");
  }
  return text;
}

/// A --gpu-memory budget with room for about `rows` rows of `optimizer`'s tables beside the fixed
/// part of a paged plan whose pieces hold at most `piece_tokens` tokens in `piece_sentences`
/// sentences (gpu_plan.cpp's paged_layout; CUB's scratch estimated, so the rows that fit may be
/// off by a thousand or so). The test checks the plan it got from the log.
uint64_t paged_budget(uint64_t piece_tokens, uint64_t piece_sentences, OptimizerKind optimizer,
                      uint64_t rows) {
  const uint64_t stride = (kDim + 3) & ~3u;
  const bool stateful = optimizer != OptimizerKind::kSgd;
  const uint64_t slot =
      stride * sizeof(float) * (2 + 2 * state_tables(optimizer) + (stateful ? 2 : 0)) +
      (stateful ? 10 : 0) + 13;
  const uint64_t pools = 2 * kPool;  // the pool periods of one piece of two blocks
  const uint64_t list = std::min<uint64_t>(kVocab, piece_tokens + pools);
  const uint64_t stage = piece_tokens * 8 + (piece_sentences + 1) * 12 + list * 16 + pools * 8 + 64;
  const uint64_t fixed =
      uint64_t{kVocab} * 9 + kPagedStages * stage + list * 16 + (uint64_t{32} << 10);
  return testing_util::with_paged_margin(fixed + rows * slot);
}

/// Rows a paged budget leaves room for, so that some rows but fewer than kVocab are hot. Held
/// whole: the cache takes a third of the rows that fit (at least two longest sentences with
/// their pool, 2 × 1256; with adam, grown to two super-batches' cold rows, counted), hot rows the
/// rest, so fewer than 1.5 × kVocab must fit; with adam, also one super-batch's rows (about
/// 3,500: two blocks' distinct ids and 512 pool entries). Streamed with adam: a super-batch's ids
/// are not counted, so the cache takes two pieces' worth of every id a piece may touch (every
/// row here, twice), and the hot rows what is left: more than 2 × kVocab must fit.
uint64_t paged_rows(OptimizerKind optimizer, bool streamed) {
  return optimizer != OptimizerKind::kSgd && streamed ? kVocab * 5 / 2 : kVocab * 5 / 6;
}

// {placement, model, negative pool (0 = none), optimizer}
using Case = std::tuple<Placement, ModelKind, uint32_t, OptimizerKind>;

class CudaStreamedRun : public ::testing::TestWithParam<Case> {
 protected:
  Config config(const TempDir& dir, uint64_t seed, const std::string& out) const {
    const auto [placement, model, pool, optimizer] = GetParam();
    Config c;
    apply_option(c, "corpus", dir.file("corpus.txt"));
    apply_option(c, "output", dir.file(out));
    apply_option(c, "device", "cuda");
    apply_option(c, "deterministic", "true");
    apply_option(c, "model", to_string(model));
    apply_option(c, "optimizer", to_string(optimizer));
    apply_option(c, "dim", std::to_string(kDim));
    apply_option(c, "window", "3");
    apply_option(c, "negative", "3");
    apply_option(c, "epochs", "2");
    apply_option(c, "min-count", "1");
    apply_option(c, "sample", "1e-3");
    apply_option(c, "seed", std::to_string(seed));
    apply_option(c, "placement", to_string(placement));
    if (pool > 0) {
      apply_option(c, "negative-pool", std::to_string(pool));
      apply_option(c, "pool-words", "4096");
      apply_option(c, "batch-words", std::to_string(kBatchWords));
    }
    apply_option(c, "format", "npy");
    apply_option(c, "save-context", "true");
    return c;
  }
};

// The same blocks in the same order, one warp per launch: the vectors are the same bits whether
// the corpus is held whole on the GPU, streamed from the text with a window of a few blocks, or
// streamed from the encoded cache the streamed run wrote.
TEST_P(CudaStreamedRun, IsBitIdenticalToTheWholeCorpusRun) {
  PAGEDW2V_REQUIRE_GPU();
  const auto [placement, model, pool, optimizer] = GetParam();
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  TempDir dir;
  write_file(dir.file("corpus.txt"), zipf_corpus(seed, 150000));
  const bool paged = placement == Placement::kPaged;

  Config whole = config(dir, seed, "whole");
  if (paged) {
    // Pieces of two blocks of this corpus: at most 2 × 4095 words before each block's last
    // sentence, which is at most 1000 words long; sentences of at least 3 words but for the
    // ends of long lines.
    const uint64_t tokens = 2 * (kBlockWords - 1 + kMaxSentenceLength);
    apply_option(whole, "gpu-memory",
                 std::to_string(paged_budget(tokens, tokens / 3 + 8, optimizer,
                                             paged_rows(optimizer, false))));
  }
  Log whole_log;
  ASSERT_NE(whole_log.get(), nullptr);
  const TrainSummary a = run_training(whole, whole_log.get());
  const std::string wlog = whole_log.text();
  EXPECT_EQ(a.device, "cuda");
  ASSERT_EQ(a.vocab_size, kVocab);
  EXPECT_EQ(wlog.find("streamed"), std::string::npos) << wlog;

  const char* const outs[] = {"streamed", "cached1", "cached2"};
  for (const char* out : outs) {
    SCOPED_TRACE(out);
    Config streamed = config(dir, seed, out);
    // 64 KiB: a window of a few blocks, spans of one block, chunks of about 1000 words. An
    // optimizer's spans are whole super-batches (two blocks), at their largest in a quarter of
    // the memory: 512 KiB, spans of two blocks, chunks of about 2700 words.
    const bool sgd = optimizer == OptimizerKind::kSgd;
    apply_option(streamed, "max-corpus-memory", sgd ? "64KiB" : "512KiB");
    if (std::string(out) != "streamed") apply_option(streamed, "cache-dir", dir.file("cache"));
    if (paged) {
      apply_option(streamed, "gpu-memory",
                   std::to_string(paged_budget(2 * kMaxBlockTokens, 2 * kMaxBlockSentences,
                                               optimizer, paged_rows(optimizer, true))));
    }
    Log log;
    const TrainSummary b = run_training(streamed, log.get());
    const std::string slog = log.text();
    EXPECT_NE(slog.find("streamed: more than --max-corpus-memory"), std::string::npos) << slog;
    EXPECT_EQ(b.device, "cuda");
    EXPECT_EQ(b.words, a.words);
    EXPECT_EQ(b.words_per_epoch, a.words_per_epoch);
    if (paged) {
      for (const std::string* l : {&wlog, &slog}) {
        const int64_t hot = hot_rows(*l);
        ASSERT_GE(hot, 0) << "not paged:\n" << *l;
        // Sgd's pieces are cut on the host for a cache this small, and what the device's cut
        // would hold goes to hot rows: here every row (the pieces still come from the stream's
        // window and train through the paged pipeline; host cuts with rows moving are checked
        // bit for bit by test_cuda_paged). Adam's pieces are cut on the device, and page.
        if (optimizer != OptimizerKind::kSgd) {
          EXPECT_LT(hot, int64_t{kVocab}) << "every row is hot: nothing was paged\n" << *l;
        }
      }
    } else {
      EXPECT_NE(slog.find("tables resident"), std::string::npos) << slog;
    }
    expect_same_bits(dir.file("whole/vectors.npy"), dir.file(std::string(out) + "/vectors.npy"));
    expect_same_bits(dir.file("whole/context_vectors.npy"),
                     dir.file(std::string(out) + "/context_vectors.npy"));
  }
  const std::vector<std::string> cached = testing_util::entries(dir.file("cache"));
  ASSERT_EQ(cached.size(), 1u);
  EXPECT_EQ(cached[0].rfind("encoded-", 0), 0u) << cached[0];
}

std::string case_name(const ::testing::TestParamInfo<CudaStreamedRun::ParamType>& info) {
  return to_string(std::get<0>(info.param)) + "_" + to_string(std::get<1>(info.param)) + "_pool" +
         std::to_string(std::get<2>(info.param)) + "_" + to_string(std::get<3>(info.param));
}

constexpr OptimizerKind kSgd = OptimizerKind::kSgd;
constexpr OptimizerKind kAdam = OptimizerKind::kAdam;

INSTANTIATE_TEST_SUITE_P(
    Runs, CudaStreamedRun,
    ::testing::Values(Case{Placement::kResident, ModelKind::kSkipGram, 0, kSgd},
                      Case{Placement::kResident, ModelKind::kCbow, 0, kSgd},
                      Case{Placement::kResident, ModelKind::kSkipGram, kPool, kSgd},
                      Case{Placement::kResident, ModelKind::kSkipGram, kPool, kAdam},
                      Case{Placement::kResident, ModelKind::kCbow, kPool, kAdam},
                      Case{Placement::kPaged, ModelKind::kSkipGram, kPool, kSgd},
                      Case{Placement::kPaged, ModelKind::kCbow, kPool, kSgd},
                      Case{Placement::kPaged, ModelKind::kSkipGram, kPool, kAdam}),
    case_name);

// An optimizer steps once per super-batch, so a streamed run's spans are whole super-batches,
// which a quarter of --max-corpus-memory must hold at their largest: a smaller one is one clear
// line, a usage error, before training, and names what to change.
TEST(CudaStreamedOptimizer, ACapTooSmallForASuperBatchIsRefusedInOneLine) {
  PAGEDW2V_REQUIRE_GPU();
  TempDir dir;
  write_file(dir.file("corpus.txt"), zipf_corpus(3, 150000));
  for (const char* placement : {"resident", "paged"}) {
    SCOPED_TRACE(placement);
    Config c;
    apply_option(c, "corpus", dir.file("corpus.txt"));
    apply_option(c, "output", dir.file(std::string("adam-") + placement));
    apply_option(c, "device", "cuda");
    apply_option(c, "optimizer", "adam");
    apply_option(c, "dim", std::to_string(kDim));
    apply_option(c, "epochs", "1");
    apply_option(c, "min-count", "1");
    apply_option(c, "placement", placement);
    apply_option(c, "negative-pool", std::to_string(kPool));
    apply_option(c, "batch-words", std::to_string(kBatchWords));  // 4 × 2 × 53,156 bytes
    apply_option(c, "format", "npy");
    apply_option(c, "max-corpus-memory", "256KiB");
    try {
      run_training(c);
      ADD_FAILURE() << "trained with spans that cut super-batches";
    } catch (const UsageError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("--max-corpus-memory 256KiB is too small"), std::string::npos) << what;
      EXPECT_NE(what.find("give 416KiB or more"), std::string::npos) << what;
      EXPECT_NE(what.find("--optimizer adam"), std::string::npos) << what;
      EXPECT_NE(what.find("--batch-words"), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
    EXPECT_TRUE(read_file(dir.file(std::string("adam-") + placement + "/vectors.npy")).empty());
    // The least it names holds one: the same run trains, streamed.
    apply_option(c, "max-corpus-memory", "416KiB");
    apply_option(c, "output", dir.file(std::string("streamed-") + placement));
    Log log;
    const TrainSummary s = run_training(c, log.get());
    const std::string text = log.text();
    EXPECT_NE(text.find("streamed: more than --max-corpus-memory"), std::string::npos) << text;
    EXPECT_EQ(s.words, s.words_per_epoch);
    EXPECT_FALSE(
        read_file(dir.file(std::string("streamed-") + placement + "/vectors.npy")).empty());
  }
}

// Host memory on the GPU (docs/usage.md, host memory): a streamed run does not hold the encoded
// corpus, so it peaks lower than the same run holding the corpus whole by much of it, whatever
// the CUDA runtime itself takes (both runs have its context while the corpus is held); and it
// trains to the end.
TEST(CudaStreamedMemory, AStreamedRunDoesNotHoldTheEncodedCorpus) {
  PAGEDW2V_REQUIRE_GPU();
  TempDir dir;
  // 10 M words in lines of 20 (44 MB encoded, about 40 MB of text).
  std::vector<std::string> words;
  for (int i = 0; i < 64; ++i) words.push_back("w" + std::to_string(i));
  const size_t lines = 500000, per_line = 20;
  std::vector<uint64_t> counts(words.size(), 0);
  {
    std::FILE* out = std::fopen(dir.file("corpus.txt").c_str(), "wb");
    ASSERT_NE(out, nullptr);
    std::mt19937_64 rng(testing_util::fresh_seed());
    std::string line;
    for (size_t l = 0; l < lines; ++l) {
      line.clear();
      for (size_t i = 0; i < per_line; ++i) {
        const size_t w = rng() % words.size();
        ++counts[w];
        line += words[w];
        line += i + 1 == per_line ? '\n' : ' ';
      }
      ASSERT_EQ(std::fwrite(line.data(), 1, line.size(), out), line.size());
    }
    ASSERT_EQ(std::fclose(out), 0);
  }
  std::string vocab;
  for (size_t i = 0; i < words.size(); ++i) {
    vocab += words[i] + "\t" + std::to_string(counts[i]) + "\n";
  }
  write_file(dir.file("vocab.tsv"), vocab);
  const uint64_t encoded_bytes = lines * per_line * 4 + lines * 8;
  const std::vector<std::string> common = {"train",
                                           "--corpus",
                                           dir.file("corpus.txt"),
                                           "--vocab",
                                           dir.file("vocab.tsv"),
                                           "--dim",
                                           "2",
                                           "--window",
                                           "2",
                                           "--negative",
                                           "1",
                                           "--epochs",
                                           "2",
                                           "--device",
                                           "cuda",
                                           "--format",
                                           "npy",
                                           "--keep-checkpoints",
                                           "0",
                                           "--quiet"};
  std::string err;
  std::vector<std::string> streamed = common;
  for (const char* a : {"--max-corpus-memory", "1MiB", "--output"}) streamed.push_back(a);
  streamed.push_back(dir.file("streamed"));
  streamed.push_back(dir.file("streamed-run"));
  const uint64_t streamed_peak = peak_rss_of_run(PAGEDW2V_BINARY, streamed, &err);
  ASSERT_GT(streamed_peak, 0u) << err;
  EXPECT_GT(read_file(dir.file("streamed/vectors.npy")).size(), 64u * 2 * 4);

  std::vector<std::string> whole = common;
  for (const char* a : {"--max-corpus-memory", "1GiB", "--output"}) whole.push_back(a);
  whole.push_back(dir.file("whole"));
  whole.push_back(dir.file("whole-run"));
  const uint64_t whole_peak = peak_rss_of_run(PAGEDW2V_BINARY, whole, &err);
  ASSERT_GT(whole_peak, 0u) << err;
  std::printf("peak RSS on cuda: %llu bytes streamed, %llu held whole\n",
              static_cast<unsigned long long>(streamed_peak),
              static_cast<unsigned long long>(whole_peak));
  EXPECT_LT(streamed_peak + encoded_bytes / 2, whole_peak)
      << "streamed " << streamed_peak << ", whole " << whole_peak;
}

}  // namespace
}  // namespace pagedw2v
