#include <gtest/gtest.h>

#include <string>

#include "base/error.hpp"
#include "base/mapped_file.hpp"
#include "corpus/corpus.hpp"
#include "test_util.hpp"

namespace pagedw2v {
namespace {

Vocab abc() { return Vocab::from_words({"a", "b", "c"}, {10, 5, 2}); }

TEST(Corpus, NewlinesEndSentencesAndOovWordsAreDropped) {
  const EncodedCorpus c = encode_corpus("a x b\n\n c a\r\nb", abc());
  EXPECT_EQ(c.tokens, (std::vector<uint32_t>{0, 1, 2, 0, 1}));
  EXPECT_EQ(c.sentence_starts, (std::vector<uint64_t>{0, 2, 4, 5}));
  EXPECT_EQ(c.sentences(), 3u);
}

TEST(Corpus, LongSentencesAreCutIntoPiecesOfMaxLength) {
  std::string text;
  for (int i = 0; i < 2500; ++i) text += "a ";
  text += "\nb b";
  const EncodedCorpus c = encode_corpus(text, abc());
  EXPECT_EQ(c.sentence_starts, (std::vector<uint64_t>{0, 1000, 2000, 2500, 2502}));
  const EncodedCorpus d = encode_corpus(text, abc(), 7);
  EXPECT_EQ(d.sentence_starts[1], 7u);
}

TEST(Corpus, TabsAndOtherSpacesSeparateWords) {
  const EncodedCorpus c = encode_corpus("a\tb\vc\fa", abc());
  EXPECT_EQ(c.tokens, (std::vector<uint32_t>{0, 1, 2, 0}));
  EXPECT_EQ(c.sentences(), 1u);
}

TEST(Corpus, EmptyAndOovOnlyTextsEncodeToNothing) {
  EXPECT_EQ(encode_corpus("", abc()).sentences(), 0u);
  EXPECT_EQ(encode_corpus("x y\n z\n", abc()).size(), 0u);
}

TEST(Corpus, BlocksCoverEverySentenceOnce) {
  std::string text;
  for (int s = 0; s < 300; ++s) {
    for (int i = 0; i < 1 + s % 17; ++i) text += "a b ";
    text += "\n";
  }
  const EncodedCorpus c = encode_corpus(text, abc());
  const auto blocks = make_blocks(c, 50);
  ASSERT_GE(blocks.size(), 2u);
  EXPECT_EQ(blocks.front(), 0u);
  EXPECT_EQ(blocks.back(), c.sentences());
  for (size_t b = 0; b + 1 < blocks.size(); ++b) {
    ASSERT_LT(blocks[b], blocks[b + 1]);
    const uint64_t words = c.sentence_starts[blocks[b + 1]] - c.sentence_starts[blocks[b]];
    if (b + 2 < blocks.size()) {
      EXPECT_GE(words, 50u);
    }
  }
}

TEST(MappedFile, MapsFilesAndRejectsMissingOnes) {
  testing_util::TempDir dir;
  testing_util::write_file(dir.file("t.txt"), "hello world");
  MappedFile f(dir.file("t.txt"));
  EXPECT_EQ(f.view(), "hello world");
  testing_util::write_file(dir.file("empty.txt"), "");
  EXPECT_EQ(MappedFile(dir.file("empty.txt")).size(), 0u);
  EXPECT_THROW(MappedFile(dir.file("nope.txt")), Error);
  EXPECT_THROW(MappedFile(dir.path()), Error);
}

}  // namespace
}  // namespace pagedw2v
