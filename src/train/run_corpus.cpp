/// @file run_corpus.cpp
/// A run's corpus: its text opened, the vocabulary counted (or read, or a checkpoint's), the
/// training set encoded and held whole or streamed a window at a time (with its cache), the
/// corpus checked against a checkpoint's, and the log's vocabulary lines.

#include <unistd.h>
#include <algorithm>
#include <system_error>

#include "base/byte_size.hpp"
#include "base/error.hpp"
#include "base/free_heap.hpp"
#include "dist/ranks.hpp"
#include "train/continue_from.hpp"
#include "train/run_setup.hpp"
#include "train/training_run.hpp"

namespace pagedw2v {

namespace {

using run_steps::Clock;
using run_steps::prepare_output_dir;
using run_steps::seconds_since;
using run_steps::stream_stage_tokens;

/// --max-corpus-memory in bytes: auto is a quarter of the machine's memory.
uint64_t corpus_memory_cap(const Config& config) {
  if (config.max_corpus_memory > 0) return config.max_corpus_memory;
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return uint64_t{4} << 30;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) / 4;
}

/// The fingerprint that checkpoints of versions before streaming recorded (a whole-buffer hash):
/// their checkpoints still resume on a corpus held whole.
CorpusFingerprint legacy_fingerprint(const EncodedCorpus& corpus) {
  CorpusFingerprint f;
  f.words = corpus.size();
  f.sentences = corpus.sentences();
  const uint64_t a =
      detail::hash_bytes(std::string_view(reinterpret_cast<const char*>(corpus.tokens.data()),
                                          corpus.tokens.size() * sizeof(uint32_t)));
  const uint64_t b = detail::hash_bytes(
      std::string_view(reinterpret_cast<const char*>(corpus.sentence_starts.data()),
                       corpus.sentence_starts.size() * sizeof(uint64_t)));
  f.hash = a ^ (b * 0x9E3779B97F4A7C15ull);
  return f;
}

bool same_vocabulary(const Vocab& a, const Vocab& b) {
  return a.words() == b.words() && a.counts() == b.counts();
}

}  // namespace

void TrainingRun::read_corpus() {
  t = Clock::now();
  text = CorpusText::open(corpus_paths(config));
  times.read = seconds_since(t);
  join_phrases();
  // Whether the encoded corpus is held whole or streamed (corpus_stream.hpp): streamed when it
  // would take more than --max-corpus-memory.
  corpus_memory = corpus_memory_cap(config);
  t = Clock::now();
  if (ck) {
    // A continued run's vocabulary is not its corpus's alone: the corpus's fingerprint, checked
    // once it is encoded, says whether it is the one the checkpoint trained on.
    if (requested.given.count("corpus") && ck->config.continue_from.empty()) {
      if (!same_vocabulary(count_vocabulary(text.parts(), config), ck->vocab)) {
        throw Error("corpus '" + config.corpus +
                    "' does not give the vocabulary of the checkpoint; resume with the corpus it "
                    "was trained on");
      }
    }
    counted = std::move(ck->vocab);
  } else if (start) {
    GrownVocab grown = grow_from_run(*start, text, config);
    config.continued.words_added = grown.added;
    config.continued.counted_before = grown.counted_before;
    config.continued.words_left_out = grown.left_out;
    config.continued.tokens_left_out = grown.left_out_tokens;
    row_of_old = std::move(grown.row_of_old);
    counted = std::move(grown.vocab);
  } else if (!config.vocab_file.empty()) {
    counted = read_vocabulary(config);
    // The counts are taken as given (a vocabulary counted on a larger corpus weighs the noise
    // and --sample as that corpus did); more than the text could hold is said once.
    const uint64_t most = text.bytes() / 2 + 1;  // a word takes a byte and a separator
    if (writes_files && counted.total_count() > most) {
      std::fprintf(stderr,
                   "pagedw2v: warning: the counts of --vocab '%s' sum to %llu, more words than "
                   "the corpus's %llu bytes can hold; they weigh the noise distribution and "
                   "--sample as given\n",
                   config.vocab_file.c_str(),
                   static_cast<unsigned long long>(counted.total_count()),
                   static_cast<unsigned long long>(text.bytes()));
    }
  } else {
    // The count keeps its codes for a fast encoding only when the corpus will be held whole.
    // The text it has read leaves this process's resident memory as it goes (a mapped file's
    // pages stay in the page cache for the encoder or the stream), so that counting a large
    // file does not hold all of it beside the codes and the counting tables.
    counted = count_corpus_vocabulary(text, text.parts(), config, text.bytes() <= corpus_memory);
    counted_here = true;
  }
  times.vocabulary = seconds_since(t);
}

void TrainingRun::encode_corpus() {
  // 4 bytes a word and 8 a sentence; a sentence of 40 words is short (random walks).
  const uint64_t corpus_bytes = ck             ? ck->corpus.words * 4 + ck->corpus.sentences * 8
                                : counted_here ? counted.total_count() / 10 * 42
                                               : text.bytes();
  // Ranks each hold the corpus whole (they train their share of its blocks): no stream.
  streamed = !ranks && corpus_bytes > corpus_memory;
  if (config.phrases > 0 || !config.phrases_from.empty()) {
    if (streamed) {
      // Each pass joins the inputs' text anew, a round at a time: the joined text goes.
      text = std::move(phrase_source);
    } else {
      // Encoded whole from the joined text: the inputs and the tables are read no more.
      phrase_source = CorpusText();
      std::vector<PhraseTable>().swap(phrase_tables);
    }
  }
  if (streamed) {
    // The count read every page of the mapped text; the stream reads it again slice by slice.
    for (size_t i = 0; i < text.parts().size(); ++i) text.release(i, 0, text.parts()[i].size());
  }
  t = Clock::now();
  set = streamed ? make_training_set(std::move(counted), EncodedCorpus{}, config)
                 : make_training_set(text.parts(), config, std::move(counted));
  // Encoded whole, the text is read no more: its maps and buffers go before the tables are
  // allocated, so that they do not add to the peak of host memory (a stream reads it again).
  if (!streamed) text = CorpusText();
  // make_training_set gave back what the count and the encoder freed; the text's buffers go
  // back the same way.
  release_free_heap();
  if (writes_files && !config.save_vocab.empty()) {
    save_vocab_file(vocab, config.save_vocab, config.save_vocab_format);
  }
  // A corpus held whole is encoded: from now on only the checkpoints and the export read the
  // words, a slice at a time (the word2vec formats from a copy unpacked), so they are kept packed
  // (a stream looks words up in every pass; ranks write the rows they gather by words of their
  // own).
  if (!streamed && !ranks) pack_vocabulary(set, config.effective_threads());
  // A corpus held whole is hashed on a thread of its own while the model and the backend are
  // set up, unless a checkpoint or other ranks need its fingerprint now.
  if (!streamed) {
    if (!ck && !ranks) {
      try {
        hashing = std::async(std::launch::async, [this] { return fingerprint(set.corpus); });
      } catch (const std::system_error&) {
      }
    }
    if (!hashing.valid()) corpus_id = fingerprint(set.corpus);
  }
  // A streamed corpus: its words per epoch come from the count (or a pass over it), its
  // fingerprint at the end of the first pass (or from a pass before training, when resuming).
}

std::unique_ptr<BlockReader> TrainingRun::open_pass() {
  if (cache_key && read_cache_summary(cache_file, *cache_key)) {
    // A cache from an earlier run is read whole once before anything trains on it: ids
    // damaged within the vocabulary's range show only in its hash, at the end of a pass.
    if (!cache_checked) verify_cache(cache_file, *cache_key, vocab.size());
    cache_checked = true;
    return cache_block_reader(cache_file, *cache_key, vocab.size());
  }
  // Slices of text small beside the cap: a slice's tokens are held while it is cut.
  const size_t slice = static_cast<size_t>(
      std::clamp<uint64_t>(corpus_memory / 8, uint64_t{64} << 10, uint64_t{1} << 20));
  std::unique_ptr<BlockReader> r = config.phrases == 0 && config.phrases_from.empty()
                                       ? text_block_reader(text, *table, encode_options, slice)
                                       : phrased_block_reader(text, phrase_tables, phrase_options,
                                                              *table, encode_options, slice);
  if (cache_key) {
    r = caching_block_reader(std::move(r), cache_file, *cache_key);
    cache_checked = true;  // written by this run from the text
  }
  return r;
}

void TrainingRun::prepare_stream() {
  encode_options.text = config.text_options();
  encode_options.threads = config.effective_threads();
  if (streamed) {
    if (vocab.lookup() == nullptr)
      built_table = detail::lookup_table(vocab, encode_options.threads);
    table = vocab.lookup() != nullptr ? vocab.lookup() : &built_table;
    if (!config.cache_dir.empty()) {
      prepare_output_dir(config.cache_dir);
      cache_key = encoding_key(corpus_paths(config), vocab, encode_options);
      // The joined text depends on the phrases as well as on the inputs.
      if (cache_key && (config.phrases > 0 || !config.phrases_from.empty())) {
        *cache_key =
            detail::hash_bytes(std::to_string(*cache_key) + '\n' + phrase_summary.file_text);
      }
      if (cache_key) cache_file = cache_path(config.cache_dir, *cache_key);
    }
    if (counted_here) {
      stream_words = vocab.total_count();
    } else {
      // A vocabulary read from a file or a checkpoint does not say how many words the corpus
      // has, nor where resuming lands: one pass says (and writes the cache on the way). A cache
      // it reads is verified by the pass itself, before any training.
      cache_checked = true;
      std::unique_ptr<BlockReader> r = open_pass();
      StreamBlock b;
      CorpusHasher h;
      h.add_start(0);
      while (r->next(b)) {
        h.add_tokens(b.tokens.data(), b.tokens.size());
        for (size_t i = 1; i < b.starts.size(); ++i) h.add_start(b.starts[i]);
        stream_bounds.push_back(b.first_sentence + b.starts.size() - 1);
      }
      r.reset();
      corpus_id = CorpusFingerprint{h.words(), h.sentences(), h.hash()};
      stream_words = h.words();
      if (stream_words == 0)
        throw Error("corpus '" + config.corpus + "' holds no word of the vocabulary");
    }
  }
  if (ck && !(*corpus_id == ck->corpus) &&
      !(!streamed && legacy_fingerprint(set.corpus) == ck->corpus)) {
    throw Error("corpus '" + config.corpus + "' is not the corpus the checkpoint was trained on");
  }
  // Also waits for rank 0 to have claimed the output directory.
  if (ranks) ranks->check_same(corpus_id->hash ^ vocab.size(), "corpus and vocabulary");
  times.encoding = seconds_since(t);
}

void TrainingRun::report_vocabulary() {
  if (out) {
    if (streamed) {
      std::fprintf(out,
                   "vocabulary: %u words (min-count %llu); %llu words/epoch, streamed: more than "
                   "--max-corpus-memory %s encoded (%.2f s)\n",
                   vocab.size(), static_cast<unsigned long long>(config.min_count),
                   static_cast<unsigned long long>(stream_words),
                   format_byte_size(corpus_memory).c_str(), seconds_since(t0));
    } else {
      std::fprintf(out,
                   "vocabulary: %u words (min-count %llu); %llu words/epoch in %llu sentences "
                   "(%.2f s)\n",
                   vocab.size(), static_cast<unsigned long long>(config.min_count),
                   static_cast<unsigned long long>(set.corpus.size()),
                   static_cast<unsigned long long>(set.corpus.sentences()), seconds_since(t0));
    }
    if (!row_of_old.empty()) {
      const ContinueOrigin& c = config.continued;
      std::fprintf(out,
                   "continued from %s: its %llu words kept, %llu added from the new text (their "
                   "count %s reaching --min-count %llu); %llu of the new text's words left out "
                   "(%llu tokens)\n",
                   c.checkpoint.c_str(), static_cast<unsigned long long>(c.words_kept),
                   static_cast<unsigned long long>(c.words_added),
                   config.continue_count == ContinueCount::kMerged
                       ? "in the run's corpus and the new text"
                       : "in the new text",
                   static_cast<unsigned long long>(config.min_count),
                   static_cast<unsigned long long>(c.words_left_out),
                   static_cast<unsigned long long>(c.tokens_left_out));
    }
    // What --min-count and --max-vocab left out, as gensim's build_vocab reports it.
    const uint64_t distinct = vocab.distinct_words(), tokens = vocab.corpus_tokens();
    if (distinct > vocab.size() && tokens > 0) {
      const uint64_t dropped_tokens = tokens - std::min(tokens, vocab.total_count());
      std::string limits = "--min-count " + std::to_string(config.min_count);
      if (config.max_vocab > 0) limits += ", --max-vocab " + std::to_string(config.max_vocab);
      std::fprintf(
          out, "dropped by %s: %llu of %llu distinct words, %llu of %llu tokens (%.2f %%)\n",
          limits.c_str(), static_cast<unsigned long long>(distinct - vocab.size()),
          static_cast<unsigned long long>(distinct),
          static_cast<unsigned long long>(dropped_tokens), static_cast<unsigned long long>(tokens),
          100.0 * static_cast<double>(dropped_tokens) / static_cast<double>(tokens));
    }
  }
}

TrainData TrainingRun::run_data(TrainData d) {
  if (streamed) {
    d.corpus = &window;
    d.blocks = &stream_bounds;
    d.params.words_per_epoch = stream_words;
    d.streamed = true;
    d.stage_tokens = stream_stage_tokens(corpus_memory);
  }
  return d;
}

}  // namespace pagedw2v
