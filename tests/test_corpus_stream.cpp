#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "corpus/corpus.hpp"
#include "corpus/corpus_stream.hpp"
#include "model/params.hpp"
#include "test_util.hpp"
#include "text/phrases.hpp"
#include "text/text_source.hpp"

namespace pagedw2v {
namespace {

using testing_util::TempDir;

Vocab words_vocab() {
  std::vector<std::string> w;
  std::vector<uint64_t> c;
  for (int i = 0; i < 50; ++i) {
    w.push_back("w" + std::to_string(i));
    c.push_back(1000 - i);
  }
  return Vocab::from_words(w, c);
}

/// A text of words w0..w59 (w50.. are not in the vocabulary) in lines of random length, some
/// longer than a sentence may be, some empty, with runs of spaces and CRs.
std::string random_text(std::mt19937_64& rng, size_t words) {
  std::string t;
  size_t line = 0, line_len = rng() % 50;
  for (size_t i = 0; i < words; ++i) {
    t += "w" + std::to_string(rng() % 60);
    if (++line >= line_len) {
      t += rng() % 4 == 0 ? "\r\n\n" : "\n";
      line = 0;
      const uint64_t r = rng() % 20;
      line_len = r == 0 ? 2500 + rng() % 3000 : r == 1 ? 1 : rng() % 60;
    } else {
      t += rng() % 8 == 0 ? "  \t" : " ";
    }
  }
  return t;
}

EncodedCorpus whole(const std::vector<std::string>& files, const Vocab& vocab) {
  const CorpusText text = CorpusText::open(files);
  return encode_corpus(text.parts(), vocab, EncodeOptions{});
}

/// The blocks of `reader` put together again, checking each block's own invariants.
EncodedCorpus gather(BlockReader& reader, std::vector<uint64_t>* bounds) {
  EncodedCorpus c;
  c.sentence_starts.push_back(0);
  bounds->assign(1, 0);
  StreamBlock b;
  while (reader.next(b)) {
    EXPECT_EQ(b.first_sentence, c.sentences());
    EXPECT_EQ(b.starts.front(), c.tokens.size());
    EXPECT_EQ(b.starts.back() - b.starts.front(), b.tokens.size());
    c.tokens.insert(c.tokens.end(), b.tokens.begin(), b.tokens.end());
    c.sentence_starts.insert(c.sentence_starts.end(), b.starts.begin() + 1, b.starts.end());
    bounds->push_back(c.sentences());
  }
  return c;
}

class StreamedEncoding : public ::testing::TestWithParam<size_t> {};

TEST_P(StreamedEncoding, GivesTheWholeEncodingAndItsBlocks) {
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  TempDir dir;
  // Several files: each one's end ends a sentence; one is empty, one has no final newline.
  std::vector<std::string> files;
  for (int f = 0; f < 4; ++f) {
    files.push_back(dir.file("part" + std::to_string(f) + ".txt"));
    testing_util::write_file(files.back(), f == 2 ? "" : random_text(rng, 20000 + rng() % 20000));
  }
  const Vocab vocab = words_vocab();
  const EncodedCorpus expected = whole(files, vocab);
  const std::vector<uint64_t> expected_blocks = make_blocks(expected, kBlockWords);

  const CorpusText text = CorpusText::open(files);
  const detail::ShardedWordTable table = detail::lookup_table(vocab, 1);
  std::unique_ptr<BlockReader> r = text_block_reader(text, table, EncodeOptions{}, GetParam());
  std::vector<uint64_t> bounds;
  const EncodedCorpus got = gather(*r, &bounds);
  EXPECT_EQ(got.tokens, expected.tokens);
  EXPECT_EQ(got.sentence_starts, expected.sentence_starts);
  EXPECT_EQ(bounds, expected_blocks);

  // The hash of the pass is the whole corpus's.
  std::unique_ptr<BlockReader> again = text_block_reader(text, table, EncodeOptions{}, GetParam());
  const StreamSummary s = scan_blocks(*again);
  CorpusHasher h;
  h.add_tokens(expected.tokens.data(), expected.tokens.size());
  for (const uint64_t start : expected.sentence_starts) h.add_start(start);
  EXPECT_EQ(s.words, expected.size());
  EXPECT_EQ(s.sentences, expected.sentences());
  EXPECT_EQ(s.blocks, expected_blocks.size() - 1);
  EXPECT_EQ(s.hash, h.hash());
}

// Slices of a few bytes (a word at a time), of a few blocks, and larger than the text.
INSTANTIATE_TEST_SUITE_P(SliceBytes, StreamedEncoding,
                         ::testing::Values(size_t{1}, size_t{7}, size_t{5000}, size_t{60000},
                                           size_t{1} << 24));

// A streamed corpus with phrases: the inputs joined a round at a time give the blocks of the
// joined text encoded whole, whatever the rounds' size and the threads that join them.
TEST_P(StreamedEncoding, WithPhrasesGivesTheJoinedTextsEncoding) {
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  TempDir dir;
  std::vector<std::string> files;
  for (int f = 0; f < 3; ++f) {
    files.push_back(dir.file("part" + std::to_string(f) + ".txt"));
    std::string t = random_text(rng, 15000 + rng() % 15000);
    // Collocations for the passes to join: w1 w2 often, w1 w2 w3 sometimes.
    for (size_t at = t.find("w7 "); at != std::string::npos; at = t.find("w7 ", at + 12)) {
      t.replace(at, 3, rng() % 3 == 0 ? "w1 w2 w3 " : "w1 w2 ");
    }
    if (f == 1) t.pop_back();  // no final newline
    testing_util::write_file(files.back(), t);
  }
  const CorpusText text = CorpusText::open(files);
  for (const uint32_t threads : {1u, 2u}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    PhraseOptions po;
    po.threshold = 1;
    po.min_count = 3;
    po.passes = 2;
    po.threads = threads;
    po.min_bytes_per_thread = 1000;
    const std::vector<PhraseTable> tables = learn_phrases(PhraseText::of(text), po);
    ASSERT_GT(tables[0].size(), 0u);
    std::string joined;
    apply_phrases(PhraseText::of(text), tables, po, [&](std::string_view s) { joined.append(s); });
    ASSERT_NE(joined.find("w1_w2"), std::string::npos);
    std::vector<std::string> words;
    std::vector<uint64_t> counts;
    for (int i = 0; i < 60; ++i) {
      words.push_back("w" + std::to_string(i));
      counts.push_back(1000 - i);
    }
    words.insert(words.end(), {"w1_w2", "w1_w2_w3"});
    counts.insert(counts.end(), {10, 9});
    const Vocab vocab = Vocab::from_words(words, counts);
    const EncodedCorpus expected = encode_corpus(joined, vocab);
    const std::vector<uint64_t> expected_blocks = make_blocks(expected, kBlockWords);
    const detail::ShardedWordTable table = detail::lookup_table(vocab, 1);
    std::unique_ptr<BlockReader> r =
        phrased_block_reader(text, tables, po, table, EncodeOptions{}, GetParam());
    std::vector<uint64_t> bounds;
    const EncodedCorpus got = gather(*r, &bounds);
    EXPECT_EQ(got.tokens, expected.tokens);
    EXPECT_EQ(got.sentence_starts, expected.sentence_starts);
    EXPECT_EQ(bounds, expected_blocks);
  }
}

TEST(CorpusHasher, DependsOnEveryTokenAndEverySentenceCut) {
  EncodedCorpus a;
  a.tokens = {1, 2, 3, 4, 5};
  a.sentence_starts = {0, 2, 5};
  auto hash = [](const EncodedCorpus& c) {
    CorpusHasher h;
    // Fed in uneven pieces: the result does not depend on how.
    h.add_tokens(c.tokens.data(), 1);
    h.add_tokens(c.tokens.data() + 1, 3);
    h.add_tokens(c.tokens.data() + 4, c.tokens.size() - 4);
    for (const uint64_t s : c.sentence_starts) h.add_start(s);
    return h.hash();
  };
  CorpusHasher whole_hasher;
  whole_hasher.add_tokens(a.tokens.data(), a.tokens.size());
  for (const uint64_t s : a.sentence_starts) whole_hasher.add_start(s);
  EXPECT_EQ(hash(a), whole_hasher.hash());
  EncodedCorpus b = a;
  b.tokens[4] = 6;
  EXPECT_NE(hash(a), hash(b));
  b = a;
  b.sentence_starts = {0, 3, 5};
  EXPECT_NE(hash(a), hash(b));
  b = a;
  b.tokens.push_back(0);
  b.sentence_starts.back() = 6;
  EXPECT_NE(hash(a), hash(b));
}

/// A text of `words` in-vocabulary words, lines of 1..40 words.
std::string simple_text(uint64_t seed, size_t words) {
  std::mt19937_64 rng(seed);
  std::string t;
  for (size_t i = 0; i < words; ++i) {
    t += "w" + std::to_string(rng() % 50);
    t += rng() % 20 == 0 ? "\n" : " ";
  }
  return t;
}

TEST(CorpusStream, HandsOverEveryBlockOnceWithinItsWindow) {
  TempDir dir;
  const std::string file = dir.file("c.txt");
  testing_util::write_file(file, simple_text(testing_util::fresh_seed(), 200000));
  const Vocab vocab = words_vocab();
  const EncodedCorpus expected = whole({file}, vocab);
  const std::vector<uint64_t> blocks = make_blocks(expected, kBlockWords);
  const CorpusText text = CorpusText::open({file});
  const detail::ShardedWordTable table = detail::lookup_table(vocab, 1);

  const uint64_t max_bytes = 3 * kBlockWords * 4;  // about two blocks
  CorpusStream stream(max_bytes);
  for (const uint64_t first : {uint64_t{0}, uint64_t{5}}) {
    stream.start(text_block_reader(text, table, EncodeOptions{}, 10000), first);
    std::vector<uint64_t> bounds{0};
    EncodedCorpus view;
    uint64_t b = first;
    for (uint64_t n; (n = stream.take(3, view, bounds)) > 0; b += n) {
      ASSERT_LE(n, 3u);
      ASSERT_LT(b + n, bounds.size());
      EXPECT_EQ(view.sentence_base, blocks[b]);
      EXPECT_EQ(view.token_base, expected.sentence_starts[blocks[b]]);
      ASSERT_EQ(view.sentence_starts.size(), blocks[b + n] - blocks[b] + 1);
      for (uint64_t s = blocks[b]; s <= blocks[b + n]; ++s) {
        ASSERT_EQ(view.sentence_starts[s - view.sentence_base], expected.sentence_starts[s]);
      }
      for (size_t i = 0; i < view.tokens.size(); ++i) {
        ASSERT_EQ(view.tokens[i], expected.tokens[view.token_base + i]);
      }
    }
    EXPECT_EQ(b, blocks.size() - 1);
    EXPECT_EQ(bounds, blocks);
    EXPECT_EQ(stream.summary().words, expected.size());
    EXPECT_EQ(stream.summary().blocks, blocks.size() - 1);
  }
  EXPECT_LE(stream.peak_bytes(), max_bytes);
  EXPECT_GT(stream.peak_bytes(), 0u);
}

/// Gives `good` blocks of one sentence, then fails.
class FailingReader final : public BlockReader {
 public:
  explicit FailingReader(int good) : good_(good) {}
  bool next(StreamBlock& out) override {
    if (n_ == good_) throw Error("the disk went away");
    out.first_sentence = n_;
    out.starts = {uint64_t(n_) * 2, uint64_t(n_) * 2 + 2};
    out.tokens = {1, 2};
    ++n_;
    return true;
  }

 private:
  int good_, n_ = 0;
};

TEST(CorpusStream, PassesOnTheReadersErrorAfterItsBlocks) {
  CorpusStream stream(1 << 20);
  stream.start(std::make_unique<FailingReader>(3), 0);
  EncodedCorpus view;
  std::vector<uint64_t> bounds{0};
  uint64_t got = 0;
  try {
    for (uint64_t n; (n = stream.take(1, view, bounds)) > 0;) got += n;
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "the disk went away");
  }
  EXPECT_LE(got, 3u);
}

TEST(EncodedCache, IsWrittenOnceAndReadBackForItsKeyOnly) {
  TempDir dir;
  const std::string file = dir.file("c.txt");
  testing_util::write_file(file, simple_text(testing_util::fresh_seed(), 50000));
  const Vocab vocab = words_vocab();
  const EncodedCorpus expected = whole({file}, vocab);
  const CorpusText text = CorpusText::open({file});
  const detail::ShardedWordTable table = detail::lookup_table(vocab, 1);
  const std::optional<uint64_t> key = encoding_key({file}, vocab, EncodeOptions{});
  ASSERT_TRUE(key.has_value());
  const std::string path = cache_path(dir.path(), *key);
  EXPECT_FALSE(read_cache_summary(path, *key).has_value());

  std::vector<uint64_t> bounds;
  {
    std::unique_ptr<BlockReader> r =
        caching_block_reader(text_block_reader(text, table, EncodeOptions{}, 4096), path, *key);
    StreamBlock b;
    ASSERT_TRUE(r->next(b));
    // Not there before the pass ends, and an abandoned pass leaves nothing.
    EXPECT_FALSE(read_cache_summary(path, *key).has_value());
  }
  EXPECT_EQ(testing_util::entries(dir.path()).size(), 1u);  // c.txt only
  {
    std::unique_ptr<BlockReader> r =
        caching_block_reader(text_block_reader(text, table, EncodeOptions{}, 4096), path, *key);
    EXPECT_EQ(gather(*r, &bounds).tokens, expected.tokens);
  }
  const std::optional<StreamSummary> s = read_cache_summary(path, *key);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->words, expected.size());
  EXPECT_EQ(s->sentences, expected.sentences());
  EXPECT_EQ(s->blocks, bounds.size() - 1);
  EXPECT_FALSE(read_cache_summary(path, *key + 1).has_value());

  std::unique_ptr<BlockReader> cached = cache_block_reader(path, *key, vocab.size());
  std::vector<uint64_t> cached_bounds;
  const EncodedCorpus got = gather(*cached, &cached_bounds);
  EXPECT_EQ(got.tokens, expected.tokens);
  EXPECT_EQ(got.sentence_starts, expected.sentence_starts);
  EXPECT_EQ(cached_bounds, bounds);

  // Another vocabulary or a changed input gives another key.
  Vocab other = Vocab::from_words({"w0", "w1"}, {5, 4});
  EXPECT_NE(encoding_key({file}, other, EncodeOptions{}), key);
  EncodeOptions lower;
  lower.text.lowercase = true;
  EXPECT_NE(encoding_key({file}, vocab, lower), key);
  EXPECT_FALSE(encoding_key({"-"}, vocab, EncodeOptions{}).has_value());

  // An id out of the vocabulary is damage, not a token to train on.
  EXPECT_THROW(
      {
        std::unique_ptr<BlockReader> small = cache_block_reader(path, *key, 3);
        StreamBlock b;
        while (small->next(b)) {
        }
      },
      Error);
  // So is a cut file.
  const std::string bytes = testing_util::read_file(path);
  testing_util::write_file(path, bytes.substr(0, bytes.size() / 2));
  EXPECT_FALSE(read_cache_summary(path, *key).has_value());
}

/// A complete cache of `file`'s encoding under `vocab` in `dir`; returns its path.
std::string write_cache(const std::string& dir, const std::string& file, const Vocab& vocab,
                        uint64_t* key_out) {
  const CorpusText text = CorpusText::open({file});
  const detail::ShardedWordTable table = detail::lookup_table(vocab, 1);
  const std::optional<uint64_t> key = encoding_key({file}, vocab, EncodeOptions{});
  EXPECT_TRUE(key.has_value());
  *key_out = *key;
  const std::string path = cache_path(dir, *key);
  std::unique_ptr<BlockReader> r =
      caching_block_reader(text_block_reader(text, table, EncodeOptions{}, 4096), path, *key);
  StreamBlock b;
  while (r->next(b)) {
  }
  return path;
}

TEST(EncodedCache, IdsDamagedWithinTheVocabularyAreFoundByTheHash) {
  TempDir dir;
  const std::string file = dir.file("c.txt");
  testing_util::write_file(file, simple_text(testing_util::fresh_seed(), 50000));
  const Vocab vocab = words_vocab();
  uint64_t key = 0;
  const std::string path = write_cache(dir.path(), file, vocab, &key);
  ASSERT_TRUE(read_cache_summary(path, key).has_value());
  EXPECT_NO_THROW(verify_cache(path, key, vocab.size()));

  // Two different ids of the first block swapped (counts, lengths and ids all still fit), then
  // one id changed to another valid one in the last block.
  const std::string good = testing_util::read_file(path);
  uint32_t counts[2];
  std::memcpy(counts, good.data() + 16, 8);
  const size_t tokens = 16 + 8 + size_t{counts[0]} * 4;
  size_t other = 1;
  while (other < counts[1] && std::memcmp(&good[tokens], &good[tokens + other * 4], 4) == 0) {
    ++other;
  }
  ASSERT_LT(other, counts[1]);
  std::string swapped = good;
  for (int k = 0; k < 4; ++k) std::swap(swapped[tokens + k], swapped[tokens + other * 4 + k]);
  std::string changed = good;
  // The footer is 44 bytes; the 4 before it are the last token.
  uint32_t last = 0;
  std::memcpy(&last, &changed[changed.size() - 44 - 4], 4);
  last = (last + 1) % vocab.size();
  std::memcpy(&changed[changed.size() - 44 - 4], &last, 4);

  for (const std::string& damaged : {swapped, changed}) {
    testing_util::write_file(path, damaged);
    ASSERT_TRUE(read_cache_summary(path, key).has_value());  // the footer is intact
    try {
      verify_cache(path, key, vocab.size());
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()),
                "encoded cache '" + path + "' is damaged; delete it and run again");
    }
    // A reader hands on the blocks before the last, never the last.
    std::unique_ptr<BlockReader> r = cache_block_reader(path, key, vocab.size());
    StreamBlock b;
    uint64_t handed = 0;
    EXPECT_THROW(
        {
          while (r->next(b)) ++handed;
        },
        Error);
    EXPECT_LT(handed, read_cache_summary(path, key)->blocks);
  }
}

TEST(EncodedCache, IsNeverWrittenThroughALinkPlantedInItsDirectory) {
  TempDir dir;
  const std::string file = dir.file("c.txt");
  testing_util::write_file(file, simple_text(testing_util::fresh_seed(), 20000));
  const std::string victim = dir.file("victim");
  testing_util::write_file(victim, "precious");
  const Vocab vocab = words_vocab();
  const std::optional<uint64_t> key = encoding_key({file}, vocab, EncodeOptions{});
  ASSERT_TRUE(key.has_value());
  ::mkdir(dir.file("cache").c_str(), 0755);
  const std::string path = cache_path(dir.file("cache"), *key);
  // Links at the names a temporary file could be guessed to have, and at the cache's own name.
  for (const std::string& name :
       {path + ".tmp." + std::to_string(::getpid()), path + ".tmp", path}) {
    ASSERT_EQ(::symlink(victim.c_str(), name.c_str()), 0) << name;
  }
  uint64_t written_key = 0;
  write_cache(dir.file("cache"), file, vocab, &written_key);
  EXPECT_EQ(testing_util::read_file(victim), "precious");
  // The cache took its name's place (the link there is replaced, not followed), and reads back.
  struct stat st {};
  ASSERT_EQ(::lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_NO_THROW(verify_cache(path, *key, vocab.size()));
}

}  // namespace
}  // namespace pagedw2v
