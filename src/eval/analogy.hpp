#pragma once
/// @file analogy.hpp
/// Word-analogy accuracy ("a is to b as c is to d"), with the semantics of gensim 4.2's
/// `KeyedVectors.evaluate_word_analogies(path, restrict_vocab, case_insensitive=True)` and of
/// word2vec's compute-accuracy: 3CosAdd over the most frequent rows, the question words excluded.

#include <cstdint>
#include <string>
#include <vector>

#include "io/embeddings.hpp"

namespace pagedw2v {

/// Results of one ": name" section of a questions file.
struct AnalogySection {
  std::string name;
  uint64_t correct = 0;
  uint64_t incorrect = 0;
  uint64_t oov = 0;  ///< questions skipped because a word is outside the restricted vocabulary

  uint64_t evaluated() const { return correct + incorrect; }
  /// correct / evaluated in percent; 0 when nothing was evaluated.
  double accuracy_pct() const { return evaluated() ? 100.0 * correct / evaluated() : 0.0; }
};

/// Results of a whole questions file.
struct AnalogyReport {
  std::vector<AnalogySection> sections;  ///< in file order
  uint64_t correct = 0;                  ///< over all sections
  uint64_t incorrect = 0;
  uint64_t questions = 0;       ///< well-formed question lines (four words)
  uint64_t oov = 0;             ///< of those, skipped for a word outside the restricted vocabulary
  uint64_t restrict_vocab = 0;  ///< rows searched: min(restrict_vocab, rows)
  uint64_t nonfinite_rows = 0;  ///< of those, rows left out for a NaN or an infinity

  uint64_t evaluated() const { return correct + incorrect; }
  /// Total accuracy in percent over the evaluated questions; 0 when none was evaluated.
  double accuracy_pct() const { return evaluated() ? 100.0 * correct / evaluated() : 0.0; }
  /// Skipped questions in percent of all questions.
  double oov_pct() const { return questions ? 100.0 * oov / questions : 0.0; }
};

/// The questions of the semantic sections and of the syntactic ones, summed: a section is
/// syntactic when its name starts with "gram" (questions-words.txt's gram1-adjective-to-adverb …
/// gram9-plural-verbs), else semantic (capital-common-countries … family), as word2vec's
/// compute-accuracy subtotals them.
struct AnalogySubtotals {
  AnalogySection semantic{"semantic"};
  AnalogySection syntactic{"syntactic"};
};

/// The semantic and syntactic subtotals of `report`'s sections.
AnalogySubtotals analogy_subtotals(const AnalogyReport& report);

/// Answers every question of `questions_path` (lines `a b c d` under ": section" headers) as
/// argmax over the first `restrict_vocab` rows of cos(x, b) − cos(x, a) + cos(x, c), the rows of
/// a, b and c (and their case variants) excluded; the answer is right when it equals d ignoring
/// case. Words are matched case-insensitively (ASCII); when two rows differ only in case, the
/// first (more frequent) one stands for both. Questions with a word outside the first
/// `restrict_vocab` rows are skipped and counted; lines without four words are ignored. Rows that
/// hold a NaN or an infinity are left out and counted: their words count as unknown.
/// `restrict_vocab` 0 means all rows. Runs on all hardware threads.
/// Throws Error when the file cannot be read or a question comes before the first header.
AnalogyReport evaluate_analogies(const LoadedEmbeddings& embeddings,
                                 const std::string& questions_path,
                                 uint32_t restrict_vocab = 30000);

}  // namespace pagedw2v
