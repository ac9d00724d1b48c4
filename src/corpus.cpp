#include "corpus.hpp"

#include <algorithm>

#include "tokenizer.hpp"

namespace pagedw2v {

EncodedCorpus encode_corpus(std::string_view text, const Vocab& vocab, uint32_t max_sentence) {
  EncodedCorpus c;
  // Each token takes a byte and a separator: a count from a damaged file cannot ask for more.
  c.tokens.reserve(std::min<uint64_t>(vocab.total_count(), text.size() / 2 + 1));
  c.sentence_starts.push_back(0);
  uint64_t sentence_start = 0;
  auto end_sentence = [&] {
    if (c.tokens.size() > sentence_start) {
      sentence_start = c.tokens.size();
      c.sentence_starts.push_back(sentence_start);
    }
  };
  tokenize(
      text,
      [&](std::string_view w) {
        const int64_t id = vocab.find(w);
        if (id < 0) return;
        c.tokens.push_back(static_cast<uint32_t>(id));
        if (c.tokens.size() - sentence_start >= max_sentence) end_sentence();
      },
      end_sentence);
  end_sentence();
  return c;
}

std::vector<uint64_t> make_blocks(const EncodedCorpus& corpus, uint64_t target_words) {
  std::vector<uint64_t> blocks{0};
  const uint64_t n = corpus.sentences();
  uint64_t block_start_token = 0;
  for (uint64_t s = 0; s < n; ++s) {
    const uint64_t end_token = corpus.sentence_starts[s + 1];
    if (end_token - block_start_token >= target_words || s + 1 == n) {
      blocks.push_back(s + 1);
      block_start_token = end_token;
    }
  }
  return blocks;
}

}  // namespace pagedw2v
