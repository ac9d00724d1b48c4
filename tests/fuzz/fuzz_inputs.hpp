#pragma once
// What the fuzz targets do with one input, shared with the regression test that replays the
// inputs kept under tests/fuzz/regressions/. A broken invariant throws std::logic_error (a crash
// for libFuzzer, a failure for GoogleTest); bad input that the program reports as an Error is
// an expected outcome.

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.hpp"
#include "corpus/corpus.hpp"
#include "text/tokenizer.hpp"
#include "train/checkpoint.hpp"
#include "vocab/vocab.hpp"

namespace pagedw2v::fuzz {

inline void require(bool ok, const char* what) {
  if (!ok) throw std::logic_error(what);
}

/// The corpus reader on any bytes: the first byte picks --min-count, --max-vocab, the sentence
/// cut and the block size; the rest is the corpus text.
inline void corpus_input(std::string_view input) {
  const unsigned char knobs = input.empty() ? 0 : static_cast<unsigned char>(input[0]);
  const std::string_view text = input.empty() ? input : input.substr(1);
  VocabOptions options;
  options.min_count = 1 + (knobs & 3);
  options.max_vocab = (knobs >> 2) & 7;
  const uint32_t max_sentence = 1 + ((knobs >> 5) & 7) * 3;
  const uint64_t block_words = 1 + (knobs & 15);

  const Vocab vocab = Vocab::count(text, options);
  uint64_t kept = 0;
  for (uint32_t id = 0; id < vocab.size(); ++id) {
    const std::string_view w = vocab.word(id);
    require(!w.empty() && w.size() <= kMaxWordBytes, "word length");
    for (const char c : w) require(!is_space_byte(static_cast<unsigned char>(c)), "word bytes");
    require(vocab.find(w) == static_cast<int64_t>(id), "find(word(i)) == i");
    require(vocab.count(id) >= options.min_count, "min-count");
    require(id == 0 || vocab.count(id - 1) >= vocab.count(id), "counts sorted");
    kept += vocab.count(id);
  }
  require(options.max_vocab == 0 || vocab.size() <= options.max_vocab, "max-vocab");
  require(kept == vocab.total_count() && kept <= vocab.corpus_tokens(), "token counts");

  const EncodedCorpus corpus = encode_corpus(text, vocab, max_sentence);
  require(corpus.size() == vocab.total_count(), "every kept token is encoded");
  for (const uint32_t t : corpus.tokens) require(t < vocab.size(), "token id in range");
  const auto& starts = corpus.sentence_starts;
  require(!starts.empty() && starts.front() == 0 && starts.back() == corpus.size(),
          "sentence bounds");
  for (size_t s = 1; s < starts.size(); ++s) {
    require(starts[s] > starts[s - 1] && starts[s] - starts[s - 1] <= max_sentence,
            "sentence lengths");
  }

  const std::vector<uint64_t> blocks = make_blocks(corpus, block_words);
  require(!blocks.empty() && blocks.front() == 0 && blocks.back() == corpus.sentences(),
          "block bounds");
  for (size_t b = 1; b < blocks.size(); ++b) require(blocks[b] > blocks[b - 1], "blocks grow");
}

/// The checkpoint loader on any bytes, written to `scratch_path`. A file it refuses must be
/// refused with an Error; a file it accepts must be consistent.
inline void checkpoint_input(std::string_view input, const std::string& scratch_path) {
  {
    std::ofstream out(scratch_path, std::ios::binary | std::ios::trunc);
    out.write(input.data(), static_cast<std::streamsize>(input.size()));
    require(static_cast<bool>(out), "cannot write the scratch file");
  }
  try {
    const Checkpoint ck = load_checkpoint(scratch_path);
    require(ck.vocab.size() > 0, "empty vocabulary accepted");
    require(ck.model.input.rows() == ck.vocab.size() && ck.model.output.rows() == ck.vocab.size(),
            "tables and vocabulary agree");
    require(ck.model.input.dim() == ck.config.dim && ck.model.output.dim() == ck.config.dim,
            "tables have the configured dimension");
  } catch (const Error&) {
    // Refused with a message: what the command line prints.
  }
  ::unlink(scratch_path.c_str());
}

/// The inputs kept in `dir` (a folder of tests/fuzz/regressions/), sorted by name.
inline std::vector<std::string> regression_inputs(const std::filesystem::path& dir) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.is_regular_file()) files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace pagedw2v::fuzz
