#pragma once
/// @file phrases.hpp
/// Phrases as word2vec's word2phrase finds them: two words `a b` that follow each other within a
/// sentence become one token `a_b` when
///
///     (count(a b) - min_count) * N / (count(a) * count(b)) > threshold
///
/// where N is the number of word tokens of the text counted, and count(a), count(b), count(a b)
/// are at least min_count. The text is read left to right; a pair is joined when it scores and
/// its first word was not already joined to the word before it (so `a b c` with both pairs
/// scoring becomes `a_b c`). A newline or the end of a file ends a sentence: no pair spans it.
/// A joined token longer than kMaxWordBytes is never made (the ingest would cut it).
///
/// Longer phrases come from passes: pass k counts the text as the passes before it join it, so
/// that `new_york times` can become `new_york_times`. Counting and writing read the inputs
/// (text_source.hpp) and apply the earlier passes as they go; nothing is written in between.
///
/// Work is cut between threads at *safe cuts*: positions where every pass starts afresh whatever
/// came before (after a newline, or before a token that no pass can join to its left), so each
/// thread's result equals that of one thread reading everything. Word counts are exact; the
/// counts of pairs are held in a table of at most PhraseOptions::max_pairs entries, and when it
/// is full the rarest pairs are dropped, as word2phrase's table does (count <= r, with r rising
/// by one each time it fills).

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/huge_pages.hpp"
#include "text/text_source.hpp"
#include "text/tokenizer.hpp"
#include "text/word_table.hpp"

namespace pagedw2v {

struct PhraseOptions {
  double threshold = 100;  ///< join a pair that scores above this (word2phrase's default)
  uint64_t min_count = 5;  ///< words and pairs seen fewer times never join
  uint32_t passes = 1;     ///< each pass joins one more word at most: 2 makes up to 4-word tokens
  uint64_t max_pairs = 20'000'000;  ///< pairs counted at once, over all threads
  uint32_t threads = 1;
  /// Text each thread takes at least (fewer threads read a small text; tests lower it).
  uint64_t min_bytes_per_thread = uint64_t{1} << 20;
  TextOptions text;
  /// Text one writing thread turns into output at a time (the output of a round of threads is
  /// held until written).
  size_t slice_bytes = size_t{8} << 20;
};

/// word2phrase's score of a pair seen `ab` times whose words were seen `a` and `b` times, in a
/// text of `words` tokens; 0 when a count is below `min_count` (the pair never joins then).
double phrase_score(uint64_t ab, uint64_t a, uint64_t b, uint64_t min_count, uint64_t words);

/// One pass's phrases: the pairs that join.
class PhraseTable {
 public:
  static constexpr uint32_t kNone = detail::WordTable::kNone;

  struct Phrase {
    std::string first, second;
    uint64_t count = 0;  ///< of the pair
    double score = 0;
  };

  PhraseTable() = default;
  /// The table of `phrases` (each pair once).
  explicit PhraseTable(std::vector<Phrase> phrases);

  /// Id of `word` (hash `h` = detail::hash_bytes(word)) among the words of the phrases, or kNone.
  void prefetch(uint64_t h) const { words_.prefetch(h); }
  uint32_t find(std::string_view word, uint64_t h) const {
    const detail::WordTable::Slot* s = words_.find(word, h);
    return s == nullptr ? kNone : s->id;
  }
  /// Whether word `id` is the second word of a phrase (a token that may join to its left).
  bool joins_left(uint32_t id) const { return id != kNone && (roles_[id] & kSecond) != 0; }
  /// Whether `first second` (ids of find(), the words hashing to `h_first` and `h_second`) is a
  /// phrase.
  bool joins(uint32_t first, uint32_t second, uint64_t h_first, uint64_t h_second) const;
  /// Brings in the slot where joins() of the words hashing to `h_first` and `h_second` looks
  /// first: a pair's place follows from the words' hashes, known before their ids.
  void prefetch_pair(uint64_t h_first, uint64_t h_second) const {
    if (!pairs_.empty()) __builtin_prefetch(&pairs_[pair_home(h_first, h_second)]);
  }

  const std::vector<Phrase>& phrases() const { return phrases_; }
  size_t size() const { return phrases_.size(); }

 private:
  static constexpr uint8_t kFirst = 1, kSecond = 2;
  size_t pair_home(uint64_t h_first, uint64_t h_second) const {
    uint64_t x = h_first * 0x9E3779B97F4A7C15ull ^ (h_second + 0x632BE59BD9B4E019ull);
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    return static_cast<size_t>(x ^ (x >> 32)) & mask_;
  }
  detail::WordTable words_{64};
  std::vector<uint8_t> roles_;  ///< by id: kFirst | kSecond
  /// Open addressing of first << 32 | second + 1 (0 = empty) from pair_home() of the words'
  /// hashes; on huge pages, since every token of a text probes it.
  std::vector<uint64_t, HugePageAllocator<uint64_t>> pairs_;
  size_t mask_ = 0;
  std::vector<Phrase> phrases_;  ///< sorted by score, highest first
};

/// The text to read: its parts in order (each a file's text; a part's end ends a sentence) and,
/// when they are a CorpusText's, that object, whose mapped pages are let go once read.
struct PhraseText {
  std::vector<std::string_view> parts;
  const CorpusText* source = nullptr;

  static PhraseText of(const CorpusText& text) { return {text.parts(), &text}; }
  static PhraseText of(std::string_view text) { return {{text}, nullptr}; }
};

/// What one pass counted.
struct PhrasePassStats {
  uint64_t words = 0;  ///< tokens (N of the score)
  uint64_t distinct_words = 0;
  uint64_t distinct_pairs = 0;  ///< pairs held at the end (after pruning)
  uint64_t pruned_below = 0;    ///< pairs seen this many times or fewer may have been dropped
};

/// Counts the text as `earlier` joins it and returns the phrases of the next pass.
PhraseTable count_phrases(const PhraseText& text, const std::vector<PhraseTable>& earlier,
                          const PhraseOptions& options, PhrasePassStats* stats = nullptr);

/// One line (without its newline) that says what pass `pass` counted and which phrases it found
/// (the first five): what `pagedw2v phrases` and `train --phrases` print after each pass.
std::string describe_pass(uint32_t pass, const PhraseTable& table, const PhrasePassStats& stats);

/// All `options.passes` passes; `on_pass(k, table, stats)` after each (k from 1).
std::vector<PhraseTable> learn_phrases(
    const PhraseText& text, const PhraseOptions& options,
    const std::function<void(uint32_t, const PhraseTable&, const PhrasePassStats&)>& on_pass =
        nullptr);

/// What applying the phrases wrote.
struct PhraseOutputStats {
  uint64_t tokens = 0;  ///< tokens written
  uint64_t joined = 0;  ///< of which hold a `_` made by a pass
  uint64_t bytes = 0;
};

/// Writes the text with `tables` applied in order, through `write(bytes)` in text order: tokens
/// (normalised as the tokenizer reads them) separated by one space, each newline kept, and a
/// newline after a file's last line when it has none. Work goes to `options.threads` threads, a
/// round of slices at a time.
PhraseOutputStats apply_phrases(const PhraseText& text, const std::vector<PhraseTable>& tables,
                                const PhraseOptions& options,
                                const std::function<void(std::string_view)>& write);

/// apply_phrases() a round at a time, for a reader that pulls the joined text: each next()
/// gives the text of one round (`options.threads` slices of about `options.slice_bytes`, cut
/// between tokens or after a newline), in text order. `text`, `tables` and the text's inputs must
/// outlive it.
class PhraseRounds {
 public:
  PhraseRounds(const PhraseText& text, const std::vector<PhraseTable>& tables,
               const PhraseOptions& options);
  /// Replaces `out` with the next round's text; false (and `out` empty) once all is given.
  bool next(std::string& out);
  /// What the rounds given so far held.
  const PhraseOutputStats& stats() const { return stats_; }

 private:
  PhraseText text_;
  const std::vector<PhraseTable>& tables_;
  PhraseOptions options_;
  size_t threads_ = 1;
  size_t part_ = 0, offset_ = 0;  ///< where the next round starts
  std::vector<std::string> outputs_;
  std::vector<PhraseOutputStats> thread_stats_;
  PhraseOutputStats stats_;
};

/// apply_phrases() of one text into a string (one thread): for tests and small texts.
std::string apply_phrases(std::string_view text, const std::vector<PhraseTable>& tables,
                          const PhraseOptions& options = {});

}  // namespace pagedw2v
