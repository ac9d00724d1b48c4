#include "bench/synthetic_corpus.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <functional>
#include <system_error>
#include <thread>

#include "base/atomic_file.hpp"
#include "base/error.hpp"
#include "base/philox.hpp"
#include "model/sampler.hpp"

namespace pagedw2v {
namespace {

constexpr uint64_t kMaxWords = uint64_t{1} << 40;
constexpr double kMaxZipf = 10.0;
/// The counter word of the token draws: above philox.hpp's DrawKind values (kind << 28), so no
/// draw of training repeats one of the corpus's.
constexpr uint32_t kTokenStream = 0xFu << 28;
/// Ranks per partial sum of the weights: fixed, so that the sum (and every count) is the same
/// for any thread count.
constexpr uint64_t kSumChunk = uint64_t{1} << 16;

[[noreturn]] void bad_spec(const std::string& text) {
  throw UsageError(
      "--synthetic: expected VOCAB,WORDS,ZIPF such as 10000000,200000000,1.0 (VOCAB in [1, "
      "4294967294], WORDS in [1, 2^40], ZIPF in [0, 10]), got '" +
      text + "'");
}

bool parse_whole(const std::string& s, uint64_t lo, uint64_t hi, uint64_t* out) {
  if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  *out = std::strtoull(s.c_str(), nullptr, 10);
  return *out >= lo && *out <= hi;
}

/// Runs `fn(begin, end)` over [0, n) cut into `threads` contiguous pieces whose starts are
/// multiples of `align`, each on its own thread; rethrows the first exception.
void parallel_ranges(uint64_t n, uint32_t threads, uint64_t align,
                     const std::function<void(uint64_t, uint64_t)>& fn) {
  const uint64_t units = (n + align - 1) / align;
  const uint64_t pieces = std::max<uint64_t>(1, std::min<uint64_t>(threads, units));
  if (pieces == 1) {
    fn(0, n);
    return;
  }
  std::vector<std::thread> pool;
  std::vector<std::exception_ptr> errors(pieces);
  for (uint64_t t = 0; t < pieces; ++t) {
    const uint64_t begin = std::min(n, units * t / pieces * align);
    const uint64_t end = std::min(n, units * (t + 1) / pieces * align);
    pool.emplace_back([&, t, begin, end] {
      try {
        fn(begin, end);
      } catch (...) {
        errors[t] = std::current_exception();
      }
    });
  }
  for (std::thread& th : pool) th.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

/// r^−s for every rank r = 1 … vocab (index r − 1).
std::vector<double> zipf_weights(const SyntheticSpec& spec, uint32_t threads) {
  std::vector<double> w(spec.vocab);
  parallel_ranges(spec.vocab, threads, 1, [&](uint64_t begin, uint64_t end) {
    for (uint64_t i = begin; i < end; ++i) w[i] = std::pow(static_cast<double>(i + 1), -spec.zipf);
  });
  return w;
}

}  // namespace

SyntheticSpec parse_synthetic_spec(const std::string& text) {
  const size_t c1 = text.find(',');
  const size_t c2 = c1 == std::string::npos ? c1 : text.find(',', c1 + 1);
  if (c2 == std::string::npos || text.find(',', c2 + 1) != std::string::npos) bad_spec(text);
  SyntheticSpec spec;
  uint64_t vocab = 0;
  if (!parse_whole(text.substr(0, c1), 1, detail::StringIndex::kEmpty - 1, &vocab) ||
      !parse_whole(text.substr(c1 + 1, c2 - c1 - 1), 1, kMaxWords, &spec.words)) {
    bad_spec(text);
  }
  spec.vocab = static_cast<uint32_t>(vocab);
  const std::string zipf = text.substr(c2 + 1);
  char* end = nullptr;
  errno = 0;
  spec.zipf = zipf.empty() ? NAN : std::strtod(zipf.c_str(), &end);
  if (zipf.empty() || end != zipf.c_str() + zipf.size() || errno == ERANGE ||
      !std::isfinite(spec.zipf) || spec.zipf < 0 || spec.zipf > kMaxZipf) {
    bad_spec(text);
  }
  return spec;
}

std::vector<uint64_t> zipf_counts(const SyntheticSpec& spec, uint32_t threads) {
  const std::vector<double> w = zipf_weights(spec, threads);
  std::vector<double> partial((w.size() + kSumChunk - 1) / kSumChunk, 0.0);
  parallel_ranges(partial.size(), threads, 1, [&](uint64_t begin, uint64_t end) {
    for (uint64_t c = begin; c < end; ++c) {
      const uint64_t last = std::min<uint64_t>(w.size(), (c + 1) * kSumChunk);
      // Smallest terms first: the sum of a long Zipf tail keeps its low digits.
      double s = 0;
      for (uint64_t i = last; i > c * kSumChunk; --i) s += w[i - 1];
      partial[c] = s;
    }
  });
  double total = 0;
  for (size_t c = partial.size(); c > 0; --c) total += partial[c - 1];
  const double scale = static_cast<double>(spec.words) / total;
  std::vector<uint64_t> counts(w.size());
  parallel_ranges(w.size(), threads, 1, [&](uint64_t begin, uint64_t end) {
    for (uint64_t i = begin; i < end; ++i) {
      counts[i] = std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(w[i] * scale)));
    }
  });
  return counts;
}

Vocab synthetic_vocab(const SyntheticSpec& spec, uint32_t threads) {
  std::vector<uint64_t> counts = zipf_counts(spec, threads);
  auto digits = [](uint64_t i) {
    size_t d = 1;
    for (; i >= 10; i /= 10) ++d;
    return d;
  };
  WordList words = WordList::of_lengths(spec.vocab, [&](size_t i) { return 1 + digits(i); });
  parallel_ranges(spec.vocab, threads, 1, [&](uint64_t begin, uint64_t end) {
    for (uint64_t i = begin; i < end; ++i) {
      char* w = words.data(i);
      w[0] = 'w';
      std::to_chars(w + 1, w + 1 + digits(i), i);
    }
  });
  return Vocab::from_word_list(std::move(words), std::move(counts));
}

EncodedCorpus synthetic_corpus(const SyntheticSpec& spec, uint64_t seed, uint32_t threads) {
  if (spec.vocab == 0 || spec.words == 0) {
    throw UsageError("--synthetic: empty vocabulary or corpus");
  }
  // Zipf's weights are distinct, so the table has a column per word and its draws are plain
  // alias draws.
  const NoiseTable zipf(zipf_weights(spec, threads));
  const NoiseColumn* table = zipf.columns().data();
  const uint32_t n = zipf.column_count();
  const uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  EncodedCorpus c;
  c.tokens.resize(spec.words);
  uint32_t* tokens = c.tokens.data();
  const uint64_t words = spec.words;
  parallel_ranges(words, threads, 2, [&](uint64_t begin, uint64_t end) {
    for (uint64_t pos = begin; pos < end; pos += 2) {
      const uint64_t k = pos / 2;
      const Philox4 r = philox4x32(
          Philox4{{static_cast<uint32_t>(k), static_cast<uint32_t>(k >> 32), 0, kTokenStream}}, k0,
          k1);
      tokens[pos] = noise_draw(table, n, r.v[0], r.v[1]);
      if (pos + 1 < end) tokens[pos + 1] = noise_draw(table, n, r.v[2], r.v[3]);
    }
  });
  const uint64_t sentences = (words + kSyntheticSentenceLength - 1) / kSyntheticSentenceLength;
  c.sentence_starts.resize(sentences + 1);
  for (uint64_t s = 0; s < sentences; ++s) c.sentence_starts[s] = s * kSyntheticSentenceLength;
  c.sentence_starts[sentences] = words;
  return c;
}

void write_synthetic_files(const SyntheticSpec& spec, uint64_t seed, uint32_t threads,
                           const std::string& corpus_path, const std::string& vocab_path) {
  for (const std::string& path : {corpus_path, vocab_path}) {
    std::error_code ec;
    if (std::filesystem::exists(std::filesystem::symlink_status(path, ec))) {
      throw UsageError(path + " exists already; give another --output");
    }
  }
  const EncodedCorpus corpus = synthetic_corpus(spec, seed, threads);
  AtomicFile out(corpus_path);
  std::string buf;
  char word[16];
  const uint64_t sentences = corpus.sentence_starts.size() - 1;
  for (uint64_t s = 0; s < sentences; ++s) {
    for (uint64_t p = corpus.sentence_starts[s]; p < corpus.sentence_starts[s + 1]; ++p) {
      word[0] = 'w';
      const auto end = std::to_chars(word + 1, word + sizeof word, corpus.tokens[p]).ptr;
      if (p > corpus.sentence_starts[s]) buf += ' ';
      buf.append(word, end);
    }
    buf += '\n';
    if (buf.size() > (uint64_t{1} << 22)) {
      out.write(buf);
      buf.clear();
    }
  }
  out.write(buf);
  synthetic_vocab(spec, threads).save_tsv(vocab_path);
  try {
    out.commit();
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove(vocab_path, ec);  // the pair, or neither
    throw;
  }
}

TrainingSet make_synthetic_training_set(const SyntheticSpec& spec, const Config& config) {
  const uint32_t threads = config.effective_threads();
  // The corpus first: its sampler's temporaries are gone before the vocabulary is built.
  EncodedCorpus corpus = synthetic_corpus(spec, config.seed, threads);
  return make_training_set(synthetic_vocab(spec, threads), std::move(corpus), config);
}

}  // namespace pagedw2v
