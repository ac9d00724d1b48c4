#pragma once
/// @file continue_from.hpp
/// A run continued from a finished one on new text (`train --continue-from RUN --corpus NEW`),
/// as gensim's build_vocab(update=True) then train, or fastText's -pretrainedVectors, do it:
///
///   continue_checkpoint     the checkpoint of RUN (its checkpoints/latest.h5, or RUN itself)
///   merge_for_continue      the settings: what fixes the tables from the run, refused when
///                           given otherwise; its other model options unless given
///   grow_vocabulary         the run's words, every one kept, and the new text's words that
///                           reach --min-count, ordered by their counts over both texts
///   continued_model         the tables: each old word's rows (and optimizer state) as the run
///                           left them, each new word's as a fresh run initialises them
///
/// What follows is a fresh run's path (placement plan, backend, epochs, checkpoints): the
/// samplers are built from the grown vocabulary's counts, and the learning rate decays from
/// --alpha (--lr) over --epochs of the new text, as a fresh run's does. The run's checkpoints
/// record where it started (Config::continued), so that --resume continues it exactly.

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "model/model.hpp"
#include "text/text_source.hpp"
#include "train/checkpoint.hpp"
#include "vocab/vocab.hpp"

namespace pagedw2v {

/// The checkpoint that `run_or_checkpoint` names: the file itself, or a run directory's last
/// checkpoint (checkpoints/latest.h5). Throws Error with one line when it is missing, or when a
/// run directory keeps no checkpoint (a run trained with --keep-checkpoints 0 keeps no output
/// table nor optimizer state: continuing needs them), or when it is neither.
std::string continue_checkpoint(const std::string& run_or_checkpoint);

/// The id of the output set of the run whose checkpoint is `checkpoint` (the `output_set` of the
/// run.json beside its checkpoints' directory), or "" when there is none to read.
std::string run_output_set(const std::string& checkpoint);

/// The settings of a run continued from one with settings `saved`: the options that fix the
/// tables (OptionSpec::fixes_tables) are the saved ones, and a different value given is refused
/// with a UsageError; the other model options and --epochs are the saved ones unless given, but
/// for the sizes a device batches by (--negative-pool, --batch-words, --pool-words), which this
/// run's plan decides as a fresh run's. Everything else is `requested`'s.
Config merge_for_continue(const Config& saved, const Config& requested);

/// The vocabulary of a continued run and where the old words went.
struct GrownVocab {
  Vocab vocab;
  std::vector<uint32_t> row_of_old;  ///< by the old vocabulary's row: the word's row in `vocab`
  uint64_t added = 0;                ///< words the old vocabulary did not have
  /// Words of the new text that were not added (below --min-count, past --max-vocab), and their
  /// tokens in it: what the new text trains without.
  uint64_t left_out = 0;
  uint64_t left_out_tokens = 0;
  /// What the counts hold beyond the new text's words: the old counts, and with an `earlier`
  /// count, the added words' counts in it.
  uint64_t counted_before = 0;
};

/// The old vocabulary grown by the words of the new text: every old word, with its old count
/// plus its count in the new text; and each word of the new text the old one does not have
/// whose count in it (plus its count in `earlier`, when given: the old run's corpus counted
/// again) reaches `min_count`, at most `max_vocab` words in all (0 = no limit; the old words are
/// always kept), the most frequent first. `fresh` and `earlier` are counts of every word (min
/// count 1). Rows are ordered by count, the highest first, as a counted vocabulary's are; ties
/// keep the old words first in their order, then the new text's words in its order.
GrownVocab grow_vocabulary(const Vocab& old, const Vocab& fresh, const Vocab* earlier,
                           uint64_t min_count, uint64_t max_vocab);

/// The vocabulary of a run continued from `run` on `text` (the new corpus, as `config` reads
/// it): the new text counted (its pages released as the count reads them), with
/// --continue-count merged the run's own corpus (its recorded --corpus) counted again too, and
/// grow_vocabulary with `config`'s --min-count and --max-vocab. Throws Error when the run's
/// corpus cannot be read again (standard input, a file gone).
GrownVocab grow_from_run(const Checkpoint& run, CorpusText& text, const Config& config);

/// The starting tables of a continued run of `rows` words, allocated as a fresh run's are
/// (`config`'s dimension, optimizer and storage; interleaved when `interleaved`) and initialised
/// as a fresh run of `config`'s seed initialises them (init_model: every word by its row); then
/// each old word's rows — input, output and optimizer state — copied from `old` bit for bit into
/// row row_of_old[r]. `old` must have `config`'s dimension, optimizer and storage.
Model continued_model(const Model& old, const std::vector<uint32_t>& row_of_old, uint64_t rows,
                      const Config& config, bool interleaved);

/// Copies each old word's rows — input, output and optimizer state — from `old` into `model`
/// bit for bit, where `model` holds them: its row r holds word `first_word + r·word_step` (every
/// word by default; one rank's owned rows over ranks, dist/owned_rows.hpp). Both must have the
/// same dimension, storage and state tables.
void carry_rows(const Model& old, const std::vector<uint32_t>& row_of_old, Model& model,
                uint64_t first_word = 0, uint64_t word_step = 1);

}  // namespace pagedw2v
