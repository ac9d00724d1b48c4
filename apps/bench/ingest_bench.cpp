#include "bench/ingest_bench.hpp"

#include <algorithm>
#include <chrono>

#include "base/error.hpp"
#include "corpus/corpus.hpp"
#include "text/text_source.hpp"
#include "train/training_set.hpp"
#include "vocab/vocab.hpp"

namespace pagedw2v {

void run_ingest_bench(const IngestBenchOptions& options, std::FILE* out) {
  using Clock = std::chrono::steady_clock;
  const Config& config = options.config;
  if (config.corpus.empty()) throw UsageError("bench ingest needs --corpus");
  auto seconds = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  double best_open = 1e30, best_vocab = 1e30, best_encode = 1e30;
  uint64_t tokens = 0, words = 0, bytes = 0;
  for (uint32_t r = 0; r < std::max<uint32_t>(options.repeat, 1); ++r) {
    const auto t0 = Clock::now();
    const CorpusText text = CorpusText::open(corpus_paths(config));
    const auto t1 = Clock::now();
    const Vocab vocab = count_vocabulary(text.parts(), config);
    const auto t2 = Clock::now();
    EncodeOptions eo;
    eo.text = config.text_options();
    eo.threads = config.effective_threads();
    const EncodedCorpus corpus = encode_corpus(text.parts(), vocab, eo);
    const auto t3 = Clock::now();
    best_open = std::min(best_open, seconds(t0, t1));
    best_vocab = std::min(best_vocab, seconds(t1, t2));
    best_encode = std::min(best_encode, seconds(t2, t3));
    tokens = vocab.corpus_tokens();
    words = vocab.size();
    bytes = text.bytes();
  }
  if (options.reference) {
    const CorpusText text = CorpusText::open(corpus_paths(config));
    if (text.parts().size() != 1) throw UsageError("bench ingest --reference reads one file");
    double ref_vocab = 1e30, ref_encode = 1e30;
    for (uint32_t r = 0; r < std::max<uint32_t>(options.repeat, 1); ++r) {
      VocabOptions vo;
      vo.min_count = config.min_count;
      vo.max_vocab = config.max_vocab;
      vo.text = config.text_options();
      const auto t0 = Clock::now();
      const Vocab vocab = Vocab::count_serial(text.parts()[0], vo);
      const auto t1 = Clock::now();
      EncodeOptions eo;
      eo.text = config.text_options();
      const EncodedCorpus corpus = encode_corpus_serial(text.parts()[0], vocab, eo);
      const auto t2 = Clock::now();
      ref_vocab = std::min(ref_vocab, seconds(t0, t1));
      ref_encode = std::min(ref_encode, seconds(t1, t2));
    }
    std::fprintf(out,
                 "reference (one thread): vocabulary %.3f s, encoding %.3f s: "
                 "%.3f s, %.2f M tokens/s\n",
                 ref_vocab, ref_encode, ref_vocab + ref_encode,
                 tokens / (ref_vocab + ref_encode) / 1e6);
  }
  const double total = best_vocab + best_encode;
  std::fprintf(out,
               "ingest: %llu bytes, %llu tokens, %llu words in the vocabulary, %u threads\n"
               "  read %.3f s, vocabulary %.3f s, encoding %.3f s: %.3f s, %.2f M tokens/s "
               "(best of %u)\n",
               static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(tokens),
               static_cast<unsigned long long>(words), config.effective_threads(), best_open,
               best_vocab, best_encode, total, tokens / total / 1e6,
               std::max<uint32_t>(options.repeat, 1));
}

}  // namespace pagedw2v
