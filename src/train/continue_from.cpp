/// @file continue_from.cpp
/// A run continued from a finished one (continue_from.hpp): its checkpoint found, its settings
/// merged, its vocabulary grown and its tables carried over.

#include "train/continue_from.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>

#include "base/error.hpp"
#include "train/run_record.hpp"
#include "train/run_setup.hpp"

namespace pagedw2v {

std::string continue_checkpoint(const std::string& run_or_checkpoint) {
  const std::string& path = run_or_checkpoint;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw Error("--continue-from '" + path + "': " + std::strerror(errno));
  }
  // A file is read as a checkpoint: load_checkpoint says when it is not one.
  if (!S_ISDIR(st.st_mode)) return path;
  const std::string latest = path + "/checkpoints/latest.h5";
  if (::stat(latest.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    // The file the link names now: the next checkpoint of a run still going moves the link.
    char* real = ::realpath(latest.c_str(), nullptr);
    if (real == nullptr) return latest;
    const std::string file = real;
    std::free(real);
    return file;
  }
  if (::access((path + "/run.json").c_str(), F_OK) == 0) {
    throw Error("--continue-from '" + path +
                "': the run keeps no checkpoint (it was trained with --keep-checkpoints 0), and "
                "only a checkpoint holds the output vectors and optimizer state that continuing "
                "needs");
  }
  throw Error("--continue-from '" + path +
              "' is neither a run directory (one with checkpoints/latest.h5) nor a checkpoint");
}

std::string run_output_set(const std::string& checkpoint) {
  std::ifstream in(run_record_path_of(checkpoint));
  if (!in) return "";
  const nlohmann::json record = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!record.is_object() || !record.contains("output_set") || !record["output_set"].is_string()) {
    return "";
  }
  return record["output_set"].get<std::string>();
}

Config merge_for_continue(const Config& saved, const Config& requested) {
  Config merged = requested;
  for (const OptionSpec& spec : train_options()) {
    const bool given = requested.given.count(spec.name) > 0;
    if (spec.fixes_tables) {
      const std::string have = spec.get(saved);
      if (given && spec.get(requested) != have) {
        throw UsageError("--" + spec.name + " cannot change when continuing a run (the run has " +
                         have + ")");
      }
      spec.set(merged, have);
      continue;
    }
    // How a device batches is this run's plan's to decide, as a fresh run's.
    const bool device_size =
        spec.name == "negative-pool" || spec.name == "batch-words" || spec.name == "pool-words";
    if ((spec.is_model || spec.name == "epochs") && !device_size && !given) {
      spec.set(merged, spec.get(saved));
    }
  }
  merged.given = requested.given;
  return merged;
}

GrownVocab grow_vocabulary(const Vocab& old, const Vocab& fresh, const Vocab* earlier,
                           uint64_t min_count, uint64_t max_vocab) {
  struct Entry {
    uint64_t count;
    uint32_t old_row;  // kNew for a word the old vocabulary does not have
    uint32_t fresh_row;
  };
  constexpr uint32_t kNew = UINT32_MAX;
  std::vector<Entry> entries;
  entries.reserve(old.size());
  GrownVocab g;
  for (uint32_t r = 0; r < old.size(); ++r) {
    const int64_t f = fresh.find(old.word(r));
    entries.push_back(
        {old.count(r) + (f >= 0 ? fresh.count(static_cast<uint32_t>(f)) : 0), r, kNew});
    g.counted_before += old.count(r);
  }
  // The new text's words in its order (by count, then first occurrence).
  std::vector<Entry> added;
  for (uint32_t r = 0; r < fresh.size(); ++r) {
    if (old.find(fresh.word(r)) >= 0) continue;
    uint64_t before = 0;
    if (earlier != nullptr) {
      const int64_t e = earlier->find(fresh.word(r));
      if (e >= 0) before = earlier->count(static_cast<uint32_t>(e));
    }
    const uint64_t count = fresh.count(r) + before;
    if (count >= min_count) added.push_back({count, kNew, r});
  }
  // --max-vocab keeps the most frequent of the added words (the old ones stay whatever it says).
  std::stable_sort(added.begin(), added.end(),
                   [](const Entry& a, const Entry& b) { return a.count > b.count; });
  if (max_vocab > 0) {
    added.resize(
        std::min<uint64_t>(added.size(), max_vocab > old.size() ? max_vocab - old.size() : 0));
  }
  g.added = added.size();
  // What the new text trains without: its words neither old nor added.
  for (uint32_t r = 0; r < fresh.size(); ++r) {
    if (old.find(fresh.word(r)) < 0) {
      ++g.left_out;
      g.left_out_tokens += fresh.count(r);
    }
  }
  g.left_out -= g.added;
  for (const Entry& e : added) g.left_out_tokens -= fresh.count(e.fresh_row);
  for (const Entry& e : added) {
    g.counted_before += e.count - fresh.count(e.fresh_row);
    entries.push_back(e);
  }
  std::stable_sort(entries.begin(), entries.end(),
                   [](const Entry& a, const Entry& b) { return a.count > b.count; });
  std::vector<std::string> words;
  std::vector<uint64_t> counts;
  words.reserve(entries.size());
  counts.reserve(entries.size());
  g.row_of_old.assign(old.size(), 0);
  for (const Entry& e : entries) {
    const bool is_old = e.old_row != kNew;
    if (is_old) g.row_of_old[e.old_row] = static_cast<uint32_t>(words.size());
    words.emplace_back(is_old ? old.word(e.old_row) : fresh.word(e.fresh_row));
    counts.push_back(e.count);
  }
  g.vocab = Vocab::from_words(words, std::move(counts));
  return g;
}

GrownVocab grow_from_run(const Checkpoint& run, CorpusText& text, const Config& config) {
  // Every word of the new text, whatever its count: an old word's count grows by each.
  Config every = config;
  every.min_count = 1;
  every.max_vocab = 0;
  const Vocab fresh = count_corpus_vocabulary(text, text.parts(), every, false);
  std::optional<Vocab> earlier;
  if (config.continue_count == ContinueCount::kMerged) {
    const std::vector<std::string> paths = corpus_paths(run.config);
    for (const std::string& p : paths) {
      if (p == "-") {
        throw Error(
            "--continue-count merged counts the run's corpus again, but it was read from "
            "standard input; use --continue-count new");
      }
    }
    every.corpus = run.config.corpus;
    CorpusText before = CorpusText::open(paths);
    earlier = count_corpus_vocabulary(before, before.parts(), every, false);
  }
  return grow_vocabulary(run.vocab, fresh, earlier ? &*earlier : nullptr, config.min_count,
                         config.max_vocab);
}

void carry_rows(const Model& old, const std::vector<uint32_t>& row_of_old, Model& model,
                uint64_t first_word, uint64_t word_step) {
  if (old.input.dim() != model.input.dim() || old.input.storage() != model.input.storage() ||
      old.input_state.size() != model.input_state.size() || row_of_old.size() != old.input.rows()) {
    throw Error("the tables to continue from do not match the run's settings");
  }
  // Raw values, so 16-bit storage is copied as it is.
  const size_t row_bytes = static_cast<size_t>(old.input.dim()) * old.input.value_bytes();
  const auto carry = [&](const HostTable& from, HostTable& to) {
    for (uint64_t r = 0; r < row_of_old.size(); ++r) {
      const uint64_t word = row_of_old[r];
      if (word < first_word || (word - first_word) % word_step != 0) continue;
      const uint64_t row = (word - first_word) / word_step;
      if (row >= to.rows()) throw Error("a word to continue from lies past the tables");
      std::memcpy(to.raw_row(row), from.raw_row(r), row_bytes);
    }
  };
  carry(old.input, model.input);
  carry(old.output, model.output);
  for (size_t k = 0; k < old.input_state.size(); ++k) {
    carry(old.input_state[k], model.input_state[k]);
    carry(old.output_state[k], model.output_state[k]);
  }
}

Model continued_model(const Model& old, const std::vector<uint32_t>& row_of_old, uint64_t rows,
                      const Config& config, bool interleaved) {
  if (old.input.dim() != config.dim || old.input.storage() != config.storage ||
      old.input_state.size() != state_tables(config.optimizer)) {
    throw Error("the tables to continue from do not match the run's settings");
  }
  Model model = allocate_model(rows, config.dim, config.optimizer, interleaved,
                               "lower --dim, or --min-count fewer new words", config.storage);
  // Every row as a fresh run of this vocabulary has it (new words keyed by their rows), then the
  // old words' rows as the run left them.
  init_model(model, config.seed, config.effective_threads());
  carry_rows(old, row_of_old, model);
  return model;
}

}  // namespace pagedw2v
