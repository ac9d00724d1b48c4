#pragma once
/// @file phrase_file.hpp
/// The phrases that passes learned, as a text file to keep and use again (as gensim's frozen
/// Phrases are): one line a phrase, `pass<TAB>first<TAB>second<TAB>count<TAB>score`, the passes
/// in order and each pass's phrases by score, highest first, after one `#` line naming the
/// columns. Reading it back gives tables that join a text exactly as the learned ones did.

#include <string>
#include <vector>

#include "text/phrases.hpp"

namespace pagedw2v {

/// The text of the phrase file of `tables` (pass k is tables[k - 1]).
std::string phrase_file_text(const std::vector<PhraseTable>& tables);

/// Reads a phrase file: its tables, one a pass. Throws Error naming the file and the line when
/// it cannot be read or a line breaks the format (a pass out of order, a word with a space, a
/// pair twice in one pass).
std::vector<PhraseTable> read_phrase_file(const std::string& path);

}  // namespace pagedw2v
