#include "vocab/vocab.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstring>
#include <deque>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <system_error>

#include "base/atomic_file.hpp"
#include "base/error.hpp"
#include "base/mapped_file.hpp"
#include "text/text_chunks.hpp"
#include "text/tokenizer.hpp"
#include "text/utf8.hpp"
#include "text/word_table.hpp"
#include "vocab/vocab_count.hpp"

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

Vocab Vocab::count(const std::vector<std::string_view>& parts, const VocabOptions& options) {
  detail::WordCount c = detail::count_words(parts, options);
  Vocab v;
  v.words_ = std::move(c.words);
  const size_t rows = c.counts.size();
  v.total_ = std::accumulate(c.counts.begin(), c.counts.end(), uint64_t{0});
  v.counts_ = CountList(c.counts);
  v.corpus_tokens_ = c.corpus_tokens;
  v.distinct_words_ = 0;
  for (size_t p = 0; p < c.lookup->shard_count(); ++p)
    v.distinct_words_ += c.lookup->shard(p).size();
  v.lookup_ = std::move(c.lookup);
  if (c.text) c.text->all_kept = rows == v.distinct_words_;
  v.counted_text_ = std::move(c.text);
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
    throw Error(where + "a word of " + std::to_string(word.size()) + " bytes; words hold at most " +
                std::to_string(kMaxWordBytes) + " (the tokenizer cuts longer ones)");
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
