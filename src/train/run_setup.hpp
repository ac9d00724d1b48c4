#pragma once
/// @file run_setup.hpp
/// The steps that set up a fresh run in one process, shared by `train` (trainer.cpp) and
/// `pagedw2v bench train`: the vocabulary counted from the corpus text, the words of an encoded
/// corpus packed, the placement and the sizes paged tables leave to the plan decided once, and
/// the model's tables allocated and initialised. The training set is made by make_training_set
/// (training_set.hpp) and the backend by make_backend (backend_factory.hpp) between them, under
/// the run's plan (run_plan.hpp).

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "backend/backend.hpp"
#include "config/config.hpp"
#include "config/options.hpp"
#include "model/model.hpp"
#include "text/text_source.hpp"
#include "train/run_plan.hpp"
#include "train/training_set.hpp"
#include "vocab/vocab.hpp"

namespace pagedw2v {

/// The vocabulary of `parts` (the texts of `text`, or a copy of them) with `config`'s limits,
/// text options and threads (count_vocabulary). The text the count has read leaves this
/// process's resident memory as it goes (CorpusText::release: a mapped file's pages stay in the
/// page cache for the encoder), so that counting a large file does not hold all of it beside the
/// codes and the counting tables. `keep_tokens`: keep the codes for the encoding of the whole
/// corpus.
Vocab count_corpus_vocabulary(CorpusText& text, const std::vector<std::string_view>& parts,
                              const Config& config, bool keep_tokens);

/// Once a corpus held whole is encoded, only the checkpoints and the export read the words, a
/// slice at a time: they are kept packed (Vocab::pack_words) and the freed heap given back. A
/// failure to pack leaves them as they are: packing only saves memory.
void pack_vocabulary(TrainingSet& set, uint32_t threads);

/// The plan of a fresh run in one process (run_plan.hpp), made once from `facts` (the process's
/// one device query): plan_device for tables of the set's vocabulary, then plan_sizes over the
/// backend's view of the set, `view` applied to it when given (a streamed corpus's window), with
/// `tuning` for the CUDA backend; `config` takes the sizes the plan chose. Allocate the model
/// (make_run_model) and make the backend (make_backend) with the plan returned.
RunPlan plan_run(Config& config, const TrainingSet& set, const DeviceFacts& facts,
                 const std::function<TrainData(TrainData)>& view = nullptr,
                 const CudaBackendOptions& tuning = {});

/// The tables of a fresh run of `rows` words: allocated with `config`'s dimension, optimizer and
/// storage, interleaved when `gpu` (a plan's settings) pages them, and initialised from
/// `config`'s seed.
Model make_run_model(const Config& config, uint64_t rows, const GpuOptions& gpu);

}  // namespace pagedw2v
