#pragma once
/// @file vocab_file.hpp
/// Vocabulary files in the two formats a user may hold: ours (`word<TAB>count`, as vocab.tsv and
/// `--save-vocab` write) and word2vec.c's (`word count`, as its `-save-vocab` writes, its first
/// line `</s>`, the sentence end that word2vec counts as a word).

#include <string>

#include "vocab/vocab.hpp"

namespace pagedw2v {

/// How a vocabulary file is written.
enum class VocabFileFormat {
  kTsv,       ///< `word<TAB>count` lines in row order (Vocab::save_tsv)
  kWord2vec,  ///< word2vec.c's SaveVocab: `word count` lines, `</s> 0` first
};

/// The format's name as `--save-vocab-format` takes it ("tsv", "word2vec").
const char* to_string(VocabFileFormat format);
/// Parses a format's name; false when it is none.
bool parse_vocab_file_format(const std::string& text, VocabFileFormat* format);

/// Reads a vocabulary file of either format, told by its first line that is not empty: a tab in
/// it means ours (Vocab::load_tsv), else word2vec's, whose `</s>` lines are left out (pagedw2v
/// ends sentences at line ends without a word for it). Rows in file order. Throws Error naming
/// the file and line on bad input; each word passes Vocab::check_file_word (`tokenizer_words`:
/// a vocabulary to train with).
Vocab load_vocab_file(const std::string& path, bool tokenizer_words = false);

/// Writes `vocab` to `path` in `format` (to a temporary name, then renamed). word2vec's format
/// starts with `</s> 0`, so that word2vec.c's -read-vocab, which takes its first word for the
/// sentence end, reads the rest as words; pagedw2v does not count sentence ends.
void save_vocab_file(const Vocab& vocab, const std::string& path, VocabFileFormat format);

}  // namespace pagedw2v
