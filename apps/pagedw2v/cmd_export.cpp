// `pagedw2v export`: the export files of any checkpoint.
#include <cxxopts.hpp>
#include <iostream>

#include "cli.hpp"
#include "commands.hpp"
#include "error.hpp"
#include "io/export.hpp"
#include "train/checkpoint.hpp"

namespace pagedw2v::app {

int cmd_export(int argc, char** argv) {
  cxxopts::Options options("pagedw2v export", "Write the vectors of a checkpoint.");
  options.custom_help("--checkpoint FILE --output DIR [--format npy,h5,bin,txt]");
  options.add_options()("checkpoint", "checkpoint file (e.g. RUN/checkpoints/latest.h5)",
                        cxxopts::value<std::string>())("output", "directory to write to",
                                                       cxxopts::value<std::string>())(
      "format", "output formats, comma-separated (default: npy,h5,bin,txt)",
      cxxopts::value<std::string>())("save-context", "also export the output (context) vectors")(
      "h,help", "print this help");
  cxxopts::ParseResult args;
  if (!parse_command_line(options, argc, argv, &args)) return 0;
  if (!args.count("checkpoint")) throw UsageError("--checkpoint is required");
  if (!args.count("output")) throw UsageError("--output is required");
  ExportOptions export_options;
  if (args.count("format"))
    export_options.formats = parse_formats(args["format"].as<std::string>());
  export_options.save_context = args.count("save-context") > 0;
  const Checkpoint ck = load_checkpoint(args["checkpoint"].as<std::string>());
  export_options.attributes = {{"checkpoint", args["checkpoint"].as<std::string>()},
                               {"words_trained", static_cast<int64_t>(ck.position.words_done)}};
  for (const OptionSpec& spec : train_options()) {
    if (spec.is_model || spec.name == "epochs" || spec.name == "corpus") {
      export_options.attributes.push_back({spec.name, spec.get(ck.config)});
    }
  }
  export_model(args["output"].as<std::string>(), ck.vocab, ck.model, export_options);
  return 0;
}

}  // namespace pagedw2v::app
