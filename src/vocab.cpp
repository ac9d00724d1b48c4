#include "vocab.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstring>
#include <deque>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <system_error>

#include "error.hpp"
#include "io/atomic_file.hpp"
#include "mapped_file.hpp"
#include "text_chunks.hpp"
#include "tokenizer.hpp"
#include "utf8.hpp"
#include "word_table.hpp"

namespace pagedw2v {

namespace detail {

std::vector<uint32_t> CountedText::take_tokens(size_t size) const {
  std::future<std::vector<uint32_t>> prepared;
  {
    const std::lock_guard<std::mutex> lock(taking);
    prepared = std::move(prepared_tokens);
  }
  if (prepared.valid()) {
    std::vector<uint32_t> tokens = prepared.get();
    // Not when it is much larger (many words dropped): the excess would stay held.
    if (tokens.size() >= size && tokens.size() - size <= size / 8) return tokens;
  }
  return std::vector<uint32_t>(size);
}

}  // namespace detail

struct Vocab::Index {
  std::once_flag once;
  std::atomic<bool> built{false};
  std::vector<uint32_t> slots;
  size_t mask = 0;
};

int64_t Vocab::find(std::string_view word) const {
  Index* index = index_.get();
  if (index == nullptr) return -1;
  std::call_once(index->once, [&] { build_index(*index); });
  for (size_t i = detail::hash_bytes(word) & index->mask;; i = (i + 1) & index->mask) {
    const uint32_t id = index->slots[i];
    if (id == kNoRow) return -1;
    if (words_[id] == word) return static_cast<int64_t>(id);
  }
}

bool Vocab::index_built() const {
  return index_ != nullptr && index_->built.load(std::memory_order_acquire);
}

void Vocab::words_are_packed() {
  throw std::logic_error("the vocabulary's words are packed (Vocab::pack_words)");
}

void Vocab::pack_words(uint32_t threads) {
  if (packed_) return;
  packed_ = std::make_unique<const PackedWords>(words_, threads);
  words_ = WordList();
  index_.reset();
}

Vocab Vocab::with_words_unpacked(uint32_t threads) const {
  Vocab v;
  if (packed_) {
    v.words_ = packed_->unpack(threads);
  } else {
    v.words_ = words_;
  }
  v.counts_ = counts_;
  v.total_ = total_;
  v.corpus_tokens_ = corpus_tokens_;
  v.distinct_words_ = distinct_words_;
  return v;
}

void Vocab::for_each_word_run(const std::function<void(uint64_t, const WordList&)>& f) const {
  if (!packed_) {
    f(0, words_);
    return;
  }
  for (size_t k = 0; k < packed_->slices(); ++k) {
    f(k * PackedWords::kSliceWords, packed_->slice(k));
  }
}

uint64_t Vocab::word_bytes() const {
  return packed_ ? packed_->bytes() - packed_->size() : words_.bytes() - words_.size();
}

std::vector<std::string> Vocab::word_strings() const {
  std::vector<std::string> out;
  out.reserve(size());
  for_each_word_run([&](uint64_t, const WordList& run) {
    for (const std::string_view w : run) out.emplace_back(w);
  });
  return out;
}

size_t Vocab::memory_bytes() const {
  size_t bytes = words_.memory_bytes() + counts_.memory_bytes();
  if (packed_) bytes += packed_->memory_bytes();
  if (index_built()) bytes += index_->slots.capacity() * sizeof(uint32_t);
  return bytes;
}

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

  WordList words =
      WordList::of_lengths(order.size(), [&](size_t row) { return index.key(order[row]).size(); });
  std::vector<uint64_t> kept;
  kept.reserve(order.size());
  for (size_t row = 0; row < order.size(); ++row) {
    const std::string_view key = index.key(order[row]);
    std::memcpy(words.data(row), key.data(), key.size());
    kept.push_back(counts[order[row]]);
  }
  Vocab v = from_word_list(std::move(words), std::move(kept));
  v.corpus_tokens_ = tokens;
  v.distinct_words_ = counts.size();
  return v;
}

Vocab Vocab::count(std::string_view text, const VocabOptions& options) {
  return count(std::vector<std::string_view>{text}, options);
}

namespace {

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

}  // namespace

Vocab Vocab::count(const std::vector<std::string_view>& parts, const VocabOptions& options) {
  using detail::WordTable;
  // While counting, a slot's value is its count below bit kChunkShift and the chunk of its first
  // occurrence so far above: at most 2^16 chunks.
  constexpr uint32_t kChunkShift = 48;
  constexpr uint64_t kCountMask = (uint64_t{1} << kChunkShift) - 1;
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
  detail::ShardedWordTable tables(n == 1 ? 1 : detail::ShardedWordTable::kMaxShards,
                                  size_t{1} << 16);
  const size_t shards = tables.shard_count();
  uint32_t shard_bits = 0;
  while ((size_t{1} << shard_bits) < shards) ++shard_bits;
  const uint32_t id_bits = 32 - shard_bits;
  const uint64_t id_limit = uint64_t{1} << id_bits;
  const uint64_t slice_bytes = std::max<uint64_t>(options.read_slice_bytes, 1);
  // The text a thread reads in a round: its words wait for their owners at 24 bytes a token.
  constexpr size_t kRoundBytes = size_t{1} << 18;

  // The count goes in rounds. In round k every thread reads the next slice of its chunk and
  // sorts the words it meets into a list per shard; in round k + 1 the owner of each shard
  // inserts those lists of every thread, in chunk order, into the shard's table (while the
  // threads read their next slices); in round k + 2 each thread writes its codes from the ids
  // the owners left and hands the slice back. Every distinct word is held once, however many
  // threads count. A word's first occurrence is (chunk << 40 | its rank in the chunk), the least
  // its owner sees.
  const bool keep = options.keep_tokens;
  std::vector<Reader> readers(n);
  std::vector<HugePageVector<uint64_t>> first(shards);
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
  std::atomic<bool> codes_fit{true};
  auto add_line_end = [](Reader& r) {
    if (r.line_ends.empty() || r.line_ends.back() != r.codes.size()) {
      r.line_ends.push_back(r.codes.size());
    }
  };
  // A reader's round once the owners are done with it: the codes written in token order, the
  // text handed back in slices of read_slice_bytes (cut before a space byte) and the rest of a
  // segment at its end, the lists emptied.
  auto finish = [&](Reader& r, Round& round) {
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
  };
  // The reader's next kRoundBytes of one segment, cut before a space byte (no word spans two),
  // taken into `round`.
  auto take_text = [&](Reader& r, Round& round) {
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
  };
  // Reads a round of the reader's text into its lists by shard.
  auto read = [&](Reader& r, Round& round) {
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
  };
  // The owner of shards worker, worker + n, … inserts every reader's round `b`.
  auto insert = [&](size_t worker, int b) {
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
  };
  if (n == 1) {
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
  run_parallel(n, [&](size_t t) {
    for (Round& round : readers[t].rounds) finish(readers[t], round);
  });
  const bool keep_tokens = keep && codes_fit;  // else the encoder reads the text
  uint64_t corpus_tokens = 0;
  for (const Reader& r : readers) corpus_tokens += r.tokens;

  // Shard by shard, in parallel: the words kept sorted by count descending, then first
  // occurrence (the one-thread stable sort's order).
  struct Entry {
    uint64_t inverted_count;
    uint64_t first;  ///< chunk << 40 | rank in the chunk
    uint32_t id;
  };
  auto before = [](const Entry& a, const Entry& b) {
    return a.inverted_count != b.inverted_count ? a.inverted_count < b.inverted_count
                                                : a.first < b.first;
  };
  std::vector<HugePageVector<Entry>> kept(shards);
  // With keep_tokens, the codes are mapped to rows further down.
  std::shared_ptr<detail::CountedText> text;
  if (keep_tokens) {
    text = std::make_shared<detail::CountedText>();
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
  }
  readers.clear();
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
  std::vector<WordTable> merged(shards);
  for (size_t p = 0; p < shards; ++p) merged[p] = std::move(tables.shard(p));
  // The shards' sorted lists merged into rows.
  size_t total_kept = 0;
  for (const auto& e : kept) total_kept += e.size();
  const size_t rows =
      options.max_vocab > 0 ? std::min<size_t>(total_kept, options.max_vocab) : total_kept;
  if (rows >= kNoRow) throw Error("vocabulary: too many words");
  HugePageVector<std::pair<uint32_t, uint32_t>> row_words(rows);  // (shard, id) by row
  std::vector<uint64_t> row_counts(rows);
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
  kept.clear();

  // The words copied out (into one buffer, sized first) and every shard's values turned into
  // rows, in parallel. find()'s index is left to the first find(): the encoder looks words up in
  // the count's own tables.
  Vocab v;
  {
    // Each length reads a key where the text lies (a cache miss a word): by every thread.
    HugePageVector<uint32_t> lengths(rows);
    run_parallel(n, [&](size_t t) {
      for (size_t row = rows * t / n; row < rows * (t + 1) / n; ++row) {
        lengths[row] =
            static_cast<uint32_t>(merged[row_words[row].first].key(row_words[row].second).size());
      }
    });
    v.words_ = WordList::of_lengths(rows, [&](size_t row) { return lengths[row]; });
  }
  std::vector<std::vector<uint32_t>> row_of(shards);
  for (size_t p = 0; p < shards; ++p) row_of[p].assign(merged[p].size(), WordTable::kNone);
  for (size_t row = 0; row < rows; ++row) {
    row_of[row_words[row].first][row_words[row].second] = static_cast<uint32_t>(row);
  }
  run_parallel(n, [&](size_t t) {
    for (size_t row = rows * t / n; row < rows * (t + 1) / n; ++row) {
      const std::string_view key = merged[row_words[row].first].key(row_words[row].second);
      std::memcpy(v.words_.data(row), key.data(), key.size());
    }
    for (size_t p = t; p < shards; p += n) {
      merged[p].for_each([&](WordTable::Slot& s) { s.value = row_of[p][s.id]; });
      if (text) {
        std::copy(row_of[p].begin(), row_of[p].end(), text->rows.begin() + text->shard_start[p]);
      }
    }
  });
  auto lookup = std::make_shared<detail::ShardedWordTable>(shards, 0);
  for (size_t p = 0; p < shards; ++p) lookup->shard(p) = std::move(merged[p]);
  v.total_ = std::accumulate(row_counts.begin(), row_counts.end(), uint64_t{0});
  v.counts_ = CountList(row_counts);
  v.corpus_tokens_ = corpus_tokens;
  v.distinct_words_ = 0;
  for (size_t p = 0; p < shards; ++p) v.distinct_words_ += lookup->shard(p).size();
  v.lookup_ = std::move(lookup);
  if (text) text->all_kept = rows == v.distinct_words_;
  v.counted_text_ = std::move(text);
  v.index_ = std::make_shared<Index>();
  return v;
}

Vocab Vocab::from_words(const std::vector<std::string>& words, std::vector<uint64_t> counts) {
  if (words.size() != counts.size()) throw Error("vocabulary: words and counts differ in length");
  return from_word_list(WordList(words), std::move(counts));
}

Vocab Vocab::from_word_list(WordList words, std::vector<uint64_t> counts) {
  if (words.size() != counts.size()) throw Error("vocabulary: words and counts differ in length");
  if (words.size() >= detail::StringIndex::kEmpty) throw Error("vocabulary: too many words");
  Vocab v;
  v.words_ = std::move(words);
  v.words_.shrink_to_fit();
  v.total_ = std::accumulate(counts.begin(), counts.end(), uint64_t{0});
  v.counts_ = CountList(counts);
  v.index_ = std::make_shared<Index>();
  std::call_once(v.index_->once, [&] { v.build_index(*v.index_); });
  return v;
}

void Vocab::build_index(Index& index) const {
  size_t capacity = 64;
  while (capacity < words_.size() * 2) capacity <<= 1;
  std::vector<uint32_t>& slots = index.slots;
  slots.assign(capacity, kNoRow);
  const size_t mask = capacity - 1;
  index.mask = mask;
  // Slots are found a batch at a time and prefetched first: the misses of a batch overlap,
  // which makes building the index of a large vocabulary several times faster.
  constexpr uint32_t kBatch = 32;
  size_t home[kBatch];
  const uint32_t n = static_cast<uint32_t>(words_.size());
  for (uint32_t base = 0; base < n; base += kBatch) {
    const uint32_t m = std::min(kBatch, n - base);
    for (uint32_t j = 0; j < m; ++j) {
      home[j] = detail::hash_bytes(words_[base + j]) & mask;
      __builtin_prefetch(&slots[home[j]]);
    }
    for (uint32_t j = 0; j < m; ++j) {
      const std::string_view w = words_[base + j];
      size_t i = home[j];
      for (; slots[i] != kNoRow; i = (i + 1) & mask) {
        if (words_[slots[i]] == w) {
          throw Error("vocabulary: duplicate word '" + std::string(w) + "'");
        }
      }
      slots[i] = base + j;
    }
  }
  index.built.store(true, std::memory_order_release);
}

void Vocab::check_file_word(std::string_view word, uint64_t count, uint64_t* total,
                            bool tokenizer_words, const std::string& where) {
  // No format can store such a word as one word (a checkpoint included).
  if (const char* why = unstorable_word(word)) {
    throw Error(where + "the word " + why + " (the tokenizer splits words there)");
  }
  // A vocabulary to train with: only words the tokenizer makes can match the corpus.
  if (tokenizer_words && word.size() > kMaxWordBytes) {
    throw Error(where + "a word of " + std::to_string(word.size()) +
                " bytes; words hold at most " + std::to_string(kMaxWordBytes) +
                " (the tokenizer cuts longer ones)");
  }
  if (tokenizer_words && !is_valid_utf8(word)) {
    throw Error(where + "the word is not UTF-8 (the tokenizer repairs every word to UTF-8)");
  }
  if (__builtin_add_overflow(*total, count, total)) {
    throw Error(where + "the counts add up past 2^64 - 1");
  }
}

Vocab Vocab::load_tsv(const std::string& path, bool tokenizer_words) {
  const MappedFile file(path);
  WordList words;
  std::vector<uint64_t> counts;
  uint64_t total = 0;
  file.read([&](std::string_view text) {
    size_t line_no = 0;
    while (!text.empty()) {
      ++line_no;
      const size_t nl = text.find('\n');
      std::string_view line = text.substr(0, nl);
      text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.empty()) continue;
      const std::string where = "'" + path + "' line " + std::to_string(line_no) + ": ";
      const size_t tab = line.rfind('\t');
      uint64_t count = 0;
      const char* num_end = line.data() + line.size();
      const auto parsed = tab == std::string_view::npos
                              ? std::from_chars_result{line.data(), std::errc::invalid_argument}
                              : std::from_chars(line.data() + tab + 1, num_end, count);
      // A count past 2^64 - 1 is out of range (from_chars says so), not the number it wraps to.
      if (tab == std::string_view::npos || tab == 0 || tab + 1 == line.size() ||
          parsed.ptr != num_end || parsed.ec != std::errc()) {
        throw Error(where + "expected word<TAB>count");
      }
      const std::string_view word = line.substr(0, tab);
      check_file_word(word, count, &total, tokenizer_words, where);
      words.push_back(word);
      counts.push_back(count);
    }
  });
  return from_word_list(std::move(words), std::move(counts));
}

void Vocab::save_tsv(const std::string& path) const {
  AtomicFile out(path);
  std::string buf;
  auto count = counts_.begin();
  for_each_word_run([&](uint64_t, const WordList& run) {
    for (const std::string_view w : run) {
      buf += w;
      buf += '\t';
      buf += std::to_string(*count);
      ++count;
      buf += '\n';
      if (buf.size() > (1 << 20)) {
        out.write(buf);
        buf.clear();
      }
    }
  });
  out.write(buf);
  out.commit();
}

}  // namespace pagedw2v
