#pragma once
/// @file commands.hpp
/// The subcommands of the pagedw2v binary. Each parses its own flags and calls the library;
/// `argv[0]` is the subcommand name. Errors are thrown (UsageError, Error) and printed by main.

namespace pagedw2v::app {

int cmd_train(int argc, char** argv);
int cmd_similar(int argc, char** argv);
int cmd_eval(int argc, char** argv);
int cmd_export(int argc, char** argv);
int cmd_bench(int argc, char** argv);
// Questions about given words (cmd_query.cpp).
int cmd_word_vector(int argc, char** argv);
int cmd_similarity(int argc, char** argv);
int cmd_doesnt_match(int argc, char** argv);
int cmd_analogies(int argc, char** argv);
// Frequent word pairs joined with _ (cmd_phrases.cpp).
int cmd_phrases(int argc, char** argv);

}  // namespace pagedw2v::app
