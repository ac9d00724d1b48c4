#include "corpus/corpus_stream.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/atomic_file.hpp"
#include "base/error.hpp"
#include "base/string_index.hpp"
#include "model/params.hpp"
#include "text/text_chunks.hpp"

namespace pagedw2v {
namespace {

/// Encodes the text a slice at a time; sentence cuts and blocks are placed as the tokens come.
/// The text is a CorpusText's parts, or the rounds of joined text that phrases make of one.
class TextBlockReader final : public BlockReader {
 public:
  TextBlockReader(const CorpusText& text, const detail::ShardedWordTable& table,
                  const EncodeOptions& options, size_t slice_bytes,
                  std::unique_ptr<PhraseRounds> rounds = nullptr)
      : text_(text),
        rounds_(std::move(rounds)),
        table_(table),
        options_(options),
        slice_bytes_(std::max<size_t>(slice_bytes, 1)),
        cutter_(options.max_sentence) {}

  bool next(StreamBlock& out) override {
    for (;;) {
      // The first sentence end that makes the block at least kBlockWords long closes it.
      for (size_t i = ends_head_; i < ends_.size(); ++i) {
        if (ends_[i] - block_start_ >= kBlockWords) {
          emit(i + 1 - ends_head_, out);
          return true;
        }
      }
      if (text_done_) {
        if (ends_head_ == ends_.size()) return false;
        emit(ends_.size() - ends_head_, out);
        return true;
      }
      encode_slice();
    }
  }

 private:
  /// Encodes the next round of joined text: rounds end between tokens or after a newline, and
  /// the joined text ends every part with a newline, so only the last round ends the text.
  void encode_round() {
    scratch_tokens_.clear();
    scratch_ends_.clear();
    const bool more = rounds_->next(round_);
    if (!round_.empty()) {
      const TextChunk chunk{{round_, false}};
      detail::encode_chunk(chunk, table_, options_.text, scratch_tokens_, scratch_ends_);
    }
    take_encoded(!more);
  }

  /// Encodes the next slice of text: whole parts while they are short, else a run of one part
  /// cut just before a space byte, so that no word is split.
  void encode_slice() {
    if (rounds_) {
      encode_round();
      return;
    }
    const std::vector<std::string_view>& parts = text_.parts();
    TextChunk chunk;
    std::vector<size_t> chunk_parts;
    size_t bytes = 0;
    while (part_ < parts.size() && bytes < slice_bytes_) {
      const std::string_view p = parts[part_];
      size_t end = p.size();
      if (p.size() - offset_ > slice_bytes_ - bytes) {
        end = offset_ + (slice_bytes_ - bytes);
        run_guarded(
            [&] {
              while (end < p.size() && !is_space_byte(static_cast<unsigned char>(p[end]))) ++end;
            },
            text_.names()[part_].c_str());
      }
      chunk.push_back({p.substr(offset_, end - offset_), end == p.size()});
      chunk_parts.push_back(part_);
      bytes += end - offset_;
      offset_ = end;
      if (offset_ == p.size()) {
        ++part_;
        offset_ = 0;
      }
    }
    scratch_tokens_.clear();
    scratch_ends_.clear();
    if (!chunk.empty()) {
      run_guarded(
          [&] {
            detail::encode_chunk(chunk, table_, options_.text, scratch_tokens_, scratch_ends_);
          },
          text_.names()[chunk_parts.front()].c_str());
    }
    for (size_t k = 0; k < chunk.size(); ++k) {
      const size_t i = chunk_parts[k];
      const size_t begin = static_cast<size_t>(chunk[k].text.data() - parts[i].data());
      text_.release(i, begin, begin + chunk[k].text.size());
    }
    take_encoded(part_ == parts.size());
  }

  /// Appends the tokens and line ends just encoded (scratch_*) to those waiting for a block;
  /// `done`: the text has ended.
  void take_encoded(bool done) {
    // Drop what earlier blocks took before the pending tokens grow.
    if (pending_head_ > 0 && pending_head_ * 2 >= pending_.size()) {
      pending_.erase(pending_.begin(), pending_.begin() + static_cast<ptrdiff_t>(pending_head_));
      pending_base_ += pending_head_;
      pending_head_ = 0;
    }
    if (ends_head_ > 0 && ends_head_ * 2 >= ends_.size()) {
      ends_.erase(ends_.begin(), ends_.begin() + static_cast<ptrdiff_t>(ends_head_));
      ends_head_ = 0;
    }
    const uint64_t base = encoded_;
    pending_.insert(pending_.end(), scratch_tokens_.begin(), scratch_tokens_.end());
    for (const uint64_t e : scratch_ends_) cutter_.line_end(base + e, ends_);
    encoded_ += scratch_tokens_.size();
    cutter_.cut_full(encoded_, ends_);
    if (done) {
      cutter_.line_end(encoded_, ends_);
      text_done_ = true;
    }
  }

  /// Moves the next `n` pending sentences into `out`.
  void emit(size_t n, StreamBlock& out) {
    out.first_sentence = next_sentence_;
    out.starts.assign(1, block_start_);
    out.starts.insert(out.starts.end(), ends_.begin() + static_cast<ptrdiff_t>(ends_head_),
                      ends_.begin() + static_cast<ptrdiff_t>(ends_head_ + n));
    const uint64_t end = out.starts.back();
    const size_t from = pending_head_, to = pending_head_ + (end - block_start_);
    out.tokens.assign(pending_.begin() + static_cast<ptrdiff_t>(from),
                      pending_.begin() + static_cast<ptrdiff_t>(to));
    pending_head_ = to;
    ends_head_ += n;
    next_sentence_ += n;
    block_start_ = end;
  }

  const CorpusText& text_;
  std::unique_ptr<PhraseRounds> rounds_;  // with phrases: where the text comes from
  std::string round_;
  const detail::ShardedWordTable& table_;
  EncodeOptions options_;
  size_t slice_bytes_;
  detail::SentenceCutter cutter_;
  size_t part_ = 0, offset_ = 0;  // the next byte to encode
  bool text_done_ = false;
  uint64_t encoded_ = 0;  // tokens encoded so far
  // Tokens not yet in a block: pending_[pending_head_ ..] are tokens block_start_ ..
  std::vector<uint32_t> pending_;
  size_t pending_head_ = 0;
  uint64_t pending_base_ = 0;
  // Sentence ends not yet in a block: ends_[ends_head_ ..].
  std::vector<uint64_t> ends_;
  size_t ends_head_ = 0;
  uint64_t block_start_ = 0, next_sentence_ = 0;
  std::vector<uint32_t> scratch_tokens_;
  std::vector<uint64_t> scratch_ends_;
};

// The cache file: a header (magic, key), the blocks (sentence count, token count, sentence
// lengths, tokens; all u32), then a footer (a zero sentence count, the summary, the magic).
constexpr char kMagic[8] = {'P', 'W', '2', 'V', 'E', 'N', 'C', '1'};
constexpr size_t kHeaderBytes = 16;
constexpr size_t kFooterBytes = 4 + 4 * 8 + 8;
constexpr uint32_t kMaxBlockSentences = 1u << 24;

bool read_all(std::FILE* f, void* p, size_t n) { return std::fread(p, 1, n, f) == n; }

class CacheBlockReader final : public BlockReader {
 public:
  CacheBlockReader(const std::string& path, uint64_t key, uint32_t vocab_size)
      : path_(path), vocab_size_(vocab_size) {
    const std::optional<StreamSummary> s = read_cache_summary(path, key);
    if (!s)
      throw Error("encoded cache '" + path + "' is incomplete or was made for another corpus");
    summary_ = *s;
    f_ = std::fopen(path.c_str(), "rb");
    if (f_ == nullptr || std::fseek(f_, 0, SEEK_END) != 0) damaged();
    end_of_blocks_ = std::ftell(f_) - static_cast<long>(kFooterBytes);
    if (std::fseek(f_, kHeaderBytes, SEEK_SET) != 0) damaged();
    hasher_.add_start(0);
  }
  ~CacheBlockReader() override {
    if (f_ != nullptr) std::fclose(f_);
  }

  bool next(StreamBlock& out) override {
    if (blocks_ == summary_.blocks) return false;
    uint32_t counts[2];
    if (!read_all(f_, counts, sizeof counts)) damaged();
    const uint32_t nsent = counts[0], ntok = counts[1];
    if (nsent == 0 || nsent > kMaxBlockSentences || ntok < nsent ||
        words_ + ntok > summary_.words) {
      damaged();
    }
    lengths_.resize(nsent);
    if (!read_all(f_, lengths_.data(), nsent * sizeof(uint32_t))) damaged();
    out.first_sentence = sentences_;
    out.starts.assign(1, words_);
    uint64_t at = words_;
    for (const uint32_t len : lengths_) {
      if (len == 0) damaged();
      at += len;
      out.starts.push_back(at);
    }
    if (at != words_ + ntok) damaged();
    out.tokens.resize(ntok);
    if (!read_all(f_, out.tokens.data(), ntok * sizeof(uint32_t))) damaged();
    for (const uint32_t id : out.tokens) {
      if (id >= vocab_size_) damaged();
    }
    words_ += ntok;
    sentences_ += nsent;
    ++blocks_;
    hasher_.add_tokens(out.tokens.data(), out.tokens.size());
    for (size_t i = 1; i < out.starts.size(); ++i) hasher_.add_start(out.starts[i]);
    // The last block is handed on only when the whole pass matches what the footer recorded:
    // ids damaged within the vocabulary's range change the hash, not the counts.
    if (blocks_ == summary_.blocks &&
        (words_ != summary_.words || sentences_ != summary_.sentences ||
         hasher_.hash() != summary_.hash || std::ftell(f_) != end_of_blocks_)) {
      damaged();
    }
    return true;
  }

 private:
  [[noreturn]] void damaged() const {
    throw Error("encoded cache '" + path_ + "' is damaged; delete it and run again");
  }

  std::string path_;
  uint32_t vocab_size_;
  std::FILE* f_ = nullptr;
  StreamSummary summary_;
  long end_of_blocks_ = 0;  ///< where the footer begins
  uint64_t words_ = 0, sentences_ = 0, blocks_ = 0;
  CorpusHasher hasher_;
  std::vector<uint32_t> lengths_;
};

class CachingBlockReader final : public BlockReader {
 public:
  CachingBlockReader(std::unique_ptr<BlockReader> inner, const std::string& path, uint64_t key)
      : inner_(std::move(inner)), path_(path) {
    // AtomicFile: a temporary name of its own, created exclusively and never through a link, so
    // that nothing planted in the cache directory is written through.
    attempt([&] {
      file_ = std::make_unique<AtomicFile>(path_);
      file_->write(kMagic, 8);
      file_->write(&key, 8);
    });
    hasher_.add_start(0);
  }

  bool next(StreamBlock& out) override {
    if (!inner_->next(out)) {
      finish();
      return false;
    }
    if (file_ != nullptr) {
      const uint32_t nsent = static_cast<uint32_t>(out.starts.size() - 1);
      const uint32_t counts[2] = {nsent, static_cast<uint32_t>(out.tokens.size())};
      lengths_.resize(nsent);
      for (uint32_t i = 0; i < nsent; ++i) {
        lengths_[i] = static_cast<uint32_t>(out.starts[i + 1] - out.starts[i]);
      }
      attempt([&] {
        file_->write(counts, sizeof counts);
        file_->write(lengths_.data(), nsent * sizeof(uint32_t));
        file_->write(out.tokens.data(), out.tokens.size() * sizeof(uint32_t));
      });
    }
    hasher_.add_tokens(out.tokens.data(), out.tokens.size());
    for (size_t i = 1; i < out.starts.size(); ++i) hasher_.add_start(out.starts[i]);
    ++blocks_;
    return true;
  }

 private:
  void finish() {
    if (file_ == nullptr) return;
    const uint32_t zero = 0;
    const uint64_t footer[4] = {hasher_.words(), hasher_.sentences(), blocks_, hasher_.hash()};
    attempt([&] {
      file_->write(&zero, 4);
      file_->write(footer, 4 * 8);
      file_->write(kMagic, 8);
      file_->commit();
    });
    file_.reset();
  }

  /// Runs a step of writing the cache; a failure (a full disk, a directory not writable) is
  /// reported once and the pass goes on without the cache (its temporary file removed).
  template <class F>
  void attempt(F&& step) {
    try {
      step();
    } catch (const Error& e) {
      file_.reset();
      std::fprintf(stderr, "pagedw2v: warning: %s; going on without the encoded cache\n", e.what());
    }
  }

  std::unique_ptr<BlockReader> inner_;
  std::string path_;
  std::unique_ptr<AtomicFile> file_;
  CorpusHasher hasher_;
  uint64_t blocks_ = 0;
  std::vector<uint32_t> lengths_;
};

uint64_t block_bytes(const StreamBlock& b) {
  return b.tokens.size() * sizeof(uint32_t) + b.starts.size() * sizeof(uint64_t);
}

void mix(uint64_t& key, std::string_view bytes) {
  key = (key ^ detail::hash_bytes(bytes)) * 0x9E3779B97F4A7C15ull;
  key ^= key >> 31;
}

void mix(uint64_t& key, uint64_t v) {
  mix(key, std::string_view(reinterpret_cast<const char*>(&v), sizeof v));
}

}  // namespace

std::unique_ptr<BlockReader> text_block_reader(const CorpusText& text,
                                               const detail::ShardedWordTable& table,
                                               const EncodeOptions& options, size_t slice_bytes) {
  return std::make_unique<TextBlockReader>(text, table, options, slice_bytes);
}

std::unique_ptr<BlockReader> phrased_block_reader(const CorpusText& text,
                                                  const std::vector<PhraseTable>& tables,
                                                  const PhraseOptions& phrase_options,
                                                  const detail::ShardedWordTable& table,
                                                  const EncodeOptions& options,
                                                  size_t slice_bytes) {
  PhraseOptions po = phrase_options;
  // A round holds a slice a thread: about slice_bytes in all.
  po.slice_bytes = std::max<size_t>(slice_bytes / std::max<uint32_t>(po.threads, 1), 1);
  return std::make_unique<TextBlockReader>(
      text, table, options, slice_bytes,
      std::make_unique<PhraseRounds>(PhraseText::of(text), tables, po));
}

std::optional<uint64_t> encoding_key(const std::vector<std::string>& inputs, const Vocab& vocab,
                                     const EncodeOptions& options) {
  uint64_t key = 0x5851F42D4C957F2Dull;
  mix(key, std::string_view(kMagic, 8));
  for (const std::string& name : inputs) {
    struct stat st {};
    if (name == "-" || ::stat(name.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      return std::nullopt;
    }
    mix(key, name);
    mix(key, static_cast<uint64_t>(st.st_size));
    mix(key, static_cast<uint64_t>(st.st_mtim.tv_sec));
    mix(key, static_cast<uint64_t>(st.st_mtim.tv_nsec));
    mix(key, static_cast<uint64_t>(st.st_ino));
  }
  for (uint32_t i = 0; i < vocab.size(); ++i) {
    mix(key, vocab.word(i));
    mix(key, vocab.count(i));
  }
  mix(key, static_cast<uint64_t>(options.text.lowercase));
  mix(key, static_cast<uint64_t>(options.max_sentence));
  mix(key, kBlockWords);
  return key;
}

std::string cache_path(const std::string& dir, uint64_t key) {
  char name[40];
  std::snprintf(name, sizeof name, "encoded-%016llx.bin", static_cast<unsigned long long>(key));
  return dir + "/" + name;
}

std::optional<StreamSummary> read_cache_summary(const std::string& path, uint64_t key) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return std::nullopt;
  char header[kHeaderBytes], footer[kFooterBytes];
  const bool read = read_all(f, header, kHeaderBytes) &&
                    std::fseek(f, -static_cast<long>(kFooterBytes), SEEK_END) == 0 &&
                    read_all(f, footer, kFooterBytes);
  std::fclose(f);
  uint64_t k = 0;
  if (read) std::memcpy(&k, header + 8, 8);
  if (!read || std::memcmp(header, kMagic, 8) != 0 || k != key ||
      std::memcmp(footer + kFooterBytes - 8, kMagic, 8) != 0) {
    return std::nullopt;
  }
  uint32_t zero = 1;
  std::memcpy(&zero, footer, 4);
  if (zero != 0) return std::nullopt;
  StreamSummary s;
  std::memcpy(&s.words, footer + 4, 8);
  std::memcpy(&s.sentences, footer + 12, 8);
  std::memcpy(&s.blocks, footer + 20, 8);
  std::memcpy(&s.hash, footer + 28, 8);
  return s;
}

std::unique_ptr<BlockReader> cache_block_reader(const std::string& path, uint64_t key,
                                                uint32_t vocab_size) {
  return std::make_unique<CacheBlockReader>(path, key, vocab_size);
}

void verify_cache(const std::string& path, uint64_t key, uint32_t vocab_size) {
  CacheBlockReader reader(path, key, vocab_size);
  StreamBlock b;
  while (reader.next(b)) {
  }
}

std::unique_ptr<BlockReader> caching_block_reader(std::unique_ptr<BlockReader> inner,
                                                  const std::string& path, uint64_t key) {
  return std::make_unique<CachingBlockReader>(std::move(inner), path, key);
}

StreamSummary scan_blocks(BlockReader& reader) {
  CorpusHasher h;
  h.add_start(0);
  StreamSummary s;
  StreamBlock b;
  while (reader.next(b)) {
    h.add_tokens(b.tokens.data(), b.tokens.size());
    for (size_t i = 1; i < b.starts.size(); ++i) h.add_start(b.starts[i]);
    ++s.blocks;
  }
  s.words = h.words();
  s.sentences = h.sentences();
  s.hash = h.hash();
  return s;
}

CorpusStream::~CorpusStream() { stop(); }

void CorpusStream::stop() {
  if (!producer_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  producer_.join();
}

void CorpusStream::start(std::unique_ptr<BlockReader> reader, uint64_t first_block) {
  stop();
  window_.clear();
  window_bytes_ = 0;
  bounds_.assign(1, 0);
  done_ = stopping_ = full_ = false;
  error_ = nullptr;
  summary_ = {};
  producer_ = std::thread(
      [this, r = std::move(reader), first_block]() mutable { produce(std::move(r), first_block); });
}

void CorpusStream::produce(std::unique_ptr<BlockReader> reader, uint64_t first_block) {
  try {
    CorpusHasher h;
    h.add_start(0);
    uint64_t index = 0;
    StreamBlock b;
    while (reader->next(b)) {
      h.add_tokens(b.tokens.data(), b.tokens.size());
      for (size_t i = 1; i < b.starts.size(); ++i) h.add_start(b.starts[i]);
      const uint64_t end_sentence = b.first_sentence + b.starts.size() - 1;
      std::unique_lock<std::mutex> lock(mutex_);
      bounds_.push_back(end_sentence);
      if (index++ < first_block) continue;
      const uint64_t n = block_bytes(b);
      const auto room = [&] {
        return stopping_ || window_.empty() || window_bytes_ + n <= max_bytes_;
      };
      if (!room()) {
        full_ = true;
        changed_.notify_all();
        changed_.wait(lock, room);
        full_ = false;
      }
      if (stopping_) return;
      window_bytes_ += n;
      peak_bytes_ = std::max(peak_bytes_, window_bytes_);
      window_.push_back(std::move(b));
      b = StreamBlock();
      lock.unlock();
      changed_.notify_all();
    }
    // Destroying the reader ends its pass (a cache file is renamed into place) first.
    reader.reset();
    std::lock_guard<std::mutex> lock(mutex_);
    summary_.words = h.words();
    summary_.sentences = h.sentences();
    summary_.blocks = index;
    summary_.hash = h.hash();
    done_ = true;
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    error_ = std::current_exception();
    done_ = true;
  }
  changed_.notify_all();
}

uint64_t CorpusStream::take(uint64_t n, EncodedCorpus& view, std::vector<uint64_t>& bounds) {
  view.tokens.clear();
  view.sentence_starts.clear();
  std::deque<StreamBlock> taken;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    // As many blocks as asked for, unless the window holds fewer (or the pass has ended).
    changed_.wait(lock,
                  [&] { return done_ || window_.size() >= n || (full_ && !window_.empty()); });
    if (error_) std::rethrow_exception(error_);
    for (size_t i = bounds.size(); i < bounds_.size(); ++i) bounds.push_back(bounds_[i]);
    while (!window_.empty() && taken.size() < n) {
      window_bytes_ -= block_bytes(window_.front());
      taken.push_back(std::move(window_.front()));
      window_.pop_front();
      full_ = false;
    }
  }
  changed_.notify_all();
  if (taken.empty()) {
    if (producer_.joinable()) producer_.join();
    return 0;
  }
  view.token_base = taken.front().starts.front();
  view.sentence_base = taken.front().first_sentence;
  view.sentence_starts.push_back(view.token_base);
  for (const StreamBlock& b : taken) {
    view.tokens.insert(view.tokens.end(), b.tokens.begin(), b.tokens.end());
    view.sentence_starts.insert(view.sentence_starts.end(), b.starts.begin() + 1, b.starts.end());
  }
  return taken.size();
}

}  // namespace pagedw2v
