#pragma once
/// @file foreign_flags.hpp
/// The command line as users of other tools type it: word2vec.c's and fastText's single-dash
/// flags read as ours (each option's `foreign` names in config.hpp's table, and the few whose
/// value changes), and the nearest valid option for a name that is none.

#include <string>
#include <vector>

namespace pagedw2v {

/// The valid option nearest to `given` (a name without dashes that is not valid), written as it
/// is to be typed ("--epochs", "--model cbow"), or "" when none is near. Knows the names of
/// word2vec, gensim and fastText (`iter`, `size`, `cbow`, `vector_size`, `minCount` …) and
/// otherwise takes the closest spelling; suggests only names in `valid`.
std::string suggest_option(const std::string& given, const std::vector<std::string>& valid);

/// `pagedw2v train`'s arguments as its parser takes them:
/// - the single-dash flags of word2vec.c (`-train`, `-size`, `-iter`, `-cbow`, `-save-vocab`,
///   `-read-vocab`, …) and of fastText (`-input`, `-dim`, `-epoch`, `-minCount`, `-ws`, `-neg`,
///   `-lr`, `-thread`, `-t`, `-loss ns|hs`, `-maxn 0`, …) rewritten as ours: the options' `foreign`
///   names, and the few whose value changes; `*note` is set to one line saying what was read as
///   what, or left empty when nothing was;
/// - corpus inputs that follow the options (`--output D a.txt b.txt`) moved to `--corpus`: paths
///   that exist, and `-`; any other word is left for the parser to refuse.
/// Throws UsageError for a flag of theirs with no counterpart (`-minn 3`, `-cw`, …) and
/// for any other single-dash name (`-epochs`: did you mean --epochs?).
std::vector<std::string> translate_foreign_flags(const std::vector<std::string>& args,
                                                 std::string* note);

}  // namespace pagedw2v
