#include "vocab.hpp"

#include <algorithm>
#include <charconv>
#include <deque>
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
  return v;
}

Vocab Vocab::count(std::string_view text, const VocabOptions& options) {
  return count(std::vector<std::string_view>{text}, options);
}

Vocab Vocab::count(const std::vector<std::string_view>& parts, const VocabOptions& options) {
  const std::vector<TextChunk> chunks = split_text(parts, std::max<uint32_t>(options.threads, 1));
  const size_t n = chunks.size();
  std::vector<detail::WordTable> tables(n);
  std::vector<uint64_t> tokens(n, 0);
  run_parallel(n, [&](size_t t) {
    detail::WordTable& table = tables[t];
    uint64_t seen = 0;
    for (const TextSegment& seg : chunks[t]) {
      detail::scan_words(
          seg.text, options.text, [&](uint64_t h) { table.prefetch(h); },
          [&](std::string_view w, uint64_t h) {
            ++table.insert(w, h).value;
            ++seen;
          },
          [] {});
    }
    tokens[t] = seen;
  });

  // Merge in chunk order into the first table: a word's id there is then its rank of first
  // occurrence in the whole corpus, as in the one-thread count.
  detail::WordTable& all = tables[0];
  uint64_t corpus_tokens = tokens[0];
  for (size_t t = 1; t < n; ++t) {
    detail::WordTable& table = tables[t];
    std::vector<uint64_t> counts(table.size());
    table.for_each([&](detail::WordTable::Slot& s) { counts[s.id] = s.value; });
    for (uint32_t id = 0; id < counts.size(); ++id) {
      all.prefetch(table.hash(id));
      all.insert(table.key(id), table.hash(id)).value += counts[id];
    }
    corpus_tokens += tokens[t];
    table = detail::WordTable(1);
  }

  // Count descending, then first occurrence: the order of the one-thread stable sort.
  std::vector<std::pair<uint64_t, uint32_t>> order;
  all.for_each([&](detail::WordTable::Slot& s) {
    if (s.value >= options.min_count) order.emplace_back(~s.value, s.id);
  });
  std::sort(order.begin(), order.end());
  if (options.max_vocab > 0 && order.size() > options.max_vocab) order.resize(options.max_vocab);

  std::vector<std::string> words;
  std::vector<uint64_t> kept;
  words.reserve(order.size());
  kept.reserve(order.size());
  for (const auto& [inverted, id] : order) {
    words.emplace_back(all.key(id));
    kept.push_back(~inverted);
  }
  std::vector<uint32_t> row_of(all.size(), detail::WordTable::kNone);
  for (uint32_t row = 0; row < order.size(); ++row) row_of[order[row].second] = row;
  all.for_each([&](detail::WordTable::Slot& s) { s.value = row_of[s.id]; });
  Vocab v = from_words(std::move(words), std::move(kept));
  v.corpus_tokens_ = corpus_tokens;
  v.lookup_ = std::make_shared<detail::WordTable>(std::move(all));
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
