/// @file run_phrases.cpp
/// A run's phrases (--phrases N, --phrases-from FILE): word2phrase's passes learned over the
/// corpus text as `pagedw2v phrases` learns them (text/phrases.hpp), or read from a phrase file,
/// and applied to the text in memory before it is counted, so that the count, the encoder and a
/// checkpoint's corpus check read the joined text; a streamed corpus joins its text anew each
/// pass (corpus_stream.hpp, phrased_block_reader). Nothing is written but the phrase table
/// (phrases.tsv, with the export).

#include <algorithm>
#include <cstdio>
#include <string>

#include "base/free_heap.hpp"
#include "text/phrase_file.hpp"
#include "text/phrases.hpp"
#include "train/training_run.hpp"

namespace pagedw2v {

using run_steps::seconds_since;

namespace {

PhraseOptions phrase_options_of(const Config& config) {
  PhraseOptions po;
  po.threshold = config.phrase_threshold;
  po.min_count = config.phrase_min_count;
  po.passes = config.phrases;
  po.max_pairs = config.phrase_max_pairs;
  po.threads = config.effective_threads();
  po.text = config.text_options();
  return po;
}

}  // namespace

void TrainingRun::join_phrases() {
  if (config.phrases == 0 && config.phrases_from.empty()) return;
  t = Clock::now();
  phrase_options = phrase_options_of(config);
  const PhraseOptions& po = phrase_options;
  const PhraseText source = PhraseText::of(text);
  std::vector<PhraseTable>& tables = phrase_tables;
  if (!config.phrases_from.empty()) {
    tables = read_phrase_file(config.phrases_from);
    size_t n = 0;
    for (const PhraseTable& table : tables) n += table.size();
    if (out) {
      std::fprintf(out, "phrases: %zu passes, %zu phrases read from '%s'\n", tables.size(), n,
                   config.phrases_from.c_str());
    }
  } else {
    tables = learn_phrases(
        source, po, [&](uint32_t pass, const PhraseTable& table, const PhrasePassStats& s) {
          phrase_summary.words.push_back(s.words);
          if (out) {
            std::fprintf(out, "phrases: %s (%.2f s)\n", describe_pass(pass, table, s).c_str(),
                         seconds_since(t));
          }
        });
  }
  for (const PhraseTable& table : tables) phrase_summary.phrases.push_back(table.size());
  // The joined text replaces the inputs' (whose mapped pages the passes let go as they read).
  std::string joined;
  joined.reserve(text.bytes() + text.parts().size() + 1);
  const PhraseOutputStats written =
      apply_phrases(source, tables, po, [&](std::string_view s) { joined.append(s); });
  phrase_summary.joined = written.joined;
  phrase_summary.file_text = phrase_file_text(tables);
  // The inputs and the tables stay until the run knows whether it streams (encode_corpus).
  phrase_source = std::move(text);
  text = CorpusText::of_text(std::move(joined), "the corpus with its phrases joined");
  times.phrases = seconds_since(t);
  if (out) {
    std::fprintf(out, "phrases: %llu of %llu tokens joined, %llu bytes of text (%.2f s)\n",
                 static_cast<unsigned long long>(written.joined),
                 static_cast<unsigned long long>(written.tokens),
                 static_cast<unsigned long long>(written.bytes), times.phrases);
  }
}

}  // namespace pagedw2v
