#include "vocab.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <numeric>

#include "error.hpp"
#include "io/atomic_file.hpp"
#include "mapped_file.hpp"
#include "text_chunks.hpp"
#include "tokenizer.hpp"
#include "word_table.hpp"

namespace pagedw2v {

Vocab Vocab::count_serial(std::string_view text, const VocabOptions& options) {
  // Normalised words may live in the tokenizer's buffer, so the index keeps its own copies.
  std::deque<std::string> keys;
  detail::StringIndex index(1 << 16);
  std::vector<uint64_t> counts;
  counts.reserve(1 << 16);
  uint64_t tokens = 0;
  tokenize(
      text, options.text,
      [&](std::string_view w) {
        uint32_t id = index.find(w);
        if (id == detail::StringIndex::kEmpty) {
          bool inserted;
          keys.emplace_back(w);
          id = index.insert(keys.back(), &inserted);
          counts.push_back(0);
        }
        ++counts[id];
        ++tokens;
      },
      [] {});

  // Ids are in first-occurrence order, so a stable sort by count gives the tie-break.
  std::vector<uint32_t> order;
  order.reserve(counts.size());
  for (uint32_t id = 0; id < counts.size(); ++id) {
    if (counts[id] >= options.min_count) order.push_back(id);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return counts[a] > counts[b]; });
  if (options.max_vocab > 0 && order.size() > options.max_vocab) order.resize(options.max_vocab);

  std::vector<std::string> words;
  std::vector<uint64_t> kept;
  words.reserve(order.size());
  kept.reserve(order.size());
  for (uint32_t id : order) {
    words.emplace_back(index.key(id));
    kept.push_back(counts[id]);
  }
  Vocab v = from_words(std::move(words), std::move(kept));
  v.corpus_tokens_ = tokens;
  v.distinct_words_ = counts.size();
  return v;
}

Vocab Vocab::count(std::string_view text, const VocabOptions& options) {
  return count(std::vector<std::string_view>{text}, options);
}

namespace {

/// A barrier for a fixed team of threads, which any of them can break (when it fails) so that
/// the others stop waiting.
class Barrier {
 public:
  explicit Barrier(size_t n) : n_(n) {}
  /// Waits until every thread has arrived; false when the barrier was broken.
  bool wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (broken_) return false;
    const uint64_t generation = generation_;
    if (++arrived_ == n_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
      return true;
    }
    cv_.wait(lock, [&] { return generation_ != generation || broken_; });
    return !broken_;
  }
  void break_all() {
    const std::lock_guard<std::mutex> lock(mutex_);
    broken_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  size_t n_;
  size_t arrived_ = 0;
  uint64_t generation_ = 0;
  bool broken_ = false;
};

/// Where a thread stands in its chunk: the segment and the offset in it.
struct ChunkCursor {
  size_t segment = 0;
  size_t offset = 0;
};

/// A word as a counting thread hands it to the thread of its shard, in 8-byte units: its hash,
/// its position (chunk << 40 | token number in the chunk) << 8 | its length, then its bytes.
/// The word travels with its bytes, so that the shard's thread never reads the corpus.
constexpr uint32_t kPositionShift = 8;
constexpr uint32_t kChunkShift = 40;

/// Words handed over, kept between rounds so that their memory is allocated (and zeroed) once.
struct WordList {
  std::vector<uint64_t> units;
  size_t size = 0;

  uint64_t* grow(size_t n) {
    if (size + n > units.size()) units.resize(std::max(units.size() * 2, size + n + 4096));
    uint64_t* out = units.data() + size;
    size += n;
    return out;
  }
};

inline void put_word(WordList& out, std::string_view w, uint64_t h, uint64_t pos) {
  const size_t words = (w.size() + 7) / 8;
  uint64_t* at = out.grow(2 + words);
  if (words > 0) at[1 + words] = 0;  // the padding of the last unit
  at[0] = h;
  at[1] = pos << kPositionShift | w.size();
  std::memcpy(at + 2, w.data(), w.size());
}

/// The record after `r`.
inline const uint64_t* next_word(const uint64_t* r) { return r + 2 + ((r[1] & 0xFF) + 7) / 8; }

}  // namespace

Vocab Vocab::count(const std::vector<std::string_view>& parts, const VocabOptions& options) {
  using detail::WordTable;
  // At most a thread per min_bytes_per_thread of text (the result does not depend on their
  // number).
  uint64_t text_bytes = 0;
  for (const std::string_view part : parts) text_bytes += part.size();
  const size_t n = static_cast<size_t>(
      std::clamp<uint64_t>(text_bytes / std::max<uint64_t>(options.min_bytes_per_thread, 1), 1,
                           std::max<uint32_t>(options.threads, 1)));
  const std::vector<TextChunk> chunks = split_text(parts, n);
  const size_t shards = detail::ShardedWordTable(n, 0).shard_count();
  const bool keep = options.keep_tokens;
  const uint64_t round_bytes = std::max<uint64_t>(options.round_bytes, 1);

  // The count goes in rounds. In each, every thread reads the next round_bytes of its chunk and
  // hands each word to its shard (by hash); then every thread counts the words handed to its
  // own shards (p % n == t), in one table per shard. A word is met by one table only, which
  // stays small and is never merged; a round's hand-over is all the memory the count needs
  // beside the tables (and the tokens, with keep_tokens). Each word keeps the least position it
  // was met at: its first occurrence, which breaks count ties.
  // Tables start small for a small text (many shards of a few words each), and grow.
  std::vector<WordTable> tables;
  tables.reserve(shards);
  for (size_t p = 0; p < shards; ++p) {
    tables.emplace_back(
        static_cast<size_t>(std::clamp<uint64_t>(text_bytes / 64 / shards, 16, 4096)));
  }
  std::vector<std::vector<uint64_t>> first(shards);  ///< by shard, by id
  std::vector<WordList> handed(n * shards);          ///< [thread * shards + shard]
  std::vector<uint64_t> tokens(n, 0);
  // With keep_tokens: each chunk's tokens as shards in order, each shard's ids in order, and
  // the token counts at which lines ended.
  std::vector<std::vector<uint8_t>> token_shards(keep ? n : 0);
  std::vector<std::vector<uint32_t>> token_ids(keep ? n * shards : 0);
  std::vector<std::vector<uint64_t>> line_ends(keep ? n : 0);
  std::vector<ChunkCursor> cursors(n);
  Barrier barrier(n);
  std::atomic<size_t> unfinished{n};

  run_parallel(n, [&](size_t t) {
    try {
      for (;;) {
        // Reading: up to round_bytes of the chunk, each piece ending before a space byte.
        run_guarded(
            [&] {
              const TextChunk& chunk = chunks[t];
              ChunkCursor& at = cursors[t];
              uint64_t budget = round_bytes;
              uint64_t& k = tokens[t];
              const uint64_t chunk_base = static_cast<uint64_t>(t) << kChunkShift;
              WordList* out = &handed[t * shards];
              auto line_end = [&] {
                std::vector<uint64_t>& ends = line_ends[t];
                if (ends.empty() || ends.back() != k) ends.push_back(k);
              };
              while (budget > 0 && at.segment < chunk.size()) {
                const TextSegment& seg = chunk[at.segment];
                const std::string_view text = seg.text;
                size_t end = at.offset + static_cast<size_t>(
                                             std::min<uint64_t>(budget, text.size() - at.offset));
                while (end < text.size() && !is_space_byte(static_cast<unsigned char>(text[end])))
                  ++end;
                tokenize(
                    text.substr(at.offset, end - at.offset), options.text,
                    [&](std::string_view w) {
                      const uint64_t h = detail::hash_bytes(w);
                      const size_t p = (h >> 32) & (shards - 1);
                      put_word(out[p], w, h, chunk_base | k);
                      if (keep) token_shards[t].push_back(static_cast<uint8_t>(p));
                      ++k;
                    },
                    [&] {
                      if (keep) line_end();
                    });
                budget -= std::min<uint64_t>(budget, end - at.offset);
                at.offset = end;
                if (end == text.size()) {
                  if (keep && seg.ends_part) line_end();
                  ++at.segment;
                  at.offset = 0;
                }
              }
              if (at.segment == chunk.size() && at.offset == 0) {
                at.offset = 1;  // counted as finished once
                --unfinished;
              }
            },
            "a corpus file");
        if (!barrier.wait()) return;
        // Counting: the words handed to this thread's shards, thread by thread. The slot of the
        // word kAhead records on is prefetched, and so is the first occurrence of a word met
        // before, which is lowered kAhead words later where this one came first (a word met in
        // a later chunk in an earlier round): their cache misses overlap.
        for (size_t p = t; p < shards; p += n) {
          WordTable& table = tables[p];
          std::vector<uint64_t>& firsts = first[p];
          for (size_t u = 0; u < n; ++u) {
            WordList& in = handed[u * shards + p];
            std::vector<uint32_t>* ids = keep ? &token_ids[u * shards + p] : nullptr;
            constexpr size_t kAhead = 16;
            std::pair<uint32_t, uint64_t> pending[kAhead];  // (id, position)
            size_t npending = 0;
            auto lower = [&](const std::pair<uint32_t, uint64_t>& e) {
              uint64_t& f = firsts[e.first];
              f = std::min(f, e.second);
            };
            const uint64_t* q = in.units.data();
            const uint64_t* const stop = q + in.size;
            const uint64_t* ahead = q;
            for (size_t j = 0; j < kAhead && ahead < stop; ++j, ahead = next_word(ahead)) {
              table.prefetch(ahead[0]);
            }
            for (; q < stop; q = next_word(q)) {
              if (ahead < stop) {
                table.prefetch(ahead[0]);
                ahead = next_word(ahead);
              }
              const std::string_view w(reinterpret_cast<const char*>(q + 2), q[1] & 0xFF);
              WordTable::Slot& s = table.insert(w, q[0]);
              if (s.value++ == 0) {
                firsts.push_back(q[1] >> kPositionShift);
              } else {
                __builtin_prefetch(&firsts[s.id]);
                std::pair<uint32_t, uint64_t>& slot = pending[npending++ % kAhead];
                if (npending > kAhead) lower(slot);
                slot = {s.id, q[1] >> kPositionShift};
              }
              if (ids != nullptr) ids->push_back(s.id);
            }
            for (size_t j = 0; j < std::min(npending, kAhead); ++j) lower(pending[j]);
            in.size = 0;
          }
        }
        const bool more = unfinished.load() > 0;
        if (!barrier.wait()) return;
        if (!more) break;
      }
    } catch (...) {
      barrier.break_all();
      throw;
    }
  });
  handed = {};
  uint64_t corpus_tokens = 0;
  for (const uint64_t k : tokens) corpus_tokens += k;

  // By shard, in parallel: the words kept, sorted by count descending, then first occurrence
  // (the one-thread stable sort's order).
  struct Entry {
    uint64_t inverted_count;
    uint64_t first;
    uint32_t id;
  };
  auto before = [](const Entry& a, const Entry& b) {
    return a.inverted_count != b.inverted_count ? a.inverted_count < b.inverted_count
                                                : a.first < b.first;
  };
  std::vector<std::vector<Entry>> kept(shards);
  run_parallel(std::min(n, shards), [&](size_t worker) {
    for (size_t p = worker; p < shards; p += n) {
      std::vector<Entry>& entries = kept[p];
      tables[p].for_each([&](WordTable::Slot& s) {
        if (s.value >= options.min_count) entries.push_back({~s.value, first[p][s.id], s.id});
      });
      first[p] = {};
      std::sort(entries.begin(), entries.end(), before);
    }
  });

  // The shards' sorted lists merged into rows, in parallel: splitters drawn from the lists cut
  // the order into n ranges (keys are distinct: no word shares a first occurrence), each found in
  // every list by binary search and merged by a thread of its own.
  size_t total_kept = 0;
  for (const auto& e : kept) total_kept += e.size();
  const size_t rows =
      options.max_vocab > 0 ? std::min<size_t>(total_kept, options.max_vocab) : total_kept;
  if (rows >= kNoRow) throw Error("vocabulary: too many words");
  std::vector<Entry> splitters;
  {
    std::vector<Entry> sample;
    const size_t step = std::max<size_t>(1, total_kept / (n * 16 + 1));
    for (const auto& list : kept) {
      for (size_t i = step / 2; i < list.size(); i += step) sample.push_back(list[i]);
    }
    std::sort(sample.begin(), sample.end(), before);
    for (size_t j = 1; j < n && !sample.empty(); ++j)
      splitters.push_back(sample[sample.size() * j / n]);
  }
  const size_t ranges = splitters.size() + 1;
  // cut[j * shards + p]: where range j begins in shard p's list.
  std::vector<size_t> cut((ranges + 1) * shards);
  for (size_t p = 0; p < shards; ++p) {
    cut[p] = 0;
    for (size_t j = 1; j < ranges; ++j) {
      cut[j * shards + p] = static_cast<size_t>(
          std::lower_bound(kept[p].begin(), kept[p].end(), splitters[j - 1], before) -
          kept[p].begin());
    }
    cut[ranges * shards + p] = kept[p].size();
  }
  std::vector<std::pair<uint32_t, uint32_t>> row_words(rows);  // (shard, id) by row
  std::vector<uint64_t> row_counts(rows);
  std::vector<std::vector<uint32_t>> row_of(shards);
  run_parallel(std::min(n, shards), [&](size_t worker) {
    for (size_t p = worker; p < shards; p += n)
      row_of[p].assign(tables[p].size(), WordTable::kNone);
  });
  run_parallel(ranges, [&](size_t j) {
    std::vector<size_t> at(shards), end(shards);
    size_t row = 0;
    for (size_t p = 0; p < shards; ++p) {
      at[p] = cut[j * shards + p];
      end[p] = cut[(j + 1) * shards + p];
      row += at[p];
    }
    auto later = [&](uint32_t a, uint32_t b) { return before(kept[b][at[b]], kept[a][at[a]]); };
    std::vector<uint32_t> heap;
    for (uint32_t p = 0; p < shards; ++p) {
      if (at[p] < end[p]) heap.push_back(p);
    }
    std::make_heap(heap.begin(), heap.end(), later);
    while (!heap.empty() && row < rows) {
      std::pop_heap(heap.begin(), heap.end(), later);
      const uint32_t p = heap.back();
      const Entry& e = kept[p][at[p]++];
      row_words[row] = {p, e.id};
      row_counts[row] = ~e.inverted_count;
      row_of[p][e.id] = static_cast<uint32_t>(row);
      ++row;
      if (at[p] < end[p]) {
        std::push_heap(heap.begin(), heap.end(), later);
      } else {
        heap.pop_back();
      }
    }
  });
  kept = {};

  // The words copied out, every shard's values turned into rows and the vocabulary's own index
  // filled (from the hashes the shards keep; rows claim slots with compare-and-swap, and the
  // words are known to be distinct), in parallel.
  Vocab v;
  v.words_.resize(rows);
  size_t capacity = 64;
  while (capacity < rows * 2) capacity <<= 1;
  v.slots_.assign(capacity, kNoRow);
  v.mask_ = capacity - 1;
  std::shared_ptr<detail::CountedText> text;
  if (keep) {
    text = std::make_shared<detail::CountedText>();
    text->parts = parts;
    text->text = options.text;
    text->chunks.resize(n);
  }
  run_parallel(n, [&](size_t t) {
    for (size_t row = rows * t / n; row < rows * (t + 1) / n; ++row) {
      const WordTable& shard = tables[row_words[row].first];
      const uint32_t id = row_words[row].second;
      v.words_[row] = shard.key(id);
      for (size_t i = shard.hash(id) & v.mask_;; i = (i + 1) & v.mask_) {
        uint32_t empty = kNoRow;
        if (__atomic_compare_exchange_n(&v.slots_[i], &empty, static_cast<uint32_t>(row), false,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
          break;
        }
      }
    }
    for (size_t p = t; p < shards; p += n) {
      tables[p].for_each([&](WordTable::Slot& s) { s.value = row_of[p][s.id]; });
    }
    if (!keep) return;
    // This chunk's tokens as rows: each shard's ids taken in order.
    // Each shard's ids become rows first, one shard at a time (its row_of stays in cache), and
    // are then taken in token order.
    detail::CountedText::Chunk& chunk = text->chunks[t];
    const std::vector<uint8_t>& seq = token_shards[t];
    chunk.rows.resize(seq.size());
    std::vector<const uint32_t*> next(shards);
    for (size_t p = 0; p < shards; ++p) {
      std::vector<uint32_t>& ids = token_ids[t * shards + p];
      const uint32_t* rows_of_ids = row_of[p].data();
      for (uint32_t& id : ids) id = rows_of_ids[id];
      next[p] = ids.data();
    }
    for (size_t i = 0; i < seq.size(); ++i) chunk.rows[i] = *next[seq[i]]++;
    token_shards[t] = {};
    for (size_t p = 0; p < shards; ++p) token_ids[t * shards + p] = {};
    chunk.line_ends = std::move(line_ends[t]);
  });
  auto lookup = std::make_shared<detail::ShardedWordTable>(shards, 0);
  v.distinct_words_ = 0;
  for (size_t p = 0; p < shards; ++p) {
    v.distinct_words_ += tables[p].size();
    lookup->shard(p) = std::move(tables[p]);
  }
  v.counts_ = std::move(row_counts);
  v.total_ = std::accumulate(v.counts_.begin(), v.counts_.end(), uint64_t{0});
  v.corpus_tokens_ = corpus_tokens;
  v.lookup_ = std::move(lookup);
  v.counted_text_ = std::move(text);
  return v;
}

Vocab Vocab::from_words(std::vector<std::string> words, std::vector<uint64_t> counts) {
  if (words.size() != counts.size()) throw Error("vocabulary: words and counts differ in length");
  if (words.size() >= detail::StringIndex::kEmpty) throw Error("vocabulary: too many words");
  Vocab v;
  v.words_ = std::move(words);
  v.counts_ = std::move(counts);
  v.total_ = std::accumulate(v.counts_.begin(), v.counts_.end(), uint64_t{0});
  v.build_index();
  return v;
}

void Vocab::build_index() {
  size_t capacity = 64;
  while (capacity < words_.size() * 2) capacity <<= 1;
  slots_.assign(capacity, kNoRow);
  mask_ = capacity - 1;
  // Slots are found a batch at a time and prefetched first: the misses of a batch overlap,
  // which makes building the index of a large vocabulary several times faster.
  constexpr uint32_t kBatch = 32;
  size_t home[kBatch];
  const uint32_t n = static_cast<uint32_t>(words_.size());
  for (uint32_t base = 0; base < n; base += kBatch) {
    const uint32_t m = std::min(kBatch, n - base);
    for (uint32_t j = 0; j < m; ++j) {
      home[j] = detail::hash_bytes(words_[base + j]) & mask_;
      __builtin_prefetch(&slots_[home[j]]);
    }
    for (uint32_t j = 0; j < m; ++j) {
      const std::string& w = words_[base + j];
      size_t i = home[j];
      for (; slots_[i] != kNoRow; i = (i + 1) & mask_) {
        if (words_[slots_[i]] == w) throw Error("vocabulary: duplicate word '" + w + "'");
      }
      slots_[i] = base + j;
    }
  }
}

Vocab Vocab::load_tsv(const std::string& path) {
  MappedFile file(path);
  std::string_view text = file.view();
  std::vector<std::string> words;
  std::vector<uint64_t> counts;
  size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const size_t tab = line.rfind('\t');
    uint64_t count = 0;
    const char* num_end = line.data() + line.size();
    const auto parsed = tab == std::string_view::npos
                            ? std::from_chars_result{line.data(), std::errc::invalid_argument}
                            : std::from_chars(line.data() + tab + 1, num_end, count);
    // A count past 2^64 - 1 is out of range (from_chars says so), not the number it wraps to.
    if (tab == std::string_view::npos || tab == 0 || tab + 1 == line.size() ||
        parsed.ptr != num_end || parsed.ec != std::errc()) {
      throw Error("'" + path + "' line " + std::to_string(line_no) + ": expected word<TAB>count");
    }
    words.emplace_back(line.substr(0, tab));
    counts.push_back(count);
  }
  return from_words(std::move(words), std::move(counts));
}

void Vocab::save_tsv(const std::string& path) const {
  AtomicFile out(path);
  std::string buf;
  for (size_t i = 0; i < words_.size(); ++i) {
    buf += words_[i];
    buf += '\t';
    buf += std::to_string(counts_[i]);
    buf += '\n';
    if (buf.size() > (1 << 20)) {
      out.write(buf);
      buf.clear();
    }
  }
  out.write(buf);
  out.commit();
}

}  // namespace pagedw2v
