#pragma once
/// @file vocab.hpp
/// The vocabulary: words with their corpus counts, sorted by count descending (ties: first
/// occurrence in the corpus first). Row i of every embedding table belongs to word i.

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/huge_pages.hpp"
#include "base/string_index.hpp"
#include "text/tokenizer.hpp"
#include "vocab/count_list.hpp"
#include "vocab/packed_words.hpp"
#include "vocab/word_list.hpp"

namespace pagedw2v {
namespace detail {
class ShardedWordTable;

/// The corpus as the count read it, kept for the encoder so that it need not read the text again:
/// per chunk, every token as a code (shard << id_bits | id in the shard) and the token counts at
/// which lines ended; and each code's row.
struct CountedText {
  std::vector<std::string_view> parts;  ///< the texts counted (the encoder checks it gets these)
  TextOptions text;
  uint32_t id_bits = 32;
  struct Chunk {
    HugePageVector<uint32_t> codes;
    std::vector<uint64_t> line_ends;  ///< counts of `codes`, ascending, repeats dropped
  };
  std::vector<Chunk> chunks;
  std::vector<uint32_t> shard_start;  ///< by shard: where its ids begin in `rows`
  HugePageVector<uint32_t> rows;      ///< by code: a row, or kNone for a word not kept
  bool all_kept = false;              ///< every word counted has a row: each code becomes a token

  /// A vector of `size` to `size` * 9 / 8 tokens (values unspecified) for the encoder's output:
  /// the first call gets the one made while the count merged its shards when its size fits,
  /// other calls a new one.
  std::vector<uint32_t> take_tokens(size_t size) const;

  /// The encoder's output vector (a token for every word counted), made and its pages zeroed on
  /// a thread of its own while the shards merge; the first take_tokens() takes it.
  mutable std::future<std::vector<uint32_t>> prepared_tokens;
  mutable std::mutex taking;
};
}  // namespace detail

struct VocabOptions {
  uint64_t min_count = 5;  ///< drop words seen fewer times
  uint64_t max_vocab = 0;  ///< keep at most this many (the most frequent); 0 = no limit
  TextOptions text;        ///< how words are read (tokenizer.hpp)
  uint32_t threads = 1;    ///< threads that count; the result does not depend on it
  /// Text each counting thread takes at least: fewer threads count a small text, since each
  /// brings its lists of words by shard and a round's wait for the others (tests lower it to
  /// count small texts on many threads).
  uint64_t min_bytes_per_thread = uint64_t{1} << 18;
  /// Keep what the count read (4 bytes a token) for encode_corpus() of the same texts, which
  /// then maps codes to rows instead of reading and looking up every word again.
  bool keep_tokens = false;
  /// Called by the counting threads with the text they have read, a slice of about
  /// read_slice_bytes at a time (cut before a space byte, so no word spans two; the last of a
  /// part or of a thread's chunk shorter), once the count will not read it again, so that the
  /// caller may let the slice's pages go (CorpusText::release). Null: nothing is handed back.
  std::function<void(std::string_view)> read_done;
  uint64_t read_slice_bytes = uint64_t{8} << 20;
};

class Vocab {
 public:
  Vocab() = default;
  Vocab(Vocab&&) = default;
  Vocab& operator=(Vocab&&) = default;

  /// Counts every word of `text` (see tokenize()) and keeps those the options allow: the text is
  /// cut into one chunk per thread; in rounds, each thread reads a slice of its chunk and sorts
  /// its words by hash into shards, and each shard's owner thread inserts them into one table of
  /// the shard's words, so that every distinct word is held once whatever the number of threads;
  /// each shard is then sorted by its owner. Every word carries its first occurrence (chunk,
  /// rank in the chunk), which breaks count ties.
  static Vocab count(std::string_view text, const VocabOptions& options);
  /// The same over several parts (files) in order, as if they were one text.
  static Vocab count(const std::vector<std::string_view>& parts, const VocabOptions& options);
  /// The one-thread reference count: one pass, one table (what count() must equal).
  static Vocab count_serial(std::string_view text, const VocabOptions& options);
  /// A vocabulary from words already in row order (counts need not be sorted).
  static Vocab from_words(const std::vector<std::string>& words, std::vector<uint64_t> counts);
  /// The same from a WordList (no std::string a word on the way).
  static Vocab from_word_list(WordList words, std::vector<uint64_t> counts);
  /// Reads `word<TAB>count` lines; throws Error naming the file and line on bad input: a line
  /// that is not word<TAB>count, a word holding a byte the tokenizer splits at (no file format
  /// can store it as one word), counts whose sum passes 2^64 - 1, and with `tokenizer_words` (a
  /// vocabulary to train with) a word the tokenizer cannot make: over kMaxWordBytes bytes or not
  /// UTF-8. A file truncated while it is read throws Error too (MappedFile::read).
  static Vocab load_tsv(const std::string& path, bool tokenizer_words = false);
  /// The checks load_tsv makes of one word of a vocabulary file, and of the running sum of
  /// counts: throws Error starting with `where` ("'FILE' line N: ") when `word` breaks them.
  static void check_file_word(std::string_view word, uint64_t count, uint64_t* total,
                              bool tokenizer_words, const std::string& where);
  /// Writes `word<TAB>count` lines in row order (to a temporary name, then renamed).
  void save_tsv(const std::string& path) const;

  uint32_t size() const { return static_cast<uint32_t>(packed_ ? packed_->size() : words_.size()); }
  bool empty() const { return size() == 0; }
  /// Word `id` (the words may not be packed: see pack_words()).
  std::string_view word(uint32_t id) const {
    if (packed_) words_are_packed();
    return words_[id];
  }
  /// Word `id` as a C string (it ends at the word's first NUL, where a word holds one).
  const char* word_c_str(uint32_t id) const {
    if (packed_) words_are_packed();
    return words_.c_str(id);
  }
  uint64_t count(uint32_t id) const { return counts_[id]; }
  /// The words in row order: iterate it for std::string_views, or copy it with to_strings()
  /// (the words may not be packed).
  const WordList& words() const {
    if (packed_) words_are_packed();
    return words_;
  }

  /// Packs the words (packed_words.hpp) on up to `threads` threads, for the time that only a
  /// checkpoint reads them (a corpus held whole and encoded needs no word to train). Afterwards
  /// word(), word_c_str() and words() throw std::logic_error and find() finds no word (its index
  /// is freed); size(), the counts, word_bytes(), word_strings() and for_each_word_run() work as
  /// before. Throws Error when packing fails (the words are kept as they are).
  void pack_words(uint32_t threads);
  /// A copy whose words are not packed, unpacked on up to `threads` threads when these are (the
  /// counts and totals the same; find() without an index): what the export reads by row while a
  /// checkpoint still reads this one.
  Vocab with_words_unpacked(uint32_t threads) const;
  bool words_packed() const { return packed_ != nullptr; }
  /// Calls `f(first_row, words)` for runs of consecutive rows, in row order, that cover every
  /// row: the whole list at once, or, packed, one slice of PackedWords::kSliceWords at a time
  /// (unpacked for the call). A reader of every word that holds no more than a run's.
  void for_each_word_run(const std::function<void(uint64_t, const WordList&)>& f) const;
  /// The bytes of the words, NULs not included.
  uint64_t word_bytes() const;
  /// Every word as a std::string, in row order, packed or not.
  std::vector<std::string> word_strings() const;
  const CountList& counts() const { return counts_; }
  /// Sum of the counts of the kept words: the words one epoch trains on.
  uint64_t total_count() const { return total_; }
  /// Every word token of the corpus that was counted, kept or not (0 when loaded from a file).
  uint64_t corpus_tokens() const { return corpus_tokens_; }
  /// Distinct words the count met, kept or not (0 when loaded from a file): with size(), what
  /// --min-count and --max-vocab dropped.
  uint64_t distinct_words() const { return distinct_words_; }
  /// The counting table that made this vocabulary, its values turned into rows (kNone for words
  /// dropped by --min-count or --max-vocab): the encoder's lookup table, or null when the
  /// vocabulary was not counted here. drop_lookup() frees it once the corpus is encoded.
  const detail::ShardedWordTable* lookup() const { return lookup_.get(); }
  /// What the count read, when VocabOptions::keep_tokens asked for it (else null).
  const detail::CountedText* counted_text() const { return counted_text_.get(); }
  void drop_lookup() {
    lookup_.reset();
    counted_text_.reset();
  }

  /// Frees the index of find() (4 bytes a slot, two slots a word): afterwards find() finds no
  /// word. For runs that look no word up once the corpus is encoded.
  void drop_index() { index_.reset(); }

  /// Row of `word`, or -1 when it is not in the vocabulary (or after drop_index()). A counted
  /// vocabulary builds its index on the first call (the encoder does not need it); calls from
  /// several threads at once are safe.
  int64_t find(std::string_view word) const;

  /// Whether find()'s index is built (a counted vocabulary leaves it to the first find()).
  bool index_built() const;

  /// The bytes the words, the counts and find()'s index hold (their buffers' capacities); not
  /// the count's lookup table or what it read (lookup(), counted_text()).
  size_t memory_bytes() const;

 private:
  static constexpr uint32_t kNoRow = detail::StringIndex::kEmpty;
  struct Index;

  /// Throws std::logic_error: a word was asked for while the words are packed.
  [[noreturn]] static void words_are_packed();
  /// Fills `index` from words_; throws Error on a repeated word.
  void build_index(Index& index) const;

  WordList words_;  ///< empty while the words are packed
  /// The words, packed (pack_words()), or null.
  std::unique_ptr<const PackedWords> packed_;
  CountList counts_;
  uint64_t total_ = 0;
  uint64_t corpus_tokens_ = 0;
  uint64_t distinct_words_ = 0;
  // The index is open addressing over rows, at most half full: 4 bytes a slot and no copy of
  // the words, so that a vocabulary of tens of millions of words stays small. Lookups compare
  // against words_ directly, which a hit needs anyway. Null: no index (find() finds nothing).
  // Shared so that Vocab stays movable; it is never shared between two vocabularies.
  std::shared_ptr<Index> index_;
  std::shared_ptr<detail::ShardedWordTable> lookup_;
  std::shared_ptr<detail::CountedText> counted_text_;
};

}  // namespace pagedw2v
