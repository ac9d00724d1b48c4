#include "text/phrase_file.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <utility>

#include "base/error.hpp"
#include "base/mapped_file.hpp"
#include "text/tokenizer.hpp"

namespace pagedw2v {
namespace {

constexpr const char* kHeader = "# pass\tfirst\tsecond\tcount\tscore\n";

/// Whether `word` is one the tokenizer can make: 1 to kMaxWordBytes bytes, none a space byte.
bool is_word(const std::string& word) {
  if (word.empty() || word.size() > kMaxWordBytes) return false;
  for (const char c : word) {
    if (is_space_byte(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields;
  size_t at = 0;
  for (;;) {
    const size_t tab = line.find('\t', at);
    fields.push_back(line.substr(at, tab == std::string::npos ? tab : tab - at));
    if (tab == std::string::npos) return fields;
    at = tab + 1;
  }
}

bool parse_whole(const std::string& text, uint64_t* out) {
  if (text.empty() || text.size() > 19 ||
      text.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  errno = 0;
  *out = std::strtoull(text.c_str(), nullptr, 10);
  return errno != ERANGE;
}

}  // namespace

std::string phrase_file_text(const std::vector<PhraseTable>& tables) {
  std::string out = kHeader;
  char score[64];
  for (size_t k = 0; k < tables.size(); ++k) {
    for (const PhraseTable::Phrase& p : tables[k].phrases()) {
      std::snprintf(score, sizeof score, "%.17g", p.score);
      out += std::to_string(k + 1) + '\t' + p.first + '\t' + p.second + '\t' +
             std::to_string(p.count) + '\t' + score + '\n';
    }
  }
  return out;
}

std::vector<PhraseTable> read_phrase_file(const std::string& path) {
  const MappedFile file(path);
  const std::string text = file.read([](std::string_view v) { return std::string(v); });
  std::vector<std::vector<PhraseTable::Phrase>> passes;
  std::set<std::pair<std::string, std::string>> seen;
  uint64_t line_no = 0;
  size_t at = 0;
  while (at < text.size()) {
    const size_t nl = text.find('\n', at);
    std::string line = text.substr(at, nl == std::string::npos ? nl : nl - at);
    at = nl == std::string::npos ? text.size() : nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    auto bad = [&](const std::string& why) {
      throw Error("phrase file '" + path + "' line " + std::to_string(line_no) + ": " + why);
    };
    const std::vector<std::string> f = split_tabs(line);
    if (f.size() != 5) bad("expected pass<TAB>first<TAB>second<TAB>count<TAB>score");
    uint64_t pass = 0, count = 0;
    if (!parse_whole(f[0], &pass) || pass == 0) bad("the pass must be a whole number from 1 up");
    if (pass > 16) bad("at most 16 passes, not " + f[0]);
    if (pass < passes.size() || pass > passes.size() + 1) {
      bad("pass " + f[0] + " out of order (the passes go 1, 2, ... in order)");
    }
    if (pass > passes.size()) {
      passes.emplace_back();
      seen.clear();
    }
    if (!is_word(f[1]) || !is_word(f[2])) {
      bad("a phrase's words must be 1 to " + std::to_string(kMaxWordBytes) +
          " bytes without spaces");
    }
    if (f[1].size() + 1 + f[2].size() > kMaxWordBytes) {
      bad("the joined phrase would be longer than " + std::to_string(kMaxWordBytes) + " bytes");
    }
    if (!parse_whole(f[3], &count)) bad("the count must be a whole number");
    char* end = nullptr;
    const double score = std::strtod(f[4].c_str(), &end);
    if (f[4].empty() || end != f[4].c_str() + f[4].size() || !std::isfinite(score)) {
      bad("the score must be a number");
    }
    if (!seen.insert({f[1], f[2]}).second) bad("'" + f[1] + " " + f[2] + "' twice in one pass");
    passes.back().push_back({f[1], f[2], count, score});
  }
  std::vector<PhraseTable> tables;
  tables.reserve(passes.size());
  for (std::vector<PhraseTable::Phrase>& p : passes) tables.emplace_back(std::move(p));
  return tables;
}

}  // namespace pagedw2v
