#pragma once
/// @file corpus_stream.hpp
/// The encoded corpus as a stream of work blocks, for a run that does not hold it whole: a
/// producer thread encodes the text (or reads an encoded cache file) block by block while the
/// trainer trains the blocks before, and at most a bounded window of encoded tokens waits
/// between them. The blocks, their sentences and their tokens are exactly those that
/// encode_corpus() and make_blocks(…, kBlockWords) make of the whole text.
///
/// Owns: the producer thread and the window. May not touch: the model, the backends (the trainer
/// hands them a view of the blocks it took).

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "corpus/corpus.hpp"
#include "text/phrases.hpp"
#include "text/text_source.hpp"
#include "vocab/vocab.hpp"

namespace pagedw2v {

/// One work block: whole sentences, with corpus-wide positions.
struct StreamBlock {
  uint64_t first_sentence = 0;   ///< index of its first sentence in the corpus
  std::vector<uint64_t> starts;  ///< sentence starts and the last sentence's end (token positions)
  std::vector<uint32_t> tokens;  ///< tokens [starts.front(), starts.back())
};

/// Where one pass over the corpus comes from, block by block in corpus order.
class BlockReader {
 public:
  virtual ~BlockReader() = default;
  /// Reads the next block into `out`; false at the end of the pass.
  virtual bool next(StreamBlock& out) = 0;
};

/// What a whole pass held: the corpus's fingerprint parts and its block count.
struct StreamSummary {
  uint64_t words = 0;
  uint64_t sentences = 0;
  uint64_t blocks = 0;
  uint64_t hash = 0;  ///< CorpusHasher's hash
};

/// Encodes `text` with `table` (the vocabulary's lookup table) about `slice_bytes` of text at a
/// time, on the calling thread; pages of mapped files already encoded are released. `text` and
/// `table` must outlive the reader.
std::unique_ptr<BlockReader> text_block_reader(const CorpusText& text,
                                               const detail::ShardedWordTable& table,
                                               const EncodeOptions& options,
                                               size_t slice_bytes = size_t{1} << 20);

/// text_block_reader() of the text that `tables` (the passes of text/phrases.hpp, applied with
/// `phrase_options`) make of `text`, joined a round at a time on phrase_options.threads threads,
/// about `slice_bytes` a round: the blocks of the joined text, which is never held whole. `text`,
/// `tables` and `table` must outlive the reader.
std::unique_ptr<BlockReader> phrased_block_reader(const CorpusText& text,
                                                  const std::vector<PhraseTable>& tables,
                                                  const PhraseOptions& phrase_options,
                                                  const detail::ShardedWordTable& table,
                                                  const EncodeOptions& options,
                                                  size_t slice_bytes = size_t{1} << 20);

/// What an encoded cache file depends on, as one number: the inputs (names, sizes, modification
/// times), the vocabulary (words and counts), the text options, the sentence cap and the block
/// size. nullopt when an input is not a regular file (standard input, a pipe): no cache then.
std::optional<uint64_t> encoding_key(const std::vector<std::string>& inputs, const Vocab& vocab,
                                     const EncodeOptions& options);

/// The cache file of `key` in directory `dir`.
std::string cache_path(const std::string& dir, uint64_t key);

/// The summary of the complete cache file `path` made for `key`; nullopt when it is absent,
/// incomplete or made for another key.
std::optional<StreamSummary> read_cache_summary(const std::string& path, uint64_t key);

/// Reads the blocks of the complete cache file `path`, checking every id against `vocab_size`
/// and, before the last block is handed on, the whole pass against the counts and the hash the
/// footer recorded; throws Error naming the file when it is damaged.
std::unique_ptr<BlockReader> cache_block_reader(const std::string& path, uint64_t key,
                                                uint32_t vocab_size);

/// Reads the whole cache file `path` as cache_block_reader() does, keeping no block: throws
/// Error naming the file when it is damaged. A run checks a cache so before it trains on it.
void verify_cache(const std::string& path, uint64_t key, uint32_t vocab_size);

/// Passes on the blocks of `inner` and writes them to the cache file `path` on the way: under a
/// temporary name (AtomicFile's: created exclusively, never through a link), renamed to `path`
/// once the pass has ended (an unfinished one is removed).
/// A write that fails (disk full) is reported on stderr once and the pass goes on uncached.
std::unique_ptr<BlockReader> caching_block_reader(std::unique_ptr<BlockReader> inner,
                                                  const std::string& path, uint64_t key);

/// Reads a whole pass of `reader` and returns its summary (keeps no block).
StreamSummary scan_blocks(BlockReader& reader);

class CorpusStream {
 public:
  /// At most `max_bytes` of encoded blocks (4 bytes a token, 8 a sentence) wait in the window,
  /// and at least one block.
  explicit CorpusStream(uint64_t max_bytes) : max_bytes_(max_bytes) {}
  ~CorpusStream();
  CorpusStream(const CorpusStream&) = delete;
  CorpusStream& operator=(const CorpusStream&) = delete;

  /// Starts a pass over `reader` on the producer thread, from block `first_block` (the blocks
  /// before it are read and dropped). Ends the pass before, if one is running.
  void start(std::unique_ptr<BlockReader> reader, uint64_t first_block);

  /// Waits for the next `n` blocks (fewer when the window cannot hold them or the pass ends)
  /// and makes `view` hold them (with its bases set);
  /// appends to `bounds` (block boundaries as sentence indices, `bounds[0]` = 0) those of every
  /// block read so far that it lacks. Returns how many blocks `view` holds: 0 at the end of
  /// the pass. Rethrows what the producer threw.
  uint64_t take(uint64_t n, EncodedCorpus& view, std::vector<uint64_t>& bounds);

  /// The summary of the pass, once take() has returned 0.
  const StreamSummary& summary() const { return summary_; }
  /// The most bytes of blocks that waited in the window at once.
  uint64_t peak_bytes() const { return peak_bytes_; }

 private:
  void produce(std::unique_ptr<BlockReader> reader, uint64_t first_block);
  void stop();

  uint64_t max_bytes_;
  std::thread producer_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<StreamBlock> window_;
  uint64_t window_bytes_ = 0;
  uint64_t peak_bytes_ = 0;
  std::vector<uint64_t> bounds_;  ///< every boundary read this pass
  bool done_ = false, stopping_ = false;
  bool full_ = false;  ///< the producer waits for room
  std::exception_ptr error_;
  StreamSummary summary_;
};

}  // namespace pagedw2v
