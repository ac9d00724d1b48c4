#pragma once
/// @file synthetic_corpus.hpp
/// A corpus without a file, for `pagedw2v bench train --synthetic VOCAB,WORDS,ZIPF`: a
/// vocabulary of VOCAB words `w0` … `w<VOCAB−1>` whose counts are what Zipf's law expects, and
/// WORDS tokens drawn independently from that law, so that tables of any size can be timed
/// without a corpus of that size on disk.

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "corpus/corpus.hpp"
#include "train/training_set.hpp"
#include "vocab/vocab.hpp"

namespace pagedw2v {

/// Tokens per synthetic sentence: about a line of mix5m (52 words on average). The CUDA kernels
/// train a sentence per warp, so sentence length sets how finely a batch spreads over the GPU.
inline constexpr uint64_t kSyntheticSentenceLength = 50;

struct SyntheticSpec {
  uint32_t vocab = 0;  ///< distinct words
  uint64_t words = 0;  ///< tokens of one epoch
  double zipf = 1.0;   ///< exponent s: rank r (from 1) is drawn with probability ∝ r^−s
};

/// Parses `VOCAB,WORDS,ZIPF` (e.g. `10000000,200000000,1.0`): VOCAB in [1, 4294967294], WORDS
/// in [1, 2^40], ZIPF in [0, 10]. Throws UsageError naming --synthetic otherwise.
SyntheticSpec parse_synthetic_spec(const std::string& text);

/// The expected count of every rank among `spec.words` draws, rounded and at least 1: row i
/// holds rank i + 1, so the counts descend as a counted vocabulary's do. The result does not
/// depend on `threads`.
std::vector<uint64_t> zipf_counts(const SyntheticSpec& spec, uint32_t threads);

/// The vocabulary: row i is the word `w<i>` with zipf_counts()[i].
Vocab synthetic_vocab(const SyntheticSpec& spec, uint32_t threads);

/// `spec.words` ids drawn independently from Zipf(spec.zipf) over the ranks (id = rank − 1), in
/// sentences of kSyntheticSentenceLength tokens (the last may be shorter). Tokens 2k and 2k + 1
/// come from the Philox draw of counter k under `seed`, so the corpus depends on the seed only, not
/// on `threads`.
EncodedCorpus synthetic_corpus(const SyntheticSpec& spec, uint64_t seed, uint32_t threads);

/// Writes the synthetic corpus of `spec` and `seed` as files that `pagedw2v train` reads:
/// `corpus_path`, a sentence of kSyntheticSentenceLength words a line (`w<id>` separated by
/// spaces), and `vocab_path`, the vocabulary with its expected counts (word<TAB>count lines, as
/// `train --vocab` reads them), so that `train --corpus corpus_path --vocab vocab_path
/// --min-count 1` trains on the rows and tokens `bench train --synthetic` times, and mpirun can
/// run it over ranks. Neither file may exist already (UsageError); each appears whole or not at
/// all (base/atomic_file.hpp).
void write_synthetic_files(const SyntheticSpec& spec, uint64_t seed, uint32_t threads,
                           const std::string& corpus_path, const std::string& vocab_path);

/// The training set of a synthetic corpus: its vocabulary, its tokens (seeded by
/// `config.seed`, generated on `config.effective_threads()` threads), and the blocks and
/// samplers that make_training_set() builds for a text corpus.
TrainingSet make_synthetic_training_set(const SyntheticSpec& spec, const Config& config);

}  // namespace pagedw2v
