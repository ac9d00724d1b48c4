#include "vocab.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstring>
#include <deque>
#include <mutex>
#include <numeric>
#include <system_error>

#include "error.hpp"
#include "io/atomic_file.hpp"
#include "mapped_file.hpp"
#include "text_chunks.hpp"
#include "tokenizer.hpp"
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

size_t Vocab::memory_bytes() const {
  size_t bytes = words_.memory_bytes() + counts_.memory_bytes();
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

Vocab Vocab::count(const std::vector<std::string_view>& parts, const VocabOptions& options) {
  using detail::WordTable;
  // At most a thread per min_bytes_per_thread of text: each brings a table of every shard, so
  // threads beyond the work cost time and memory quadratically (the result does not depend on
  // their number).
  uint64_t text_bytes = 0;
  for (const std::string_view part : parts) text_bytes += part.size();
  const size_t n = static_cast<size_t>(
      std::clamp<uint64_t>(text_bytes / std::max<uint64_t>(options.min_bytes_per_thread, 1), 1,
                           std::max<uint32_t>(options.threads, 1)));
  const std::vector<TextChunk> chunks = split_text(parts, n);
  const size_t shards = detail::ShardedWordTable(n, 0).shard_count();
  uint32_t shard_bits = 0;
  while ((size_t{1} << shard_bits) < shards) ++shard_bits;
  const uint32_t id_bits = 32 - shard_bits;
  const uint64_t id_limit = uint64_t{1} << id_bits;

  // Each thread counts its chunk into its own shards, and numbers the words it meets first in
  // its chunk in the order it meets them: (chunk, that number) orders first occurrences in the
  // whole corpus, whichever shard a word falls in.
  struct Counted {
    detail::ShardedWordTable table;
    std::vector<std::vector<uint32_t>> first;  ///< by shard, by id: the word's number
    uint64_t tokens = 0;
    HugePageVector<uint32_t> codes;   ///< with keep_tokens
    std::vector<uint64_t> line_ends;  ///< with keep_tokens
    bool codes_fit = true;            ///< no shard outgrew the ids a code can hold
  };
  std::atomic<bool> keep_tokens{options.keep_tokens};
  std::vector<Counted> counted(n);
  run_parallel(n, [&](size_t t) {
    Counted& c = counted[t];
    c.table = detail::ShardedWordTable(shards, size_t{1} << 14);
    c.first.resize(shards);
    uint32_t next = 0;
    uint64_t seen = 0;
    if (keep_tokens) {
      uint64_t bytes = 0;
      for (const TextSegment& seg : chunks[t]) bytes += seg.text.size();
      c.codes.reserve(bytes / 2 +
                      1);  // at most a token per two bytes; untouched pages cost nothing
    }
    auto line_end = [&] {
      if (c.line_ends.empty() || c.line_ends.back() != c.codes.size()) {
        c.line_ends.push_back(c.codes.size());
      }
    };
    for (const TextSegment& seg : chunks[t]) {
      const bool keep = keep_tokens;
      // In slices cut before a space byte (no word spans one, so the words and line ends are
      // the same), each handed to read_done once read.
      for (std::string_view rest = seg.text; !rest.empty();) {
        size_t cut = rest.size();
        const uint64_t most = std::max<uint64_t>(options.read_slice_bytes, 1);
        if (options.read_done && cut > most) {
          cut = static_cast<size_t>(most);
          while (cut < rest.size() && !is_space_byte(static_cast<unsigned char>(rest[cut]))) ++cut;
        }
        const std::string_view slice = rest.substr(0, cut);
        rest.remove_prefix(cut);
        detail::scan_words(
            slice, options.text, [&](uint64_t h) { c.table.prefetch(h); },
            [&](std::string_view w, uint64_t h) {
              const size_t p = c.table.shard_of(h);
              WordTable::Slot& s = c.table.shard(p).insert(w, h);
              if (s.value++ == 0) c.first[p].push_back(next++);
              if (keep) {
                c.codes.push_back(static_cast<uint32_t>(p << id_bits | s.id));
                c.codes_fit = c.codes_fit && s.id + 1 < id_limit;
              }
              ++seen;
            },
            [&] {
              if (keep) line_end();
            });
        if (options.read_done) options.read_done(slice);
      }
      if (keep && seg.ends_part) line_end();
      if (keep && !c.codes_fit) keep_tokens = false;  // the encoder will read the text
    }
    c.tokens = seen;
  });
  uint64_t corpus_tokens = 0;
  for (const Counted& c : counted) corpus_tokens += c.tokens;

  // Shard by shard, in parallel: the chunks' tables merged in chunk order, and the words kept
  // sorted by count descending, then first occurrence (the one-thread stable sort's order).
  struct Entry {
    uint64_t inverted_count;
    uint64_t first;  ///< chunk << 32 | number in the chunk
    uint32_t id;
  };
  auto before = [](const Entry& a, const Entry& b) {
    return a.inverted_count != b.inverted_count ? a.inverted_count < b.inverted_count
                                                : a.first < b.first;
  };
  std::vector<WordTable> merged(shards);
  std::vector<HugePageVector<Entry>> kept(shards);
  // With keep_tokens, each chunk's codes are mapped to merged ids here, to rows further down.
  std::shared_ptr<detail::CountedText> text;
  if (keep_tokens) {
    text = std::make_shared<detail::CountedText>();
    text->parts = parts;
    text->text = options.text;
    text->id_bits = id_bits;
    text->chunks.resize(n);
    for (size_t t = 0; t < n; ++t) {
      detail::CountedText::Chunk& chunk = text->chunks[t];
      chunk.codes = std::move(counted[t].codes);
      chunk.line_ends = std::move(counted[t].line_ends);
      chunk.shard_start.resize(shards);
      uint64_t start = 0;
      for (size_t p = 0; p < shards; ++p) {
        chunk.shard_start[p] = static_cast<uint32_t>(start);
        start += counted[t].table.shard(p).size();
      }
      if (start >= kNoRow) throw Error("vocabulary: too many words");
      chunk.rows.resize(start);
    }
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
  run_parallel(std::min(n, shards), [&](size_t worker) {
    for (size_t p = worker; p < shards; p += n) {
      WordTable all = std::move(counted[0].table.shard(p));
      std::vector<uint64_t> first(counted[0].first[p].begin(), counted[0].first[p].end());
      counted[0].first[p] = {};
      if (text) {
        uint32_t* ids = text->chunks[0].rows.data() + text->chunks[0].shard_start[p];
        for (uint32_t id = 0; id < all.size(); ++id) ids[id] = id;
      }
      for (size_t t = 1; t < n; ++t) {
        WordTable& table = counted[t].table.shard(p);
        const std::vector<uint32_t>& numbers = counted[t].first[p];
        std::vector<uint64_t> counts(table.size());
        table.for_each([&](WordTable::Slot& s) { counts[s.id] = s.value; });
        constexpr uint32_t kAhead = 8;
        const auto m = static_cast<uint32_t>(counts.size());
        for (uint32_t id = 0; id < m; ++id) {
          if (id + kAhead < m) all.prefetch(table.hash(id + kAhead));
          WordTable::Slot& s = all.insert(table.key(id), table.hash(id));
          if (s.value == 0) first.push_back(static_cast<uint64_t>(t) << 32 | numbers[id]);
          s.value += counts[id];
          if (text) text->chunks[t].rows[text->chunks[t].shard_start[p] + id] = s.id;
        }
        table = WordTable(1);
        counted[t].first[p] = {};
      }
      HugePageVector<Entry>& entries = kept[p];
      entries.reserve(all.size());
      all.for_each([&](WordTable::Slot& s) {
        if (s.value >= options.min_count) entries.push_back({~s.value, first[s.id], s.id});
      });
      std::sort(entries.begin(), entries.end(), before);
      merged[p] = std::move(all);
    }
  });
  counted.clear();

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
      if (!text) continue;
      for (detail::CountedText::Chunk& chunk : text->chunks) {
        const uint32_t end =
            p + 1 < shards ? chunk.shard_start[p + 1] : static_cast<uint32_t>(chunk.rows.size());
        for (uint32_t i = chunk.shard_start[p]; i < end; ++i)
          chunk.rows[i] = row_of[p][chunk.rows[i]];
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

Vocab Vocab::load_tsv(const std::string& path) {
  MappedFile file(path);
  std::string_view text = file.view();
  WordList words;
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
    words.push_back(line.substr(0, tab));
    counts.push_back(count);
  }
  return from_word_list(std::move(words), std::move(counts));
}

void Vocab::save_tsv(const std::string& path) const {
  AtomicFile out(path);
  std::string buf;
  auto count = counts_.begin();
  for (size_t i = 0; i < words_.size(); ++i, ++count) {
    buf += words_[i];
    buf += '\t';
    buf += std::to_string(*count);
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
