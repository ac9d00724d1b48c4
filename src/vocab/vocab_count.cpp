/// @file vocab_count.cpp
/// The parallel count behind Vocab::count (vocab_count.hpp): the rounds in which the threads
/// read their chunks and the owners insert each shard's words, the codes kept for the encoder,
/// the kept words sorted shard by shard and merged into rows, and the words copied out.

#include "vocab/vocab_count.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <system_error>
#include <utility>

#include "base/error.hpp"
#include "base/string_index.hpp"
#include "text/text_chunks.hpp"
#include "text/tokenizer.hpp"
#include "text/word_table.hpp"

namespace pagedw2v {
namespace detail {
namespace {

// While counting, a slot's value is its count below bit kChunkShift and the chunk of its first
// occurrence so far above: at most 2^16 chunks.
constexpr uint32_t kChunkShift = 48;
constexpr uint64_t kCountMask = (uint64_t{1} << kChunkShift) - 1;
// The text a thread reads in a round: its words wait for their owners at 24 bytes a token.
constexpr size_t kRoundBytes = size_t{1} << 18;
// Vocab::kNoRow: no row id may reach it.
constexpr uint32_t kNoRow = StringIndex::kEmpty;

/// A word one counting thread read in a round, sorted into its shard's list for the shard's
/// owner: the owner inserts it, and writes its id over the hash for the codes.
struct ReadWord {
  uint64_t hash_or_id;  ///< the word's hash; after the owner's insert, its id in the shard
  const char* bytes;    ///< in the text, or in the round's buffer of normalised words
  uint32_t size;        ///< with kCopied while `bytes` is an offset into that buffer
  uint32_t at;          ///< its rank among the tokens its reader read in the round
};
constexpr uint32_t kCopied = uint32_t{1} << 31;

/// What one counting thread read in one round, until the owners have inserted it.
struct Round {
  bool read = false;         ///< it holds a round not yet finished
  std::string_view segment;  ///< the segment its text is in
  size_t end = 0;            ///< where in it the text ends
  bool ends_segment = false;
  bool ends_part = false;
  uint64_t tokens_before = 0;  ///< the reader's tokens before this round
  uint32_t tokens = 0;
  std::vector<std::vector<ReadWord>> lists;  ///< by shard
  std::string normalized;                    ///< words normalised into a buffer
};

/// One counting thread's share of the text, read a round at a time into two alternating Rounds.
struct Reader {
  const TextChunk* chunk = nullptr;
  size_t segment = 0;   ///< the segment of `chunk` it reads next
  size_t offset = 0;    ///< where in it
  size_t released = 0;  ///< where in the segment finished the text not handed to read_done begins
  uint64_t tokens = 0;  ///< tokens read
  Round rounds[2];
  HugePageVector<uint32_t> codes;   ///< with keep_tokens: a code a token
  std::vector<uint64_t> line_ends;  ///< with keep_tokens

  bool done() const { return chunk == nullptr || segment >= chunk->size(); }
};

// The count goes in rounds. In round k every thread reads the next slice of its chunk and
// sorts the words it meets into a list per shard; in round k + 1 the owner of each shard
// inserts those lists of every thread, in chunk order, into the shard's table (while the
// threads read their next slices); in round k + 2 each thread writes its codes from the ids
// the owners left and hands the slice back. Every distinct word is held once, however many
// threads count. A word's first occurrence is (chunk << 40 | its rank in the chunk), the least
// its owner sees.
struct RoundCount {
  RoundCount(const std::vector<TextChunk>& chunks, size_t threads, const VocabOptions& options,
             ShardedWordTable& tables);

  /// Reads every chunk and inserts its words (one thread: as they are read; more: in rounds),
  /// then finishes every round.
  void run();
  uint64_t corpus_tokens() const;

  void count_one_thread();
  void count_in_rounds();
  static void add_line_end(Reader& r);
  void finish(Reader& r, Round& round);
  std::string_view take_text(Reader& r, Round& round);
  void read(Reader& r, Round& round);
  void insert(size_t worker, int b);

  const VocabOptions& options;
  ShardedWordTable& tables;
  const size_t n;
  const size_t shards;
  uint32_t id_bits = 0;
  uint64_t id_limit = 0;
  const uint64_t slice_bytes;
  const bool keep;
  std::vector<Reader> readers;
  std::vector<HugePageVector<uint64_t>> first;
  std::atomic<bool> codes_fit{true};
};

RoundCount::RoundCount(const std::vector<TextChunk>& chunks, size_t threads,
                       const VocabOptions& options, ShardedWordTable& tables)
    : options(options),
      tables(tables),
      n(threads),
      shards(tables.shard_count()),
      slice_bytes(std::max<uint64_t>(options.read_slice_bytes, 1)),
      keep(options.keep_tokens),
      readers(threads),
      first(tables.shard_count()) {
  uint32_t shard_bits = 0;
  while ((size_t{1} << shard_bits) < shards) ++shard_bits;
  id_bits = 32 - shard_bits;
  id_limit = uint64_t{1} << id_bits;
  for (size_t t = 0; t < n; ++t) {
    Reader& r = readers[t];
    r.chunk = &chunks[t];
    for (Round& round : r.rounds) round.lists.resize(shards);
    if (keep) {
      uint64_t bytes = 0;
      for (const TextSegment& seg : chunks[t]) bytes += seg.text.size();
      // At most a token per two bytes, so that it never moves; pages not touched cost nothing.
      r.codes.reserve(bytes / 2 + 1);
    }
  }
}

void RoundCount::run() {
  if (n == 1) count_one_thread();
  if (n > 1) count_in_rounds();
  run_parallel(n, [&](size_t t) {
    for (Round& round : readers[t].rounds) finish(readers[t], round);
  });
}

uint64_t RoundCount::corpus_tokens() const {
  uint64_t tokens = 0;
  for (const Reader& r : readers) tokens += r.tokens;
  return tokens;
}

void RoundCount::count_one_thread() {
  // One thread is its own owner: each word is inserted as it is read (its slot prefetched a
  // few words ahead by the scan), in one pass over the text.
  Reader& r = readers[0];
  Round& round = r.rounds[0];
  run_parallel(1, [&](size_t) {  // on this thread, a truncated file an Error
    while (!r.done()) {
      detail::scan_words(
          take_text(r, round), options.text, [&](uint64_t h) { tables.prefetch(h); },
          [&](std::string_view w, uint64_t h) {
            const size_t p = tables.shard_of(h);
            WordTable::Slot& s = tables.shard(p).insert(w, h);
            if (s.value++ == 0) first[p].push_back(r.tokens);
            if (keep) r.codes.push_back(static_cast<uint32_t>(p << id_bits | s.id));
            ++r.tokens;
          },
          [&] {
            if (keep) add_line_end(r);
          });
      if (keep && round.ends_part) add_line_end(r);
      finish(r, round);  // no codes left to write: the slices handed back
    }
  });
  for (size_t p = 0; p < shards; ++p) {
    if (tables.shard(p).size() > id_limit) codes_fit = false;
  }
}

void RoundCount::count_in_rounds() {
  for (int k = 0; n > 1; ++k) {
    const int b = k & 1;
    bool pending = false;
    for (const Reader& r : readers) pending = pending || !r.done() || r.rounds[b ^ 1].read;
    if (!pending) break;
    run_parallel(n, [&](size_t t) {
      if (t < shards) insert(t, b ^ 1);          // round k - 1
      finish(readers[t], readers[t].rounds[b]);  // round k - 2, inserted in round k - 1
      read(readers[t], readers[t].rounds[b]);
    });
  }
}

void RoundCount::add_line_end(Reader& r) {
  if (r.line_ends.empty() || r.line_ends.back() != r.codes.size()) {
    r.line_ends.push_back(r.codes.size());
  }
}

// A reader's round once the owners are done with it: the codes written in token order, the
// text handed back in slices of read_slice_bytes (cut before a space byte) and the rest of a
// segment at its end, the lists emptied.
void RoundCount::finish(Reader& r, Round& round) {
  if (!round.read) return;
  if (keep) {
    uint32_t* const codes = r.codes.data() + round.tokens_before;
    for (size_t p = 0; p < shards; ++p) {
      const uint32_t high = static_cast<uint32_t>(p << id_bits);
      for (const ReadWord& w : round.lists[p]) {
        codes[w.at] = high | static_cast<uint32_t>(w.hash_or_id);
      }
    }
  }
  if (options.read_done) {
    const std::string_view seg = round.segment;
    const size_t done = round.end;
    while (done - r.released >= slice_bytes || (round.ends_segment && done > r.released)) {
      size_t cut = done;
      if (done - r.released > slice_bytes) {
        cut = r.released + static_cast<size_t>(slice_bytes);
        while (cut < done && !is_space_byte(static_cast<unsigned char>(seg[cut]))) ++cut;
      }
      options.read_done(seg.substr(r.released, cut - r.released));
      r.released = cut;
    }
  }
  if (round.ends_segment) r.released = 0;
  for (std::vector<ReadWord>& list : round.lists) list.clear();
  round.normalized.clear();
  round.read = false;
}

// The reader's next kRoundBytes of one segment, cut before a space byte (no word spans two),
// taken into `round`.
std::string_view RoundCount::take_text(Reader& r, Round& round) {
  const TextSegment& seg = (*r.chunk)[r.segment];
  const std::string_view rest = seg.text.substr(r.offset);
  size_t cut = rest.size();
  if (cut > kRoundBytes) {
    cut = kRoundBytes;
    while (cut < rest.size() && !is_space_byte(static_cast<unsigned char>(rest[cut]))) ++cut;
  }
  round.read = true;
  round.segment = seg.text;
  r.offset += cut;
  round.end = r.offset;
  round.ends_segment = r.offset == seg.text.size();
  round.ends_part = round.ends_segment && seg.ends_part;
  if (round.ends_segment) {
    ++r.segment;
    r.offset = 0;
  }
  round.tokens_before = r.tokens;
  return rest.substr(0, cut);
}

// Reads a round of the reader's text into its lists by shard.
void RoundCount::read(Reader& r, Round& round) {
  if (r.done()) return;
  const std::string_view text = take_text(r, round);
  const char* const begin = text.data();
  const char* const end = begin + text.size();
  uint32_t at = 0;
  bool copied = false;
  detail::scan_words(
      text, options.text, [](uint64_t) {},
      [&](std::string_view w, uint64_t h) {
        const char* bytes = w.data();
        auto size = static_cast<uint32_t>(w.size());
        if (bytes < begin || bytes >= end) {
          // Normalised in the scanner's buffer: kept by offset until the round is read.
          bytes = reinterpret_cast<const char*>(static_cast<uintptr_t>(round.normalized.size()));
          size |= kCopied;
          round.normalized.append(w);
          copied = true;
        }
        round.lists[tables.shard_of(h)].push_back({h, bytes, size, at++});
        if (keep) r.codes.push_back(0);
      },
      [&] {
        if (keep) add_line_end(r);
      });
  if (keep && round.ends_part) add_line_end(r);
  round.tokens = at;
  r.tokens += at;
  if (copied) {
    // The buffer grows no more: its offsets become pointers.
    for (std::vector<ReadWord>& list : round.lists) {
      for (ReadWord& w : list) {
        if ((w.size & kCopied) != 0) {
          w.bytes = round.normalized.data() + reinterpret_cast<uintptr_t>(w.bytes);
          w.size &= ~kCopied;
        }
      }
    }
  }
}

// The owner of shards worker, worker + n, … inserts every reader's round `b`.
void RoundCount::insert(size_t worker, int b) {
  constexpr size_t kAhead = 16;
  for (size_t p = worker; p < shards; p += n) {
    WordTable& table = tables.shard(p);
    HugePageVector<uint64_t>& firsts = first[p];
    for (size_t t = 0; t < n; ++t) {
      Round& round = readers[t].rounds[b];
      if (!round.read) continue;
      std::vector<ReadWord>& list = round.lists[p];
      const uint64_t base = static_cast<uint64_t>(t) << 40 | round.tokens_before;
      const uint64_t chunk_bits = static_cast<uint64_t>(t) << kChunkShift;
      const size_t m = list.size();
      for (size_t i = 0; i < m; ++i) {
        if (i + kAhead < m) {
          table.prefetch(list[i + kAhead].hash_or_id);
          __builtin_prefetch(list[i + kAhead].bytes);
        }
        ReadWord& w = list[i];
        WordTable::Slot& s = table.insert(std::string_view(w.bytes, w.size), w.hash_or_id);
        // Only a word met before in a later chunk (in an earlier round) reads and lowers its
        // first occurrence, so that a word met again costs no other load.
        if (s.value == 0) {
          s.value = chunk_bits | 1;
          firsts.push_back(base + w.at);
        } else {
          ++s.value;
          if (s.value > (chunk_bits | kCountMask)) {
            s.value = chunk_bits | (s.value & kCountMask);
            firsts[s.id] = base + w.at;
          }
        }
        w.hash_or_id = s.id;
      }
    }
    if (table.size() > id_limit) codes_fit = false;
  }
}

/// A kept word in its shard's list: the words are sorted by count descending, then first
/// occurrence (the one-thread stable sort's order).
struct Entry {
  uint64_t inverted_count;
  uint64_t first;  ///< chunk << 40 | rank in the chunk
  uint32_t id;
};
bool before(const Entry& a, const Entry& b) {
  return a.inverted_count != b.inverted_count ? a.inverted_count < b.inverted_count
                                              : a.first < b.first;
}

/// With keep_tokens: what the count read, as codes, for the encoder (the codes are mapped to
/// rows by copy_out).
std::shared_ptr<CountedText> counted_text(const std::vector<std::string_view>& parts, RoundCount& c,
                                          uint64_t corpus_tokens) {
  const size_t n = c.n, shards = c.shards;
  std::vector<Reader>& readers = c.readers;
  ShardedWordTable& tables = c.tables;
  const VocabOptions& options = c.options;
  const uint32_t id_bits = c.id_bits;
  auto text = std::make_shared<CountedText>();
  text->parts = parts;
  text->text = options.text;
  text->id_bits = id_bits;
  text->chunks.resize(n);
  for (size_t t = 0; t < n; ++t) {
    text->chunks[t].codes = std::move(readers[t].codes);
    text->chunks[t].line_ends = std::move(readers[t].line_ends);
  }
  text->shard_start.resize(shards);
  uint64_t start = 0;
  for (size_t p = 0; p < shards; ++p) {
    text->shard_start[p] = static_cast<uint32_t>(start);
    start += tables.shard(p).size();
  }
  if (start >= kNoRow) throw Error("vocabulary: too many words");
  text->rows.resize(start);
  // The encoder's output (at most a token per word counted) is allocated and its pages zeroed
  // meanwhile, on a thread of its own, instead of by one thread once the encoding is done.
  try {
    text->prepared_tokens = std::async(std::launch::async, [size = corpus_tokens] {
      return std::vector<uint32_t>(static_cast<size_t>(size));
    });
  } catch (const std::system_error&) {
    // No thread to be had: the encoder makes it.
  }
  return text;
}

/// Shard by shard, in parallel: the words kept sorted (Entry).
std::vector<HugePageVector<Entry>> sorted_shards(RoundCount& c) {
  const size_t n = c.n, shards = c.shards;
  ShardedWordTable& tables = c.tables;
  std::vector<HugePageVector<uint64_t>>& first = c.first;
  const VocabOptions& options = c.options;
  std::vector<HugePageVector<Entry>> kept(shards);
  run_parallel(std::min(n, shards), [&](size_t worker) {
    for (size_t p = worker; p < shards; p += n) {
      HugePageVector<Entry>& entries = kept[p];
      entries.reserve(tables.shard(p).size());
      tables.shard(p).for_each([&](WordTable::Slot& s) {
        s.value &= kCountMask;
        if (s.value >= options.min_count) entries.push_back({~s.value, first[p][s.id], s.id});
      });
      first[p] = {};
      std::sort(entries.begin(), entries.end(), before);
    }
  });
  return kept;
}

/// The rows of the vocabulary: each word's (shard, id) and its count.
struct Rows {
  HugePageVector<std::pair<uint32_t, uint32_t>> words;
  std::vector<uint64_t> counts;
};

/// The shards' sorted lists merged into rows, at most `max_vocab` of them (0: no limit), on up
/// to `n` threads.
Rows merge_rows(const std::vector<HugePageVector<Entry>>& kept, size_t n, uint64_t max_vocab) {
  const size_t shards = kept.size();
  size_t total_kept = 0;
  for (const auto& e : kept) total_kept += e.size();
  const size_t rows = max_vocab > 0 ? std::min<size_t>(total_kept, max_vocab) : total_kept;
  if (rows >= kNoRow) throw Error("vocabulary: too many words");
  Rows out;
  HugePageVector<std::pair<uint32_t, uint32_t>>& row_words = out.words;  // (shard, id) by row
  std::vector<uint64_t>& row_counts = out.counts;
  row_words = HugePageVector<std::pair<uint32_t, uint32_t>>(rows);
  row_counts.resize(rows);
  {
    // The order is cut into n ranges of keys at splitters drawn from every shard's list; thread
    // k merges every shard's part of range k with a heap, into the rows that precede it.
    std::vector<Entry> samples;
    constexpr size_t kSamples = 64;
    for (const auto& e : kept) {
      for (size_t j = 1; j < kSamples && !e.empty(); ++j)
        samples.push_back(e[e.size() * j / kSamples]);
    }
    std::sort(samples.begin(), samples.end(), before);
    const size_t ranges = rows < 4096 ? 1 : n;
    std::vector<Entry> splitters;  // ranges - 1 keys: range k ends before splitters[k]
    for (size_t k = 1; k < ranges && !samples.empty(); ++k)
      splitters.push_back(samples[samples.size() * k / ranges]);
    const size_t nr = splitters.size() + 1;
    // bounds[k * shards + p]: where range k starts in shard p's list.
    std::vector<size_t> bounds((nr + 1) * shards);
    std::vector<size_t> first_row(nr + 1, 0);
    for (size_t p = 0; p < shards; ++p) {
      bounds[p] = 0;
      for (size_t k = 1; k < nr; ++k) {
        bounds[k * shards + p] = static_cast<size_t>(
            std::lower_bound(kept[p].begin(), kept[p].end(), splitters[k - 1], before) -
            kept[p].begin());
      }
      bounds[nr * shards + p] = kept[p].size();
    }
    for (size_t k = 0; k < nr; ++k) {
      first_row[k + 1] = first_row[k];
      for (size_t p = 0; p < shards; ++p)
        first_row[k + 1] += bounds[(k + 1) * shards + p] - bounds[k * shards + p];
    }
    run_parallel(nr, [&](size_t k) {
      if (first_row[k] >= rows) return;
      std::vector<size_t> at(shards), end(shards);
      for (size_t p = 0; p < shards; ++p) {
        at[p] = bounds[k * shards + p];
        end[p] = bounds[(k + 1) * shards + p];
      }
      auto later = [&](uint32_t a, uint32_t b) { return before(kept[b][at[b]], kept[a][at[a]]); };
      std::vector<uint32_t> heap;
      for (uint32_t p = 0; p < shards; ++p) {
        if (at[p] < end[p]) heap.push_back(p);
      }
      std::make_heap(heap.begin(), heap.end(), later);
      const size_t last = std::min(first_row[k + 1], rows);
      for (size_t row = first_row[k]; row < last; ++row) {
        std::pop_heap(heap.begin(), heap.end(), later);
        const uint32_t p = heap.back();
        const Entry& e = kept[p][at[p]++];
        row_words[row] = {p, e.id};
        row_counts[row] = ~e.inverted_count;
        if (at[p] < end[p]) {
          std::push_heap(heap.begin(), heap.end(), later);
        } else {
          heap.pop_back();
        }
      }
    });
  }
  return out;
}

/// The words copied out (into one buffer, sized first) and every shard's values turned into
/// rows, in parallel, into `out`'s words and lookup table (and with `text`, its codes' rows).
/// find()'s index is left to the first find(): the encoder looks words up in the count's own
/// tables.
void copy_out(std::vector<WordTable>& merged, const Rows& r, size_t n, CountedText* text,
              WordCount& out) {
  const size_t shards = merged.size();
  const size_t rows = r.counts.size();
  const HugePageVector<std::pair<uint32_t, uint32_t>>& row_words = r.words;
  {
    // Each length reads a key where the text lies (a cache miss a word): by every thread.
    HugePageVector<uint32_t> lengths(rows);
    run_parallel(n, [&](size_t t) {
      for (size_t row = rows * t / n; row < rows * (t + 1) / n; ++row) {
        lengths[row] =
            static_cast<uint32_t>(merged[row_words[row].first].key(row_words[row].second).size());
      }
    });
    out.words = WordList::of_lengths(rows, [&](size_t row) { return lengths[row]; });
  }
  std::vector<std::vector<uint32_t>> row_of(shards);
  for (size_t p = 0; p < shards; ++p) row_of[p].assign(merged[p].size(), WordTable::kNone);
  for (size_t row = 0; row < rows; ++row) {
    row_of[row_words[row].first][row_words[row].second] = static_cast<uint32_t>(row);
  }
  run_parallel(n, [&](size_t t) {
    for (size_t row = rows * t / n; row < rows * (t + 1) / n; ++row) {
      const std::string_view key = merged[row_words[row].first].key(row_words[row].second);
      std::memcpy(out.words.data(row), key.data(), key.size());
    }
    for (size_t p = t; p < shards; p += n) {
      merged[p].for_each([&](WordTable::Slot& s) { s.value = row_of[p][s.id]; });
      if (text) {
        std::copy(row_of[p].begin(), row_of[p].end(), text->rows.begin() + text->shard_start[p]);
      }
    }
  });
  auto lookup = std::make_shared<ShardedWordTable>(shards, 0);
  for (size_t p = 0; p < shards; ++p) lookup->shard(p) = std::move(merged[p]);
  out.lookup = std::move(lookup);
}

}  // namespace

WordCount count_words(const std::vector<std::string_view>& parts, const VocabOptions& options) {
  // At most a thread per min_bytes_per_thread of text (the result does not depend on their
  // number).
  uint64_t text_bytes = 0;
  for (const std::string_view part : parts) text_bytes += part.size();
  const size_t n = static_cast<size_t>(std::clamp<uint64_t>(
      text_bytes / std::max<uint64_t>(options.min_bytes_per_thread, 1), 1,
      std::min<uint64_t>(std::max<uint32_t>(options.threads, 1), uint64_t{1} << 16)));
  const std::vector<TextChunk> chunks = split_text(parts, n);
  // One table of every distinct word, cut into as many shards by hash as a code can name, so
  // that a shard with a very frequent word does not hold the other owners up (one shard for one
  // thread).
  ShardedWordTable tables(n == 1 ? 1 : ShardedWordTable::kMaxShards, size_t{1} << 16);
  RoundCount count(chunks, n, options, tables);
  count.run();
  const bool keep_tokens = count.keep && count.codes_fit;  // else the encoder reads the text
  WordCount out;
  out.corpus_tokens = count.corpus_tokens();
  if (keep_tokens) out.text = counted_text(parts, count, out.corpus_tokens);
  count.readers.clear();
  std::vector<HugePageVector<Entry>> kept = sorted_shards(count);
  std::vector<WordTable> merged(count.shards);
  for (size_t p = 0; p < count.shards; ++p) merged[p] = std::move(tables.shard(p));
  Rows rows = merge_rows(kept, n, options.max_vocab);
  kept.clear();
  copy_out(merged, rows, n, out.text.get(), out);
  out.counts = std::move(rows.counts);
  return out;
}

}  // namespace detail
}  // namespace pagedw2v
