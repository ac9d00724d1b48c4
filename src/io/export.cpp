#include "io/export.hpp"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "error.hpp"
#include "io/npy.hpp"
#include "io/word2vec_format.hpp"

namespace pagedw2v {
namespace {

constexpr const char* kFormats[] = {"npy", "h5", "bin", "txt"};

void check_format(const std::string& name) {
  if (std::find(std::begin(kFormats), std::end(kFormats), name) == std::end(kFormats)) {
    throw UsageError("--format: unknown format '" + name + "' (expected npy, h5, bin, txt)");
  }
}

bool wants(const ExportOptions& options, const char* format) {
  return std::find(options.formats.begin(), options.formats.end(), format) != options.formats.end();
}

void make_directory(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error("cannot create directory '" + dir + "': " + ec.message());
  if (!std::filesystem::is_directory(dir, ec)) {
    throw Error("cannot create directory '" + dir + "': a file of that name exists");
  }
}

}  // namespace

std::vector<std::string> parse_formats(const std::string& csv) {
  std::vector<std::string> formats;
  size_t start = 0;
  while (start <= csv.size()) {
    size_t end = csv.find(',', start);
    if (end == std::string::npos) end = csv.size();
    std::string name = csv.substr(start, end - start);
    const size_t first = name.find_first_not_of(" \t");
    name = first == std::string::npos
               ? ""
               : name.substr(first, name.find_last_not_of(" \t") + 1 - first);
    if (!name.empty()) {
      check_format(name);
      if (std::find(formats.begin(), formats.end(), name) == formats.end()) {
        formats.push_back(name);
      }
    }
    start = end + 1;
  }
  if (formats.empty()) {
    throw UsageError("--format: expected at least one of npy, h5, bin, txt");
  }
  return formats;
}

void export_model(const std::string& dir, const Vocab& vocab, const Model& model,
                  const ExportOptions& options) {
  for (const std::string& name : options.formats) check_format(name);
  if (model.input.rows() != vocab.size()) {
    throw Error("cannot export to '" + dir + "': the vocabulary has " +
                std::to_string(vocab.size()) + " words but the model " +
                std::to_string(model.input.rows()) + " rows");
  }
  if (options.save_context &&
      (model.output.rows() != model.input.rows() || model.output.dim() != model.input.dim())) {
    throw Error("cannot export to '" + dir +
                "': the context vectors and the vectors differ in shape");
  }

  make_directory(dir);
  const std::string base = dir.empty() || dir.back() == '/' ? dir : dir + "/";
  vocab.save_tsv(base + "vocab.tsv");
  if (wants(options, "npy")) {
    write_npy(base + "vectors.npy", model.input.data(), model.input.rows(), model.input.dim(),
              model.input.stride());
    if (options.save_context) {
      write_npy(base + "context_vectors.npy", model.output.data(), model.output.rows(),
                model.output.dim(), model.output.stride());
    }
  }
  if (wants(options, "h5")) {
    write_embeddings_h5(base + "embeddings.h5", vocab, model.input,
                        options.save_context ? &model.output : nullptr, options.attributes);
  }
  if (wants(options, "bin")) write_word2vec_bin(base + "vectors.bin", vocab, model.input);
  if (wants(options, "txt")) write_word2vec_txt(base + "vectors.txt", vocab, model.input);
}

}  // namespace pagedw2v
