#include "text/phrases.hpp"

#include <algorithm>
#include <memory>
#include <tuple>
#include <utility>

#include "base/error.hpp"
#include "base/huge_pages.hpp"
#include "base/string_index.hpp"
#include "text/phrase_stream.hpp"
#include "text/text_chunks.hpp"

namespace pagedw2v {
namespace {

using detail::at_line_start;
using detail::offset_of;
using detail::Pipeline;
using detail::place_of;
using detail::Pos;
using detail::read_range;
using detail::safe_cut;
using detail::Token;
using detail::total_bytes;
using detail::walk_from;

constexpr uint32_t kNone = PhraseTable::kNone;

uint64_t mix64(uint64_t x) {
  x ^= x >> 31;
  x *= 0x7FB5D329728EA185ull;
  x ^= x >> 27;
  x *= 0x81DADEF4BC2DD44Dull;
  return x ^ (x >> 33);
}

uint64_t pair_key(uint32_t first, uint32_t second) { return uint64_t{first} << 32 | second; }

/// Open addressing of pair keys to counts, pruned when `cap` pairs are held: the pairs seen
/// `min_reduce` times or fewer go, and `min_reduce` rises by one (word2phrase's ReduceVocab).
class PairCounts {
 public:
  struct Slot {
    uint64_t key;
    uint64_t count;  ///< 0: empty
  };

  explicit PairCounts(uint64_t cap) : cap_(std::max<uint64_t>(cap, 1)) { rehash(1024); }

  void add(uint64_t key, uint64_t n) {
    for (size_t i = mix64(key) & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.count == 0) {
        if (size_ >= cap_) {
          prune();
          add(key, n);
          return;
        }
        if ((size_ + 1) * 10 > slots_.size() * 7) {
          rehash(slots_.size() * 2);
          add(key, n);
          return;
        }
        s.key = key;
        s.count = n;
        ++size_;
        return;
      }
      if (s.key == key) {
        s.count += n;
        return;
      }
    }
  }

  void prefetch(uint64_t key) const { __builtin_prefetch(&slots_[mix64(key) & mask_]); }
  /// Holds up to `cap` pairs from now on (pruning at once if it holds more).
  void set_cap(uint64_t cap) {
    cap_ = std::max<uint64_t>(cap, 1);
    if (size_ > cap_) prune();
  }
  uint64_t size() const { return size_; }
  /// Pairs seen this many times or fewer may have been dropped (0: none was).
  uint64_t pruned_below() const { return min_reduce_ - 1; }

  template <class F>
  void for_each(F&& f) const {
    for (const Slot& s : slots_) {
      if (s.count != 0) f(s);
    }
  }

 private:
  void prune() {
    if (size_ < cap_) return;
    do {
      ZeroedArray<Slot> old(slots_.size());
      old.swap(slots_);
      size_ = 0;
      for (const Slot& s : old) {
        if (s.count > min_reduce_) place(s);
      }
      ++min_reduce_;
    } while (size_ >= cap_);
  }
  void rehash(size_t capacity) {
    ZeroedArray<Slot> old(capacity);
    old.swap(slots_);
    mask_ = capacity - 1;
    size_ = 0;
    for (const Slot& s : old) {
      if (s.count != 0) place(s);
    }
  }
  void place(const Slot& s) {
    size_t i = mix64(s.key) & mask_;
    while (slots_[i].count != 0) i = (i + 1) & mask_;
    slots_[i] = s;
    ++size_;
  }

  ZeroedArray<Slot> slots_;
  size_t mask_ = 0;
  uint64_t size_ = 0;
  uint64_t cap_;
  uint64_t min_reduce_ = 1;
};

/// The counting end of a pass: words and pairs of one thread's share of the text.
class Counter {
 public:
  explicit Counter(uint64_t max_pairs) : pairs_(max_pairs) {}

  void prefetch(uint64_t h) const { words_.prefetch(h); }
  void token(const Token& t) {
    detail::WordTable::Slot& s = words_.insert(t.word, t.hash);
    ++s.value;
    ++tokens_;
    if (prev_ != kNone) add_pair(pair_key(prev_, s.id));
    prev_ = s.id;
  }
  /// The pair of the last token and `t`, the first token of the next thread's share (which
  /// counts `t` itself).
  void pair_only(const Token& t) {
    if (prev_ == kNone) return;
    const uint32_t id = words_.insert(t.word, t.hash).id;
    add_pair(pair_key(prev_, id));
  }
  void newline() { prev_ = kNone; }
  void part_end() { prev_ = kNone; }
  /// Counts the pairs still waiting; call before reading pairs().
  void finish() {
    for (size_t i = 0; i < waiting_; ++i) pairs_.add(pending_[i], 1);
    waiting_ = 0;
  }

  detail::WordTable& words() { return words_; }
  PairCounts& pairs() { return pairs_; }
  uint64_t tokens() const { return tokens_; }

 private:
  // A pair's slot is a cache miss in a large table: pairs wait in a batch whose slots are
  // prefetched, and are counted together.
  static constexpr size_t kBatch = 16;
  void add_pair(uint64_t key) {
    pairs_.prefetch(key);
    pending_[waiting_++] = key;
    if (waiting_ == kBatch) finish();
  }

  detail::WordTable words_;
  PairCounts pairs_;
  uint64_t pending_[kBatch];
  size_t waiting_ = 0;
  uint32_t prev_ = kNone;
  uint64_t tokens_ = 0;
};

/// The writing end: tokens separated by a space, newlines kept.
class Writer {
 public:
  explicit Writer(std::string& out, bool line_start) : out_(out), line_start_(line_start) {}

  void prefetch(uint64_t) const {}
  void token(const Token& t) {
    if (!line_start_) out_ += ' ';
    out_.append(t.word);
    line_start_ = false;
    ++stats.tokens;
    stats.joined += t.joined ? 1 : 0;
  }
  void newline() {
    out_ += '\n';
    line_start_ = true;
  }
  void part_end() {
    if (!line_start_) newline();
  }

  PhraseOutputStats stats;

 private:
  std::string& out_;
  bool line_start_;
};

/// Threads worth starting for `bytes` of text.
size_t threads_for(uint64_t bytes, const PhraseOptions& options) {
  const uint32_t threads = options.threads;
  const uint64_t by_size =
      std::max<uint64_t>(1, bytes / std::max<uint64_t>(options.min_bytes_per_thread, 1));
  return static_cast<size_t>(std::min<uint64_t>(std::max<uint32_t>(threads, 1), by_size));
}

}  // namespace

double phrase_score(uint64_t ab, uint64_t a, uint64_t b, uint64_t min_count, uint64_t words) {
  if (a == 0 || b == 0 || a < min_count || b < min_count || ab < min_count) return 0;
  return (static_cast<double>(ab) - static_cast<double>(min_count)) / static_cast<double>(a) /
         static_cast<double>(b) * static_cast<double>(words);
}

PhraseTable::PhraseTable(std::vector<Phrase> phrases) : phrases_(std::move(phrases)) {
  std::sort(phrases_.begin(), phrases_.end(), [](const Phrase& x, const Phrase& y) {
    if (x.score != y.score) return x.score > y.score;
    return std::tie(x.first, x.second) < std::tie(y.first, y.second);
  });
  size_t capacity = 64;
  while (capacity < phrases_.size() * 2) capacity <<= 1;
  pairs_.assign(capacity, 0);
  mask_ = capacity - 1;
  auto id_of = [&](const std::string& w, uint64_t h, uint8_t role) {
    detail::WordTable::Slot& s = words_.insert(w, h);
    if (s.id >= roles_.size()) roles_.resize(s.id + 1, 0);
    roles_[s.id] |= role;
    return s.id;
  };
  for (const Phrase& ph : phrases_) {
    if (ph.first.empty() || ph.second.empty() || ph.first.size() > 255 || ph.second.size() > 255) {
      throw Error("a phrase's words must be 1 to 255 bytes long");
    }
    const uint64_t h1 = detail::hash_bytes(ph.first), h2 = detail::hash_bytes(ph.second);
    const uint64_t key = pair_key(id_of(ph.first, h1, kFirst), id_of(ph.second, h2, kSecond)) + 1;
    size_t i = pair_home(h1, h2);
    while (pairs_[i] != 0 && pairs_[i] != key) i = (i + 1) & mask_;
    pairs_[i] = key;
  }
}

bool PhraseTable::joins(uint32_t first, uint32_t second, uint64_t h_first,
                        uint64_t h_second) const {
  if (first == kNone || second == kNone || pairs_.empty()) return false;
  if ((roles_[first] & kFirst) == 0 || (roles_[second] & kSecond) == 0) return false;
  const uint64_t key = pair_key(first, second) + 1;
  for (size_t i = pair_home(h_first, h_second);; i = (i + 1) & mask_) {
    if (pairs_[i] == key) return true;
    if (pairs_[i] == 0) return false;
  }
}

PhraseTable count_phrases(const PhraseText& text, const std::vector<PhraseTable>& earlier,
                          const PhraseOptions& options, PhrasePassStats* stats) {
  const std::vector<std::string_view>& parts = text.parts;
  const uint64_t total = total_bytes(parts);
  const size_t n = threads_for(total, options);
  std::vector<Pos> cuts(n + 1);
  cuts[n] = {parts.size(), 0};
  for (size_t k = 1; k < n; ++k) {
    cuts[k] = std::max(cuts[k - 1],
                       safe_cut(text, place_of(parts, total * k / n), earlier, options.text));
  }
  std::vector<std::unique_ptr<Counter>> counters(n);
  run_parallel(n, [&](size_t k) {
    counters[k] = std::make_unique<Counter>(std::max<uint64_t>(options.max_pairs / n, 1));
    Counter& counter = *counters[k];
    Pipeline<Counter> pipeline(earlier, counter);
    read_range(text, cuts[k], cuts[k + 1], options.text, pipeline);
    pipeline.flush();
    const Pos next = cuts[k + 1];
    if (next.part < parts.size() && next.offset > 0) {
      // The pair across the cut: the next share's first token after the passes.
      walk_from(text, next.part, next.offset, earlier, options.text,
                [&](size_t stage, const Token& t) {
                  if (stage < earlier.size()) return true;
                  counter.pair_only(t);
                  return false;
                });
    }
  });

  // The first thread's tables become those of all words and pairs: each other thread's words
  // and pairs are added to them (its ids mapped), then its tables go.
  Counter& merged = *counters[0];
  merged.finish();
  merged.pairs().set_cap(options.max_pairs);
  detail::WordTable& words = merged.words();
  uint64_t tokens = merged.tokens(), pruned_below = merged.pairs().pruned_below();
  for (size_t k = 1; k < n; ++k) {
    Counter& c = *counters[k];
    c.finish();
    detail::WordTable& local = c.words();
    std::vector<uint32_t> to_global(local.size(), kNone);
    local.for_each([&](detail::WordTable::Slot& s) {
      detail::WordTable::Slot& g = words.insert(local.key(s.id), local.hash(s.id));
      g.value += s.value;
      to_global[s.id] = g.id;
    });
    tokens += c.tokens();
    pruned_below = std::max(pruned_below, c.pairs().pruned_below());
    c.pairs().for_each([&](const PairCounts::Slot& s) {
      merged.pairs().add(pair_key(to_global[s.key >> 32], to_global[s.key & 0xFFFFFFFFu]), s.count);
    });
    counters[k].reset();
  }
  PairCounts& pairs = merged.pairs();
  pruned_below = std::max(pruned_below, pairs.pruned_below());
  std::vector<uint64_t> counts(words.size(), 0);
  words.for_each([&](detail::WordTable::Slot& s) { counts[s.id] = s.value; });

  std::vector<PhraseTable::Phrase> phrases;
  pairs.for_each([&](const PairCounts::Slot& s) {
    const uint32_t a = static_cast<uint32_t>(s.key >> 32);
    const uint32_t b = static_cast<uint32_t>(s.key & 0xFFFFFFFFu);
    const double score = phrase_score(s.count, counts[a], counts[b], options.min_count, tokens);
    if (!(score > options.threshold)) return;
    const std::string_view first = words.key(a), second = words.key(b);
    if (first.size() + 1 + second.size() > kMaxWordBytes) return;
    phrases.push_back({std::string(first), std::string(second), s.count, score});
  });
  if (stats != nullptr) {
    stats->words = tokens;
    stats->distinct_words = words.size();
    stats->distinct_pairs = pairs.size();
    stats->pruned_below = pruned_below;
  }
  std::vector<uint64_t>().swap(counts);
  counters.clear();  // the tables `words` and `pairs` are in
  return PhraseTable(std::move(phrases));
}

std::string describe_pass(uint32_t pass, const PhraseTable& table, const PhrasePassStats& s) {
  std::string line = "pass " + std::to_string(pass) + ": " + std::to_string(s.words) + " words, " +
                     std::to_string(s.distinct_words) + " distinct, " +
                     std::to_string(s.distinct_pairs) + " pairs counted";
  if (s.pruned_below > 0) {
    line +=
        " (pairs seen " + std::to_string(s.pruned_below) + " times or fewer may have been dropped)";
  }
  line += ", " + std::to_string(table.size()) + " phrases";
  const size_t shown = std::min<size_t>(table.size(), 5);
  for (size_t i = 0; i < shown; ++i) {
    const PhraseTable::Phrase& p = table.phrases()[i];
    line += (i == 0 ? ": " : ", ") + p.first + "_" + p.second;
  }
  if (shown < table.size()) line += ", ...";
  return line;
}

std::vector<PhraseTable> learn_phrases(
    const PhraseText& text, const PhraseOptions& options,
    const std::function<void(uint32_t, const PhraseTable&, const PhrasePassStats&)>& on_pass) {
  std::vector<PhraseTable> tables;
  for (uint32_t pass = 1; pass <= options.passes; ++pass) {
    PhrasePassStats stats;
    tables.push_back(count_phrases(text, tables, options, &stats));
    if (on_pass) on_pass(pass, tables.back(), stats);
  }
  return tables;
}

PhraseRounds::PhraseRounds(const PhraseText& text, const std::vector<PhraseTable>& tables,
                           const PhraseOptions& options)
    : text_(text), tables_(tables), options_(options) {
  threads_ = threads_for(total_bytes(text_.parts), options_);
  outputs_.resize(threads_);
  thread_stats_.resize(threads_);
}

bool PhraseRounds::next(std::string& out) {
  out.clear();
  const std::vector<std::string_view>& parts = text_.parts;
  const uint64_t total = total_bytes(parts);
  const uint64_t slice = std::max<uint64_t>(options_.slice_bytes, 1);
  const Pos end{parts.size(), 0};
  const Pos at{part_, offset_};
  if (!(at < end)) return false;
  // A round: up to threads_ slices from `at`, each ending at a safe cut.
  std::vector<Pos> cuts{at};
  for (size_t k = 0; k < threads_ && cuts.back() < end; ++k) {
    const uint64_t next = offset_of(parts, cuts.back()) + slice;
    cuts.push_back(next >= total ? end
                                 : std::max(cuts.back(), safe_cut(text_, place_of(parts, next),
                                                                  tables_, options_.text)));
  }
  const size_t m = cuts.size() - 1;
  std::vector<bool> line_start(m);
  run_guarded(
      [&] {
        for (size_t k = 0; k < m; ++k) line_start[k] = at_line_start(text_, cuts[k]);
      },
      "a corpus file");
  run_parallel(m, [&](size_t k) {
    outputs_[k].clear();
    Writer writer(outputs_[k], line_start[k]);
    Pipeline<Writer> pipeline(tables_, writer);
    read_range(text_, cuts[k], cuts[k + 1], options_.text, pipeline);
    pipeline.flush();
    thread_stats_[k] = writer.stats;
  });
  size_t bytes = 0;
  for (size_t k = 0; k < m; ++k) bytes += outputs_[k].size();
  out.reserve(bytes);
  for (size_t k = 0; k < m; ++k) {
    out += outputs_[k];
    stats_.tokens += thread_stats_[k].tokens;
    stats_.joined += thread_stats_[k].joined;
    stats_.bytes += outputs_[k].size();
  }
  part_ = cuts.back().part;
  offset_ = cuts.back().offset;
  return true;
}

PhraseOutputStats apply_phrases(const PhraseText& text, const std::vector<PhraseTable>& tables,
                                const PhraseOptions& options,
                                const std::function<void(std::string_view)>& write) {
  PhraseRounds rounds(text, tables, options);
  std::string round;
  while (rounds.next(round)) write(round);
  return rounds.stats();
}

std::string apply_phrases(std::string_view text, const std::vector<PhraseTable>& tables,
                          const PhraseOptions& options) {
  std::string out;
  PhraseOptions one = options;
  one.threads = 1;
  apply_phrases(PhraseText::of(text), tables, one, [&](std::string_view s) { out.append(s); });
  return out;
}

}  // namespace pagedw2v
