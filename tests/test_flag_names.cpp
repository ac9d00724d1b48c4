// Every flag the product's sources name in a string literal (a message, a hint, a usage line) is
// a flag of some command: a renamed or removed flag cannot leave a stale message behind. The
// flags are read from the real binary's help (`pagedw2v --help` lists the commands, each
// command's --help its options, train's from its option table, bench's subcommands too); the
// sources are src/ and apps/ of this checkout (PAGEDW2V_SOURCE_DIR). word2vec.c's and
// fastText's single-dash flags are not `--` names and are left alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "robustness/run_binary.hpp"
#include "test_util.hpp"

namespace pagedw2v {
namespace {

using testing_util::run_binary;
using testing_util::RunResult;

/// One `--name` inside a string literal of a source file.
struct FlagMention {
  std::string name;  ///< without the dashes
  uint64_t line;     ///< 1-based
};

bool identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

/// The `--name`s of one literal's text (escapes already blanked): two dashes not inside a word
/// or a longer run of dashes, then a lower-case letter, then letters, digits and dashes.
void flags_in_literal(const std::string& text, const std::vector<uint64_t>& lines,
                      std::vector<FlagMention>* out) {
  for (size_t k = 0; k + 2 < text.size(); ++k) {
    if (text[k] != '-' || text[k + 1] != '-') continue;
    if (k > 0 && (identifier_char(text[k - 1]) || text[k - 1] == '-')) continue;
    if (!std::islower(static_cast<unsigned char>(text[k + 2]))) continue;
    size_t end = k + 2;
    while (end < text.size() &&
           (std::islower(static_cast<unsigned char>(text[end])) ||
            std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '-')) {
      ++end;
    }
    std::string name = text.substr(k + 2, end - k - 2);
    while (!name.empty() && name.back() == '-') name.pop_back();
    out->push_back({name, lines[k]});
    k = end - 1;
  }
}

/// The `--name`s inside the string literals of C++ or CUDA source `text`: comments, character
/// literals and digit separators are skipped; raw strings are read whole.
std::vector<FlagMention> flag_mentions(const std::string& text) {
  std::vector<FlagMention> out;
  uint64_t line = 1;
  size_t i = 0;
  const size_t n = text.size();
  auto advance = [&](size_t to) {
    for (; i < to && i < n; ++i) {
      if (text[i] == '\n') ++line;
    }
  };
  while (i < n) {
    const char c = text[i];
    if (c == '/' && i + 1 < n && text[i + 1] == '/') {
      const size_t eol = text.find('\n', i);
      advance(eol == std::string::npos ? n : eol);
    } else if (c == '/' && i + 1 < n && text[i + 1] == '*') {
      const size_t close = text.find("*/", i + 2);
      advance(close == std::string::npos ? n : close + 2);
    } else if (c == '\'') {
      if (i > 0 && std::isxdigit(static_cast<unsigned char>(text[i - 1]))) {
        advance(i + 1);  // a digit separator: 1'000'000
        continue;
      }
      advance(i + 1);
      while (i < n && text[i] != '\'' && text[i] != '\n') advance(i + (text[i] == '\\' ? 2 : 1));
      advance(i + 1);
    } else if (c == '"') {
      const bool raw = i > 0 && text[i - 1] == 'R' &&
                       (i < 2 || !identifier_char(text[i - 2]) || text[i - 2] == 'u' ||
                        text[i - 2] == 'U' || text[i - 2] == 'L' || text[i - 2] == '8');
      std::string literal;
      std::vector<uint64_t> lines;
      if (raw) {
        const size_t open = text.find('(', i);
        const std::string close = ")" + text.substr(i + 1, open - i - 1) + "\"";
        const size_t end = text.find(close, open);
        const size_t stop = end == std::string::npos ? n : end;
        advance(open + 1);
        while (i < stop) {
          literal.push_back(text[i]);
          lines.push_back(line);
          advance(i + 1);
        }
        advance(stop + close.size());
      } else {
        advance(i + 1);
        while (i < n && text[i] != '"' && text[i] != '\n') {
          literal.push_back(text[i] == '\\' ? ' ' : text[i]);
          lines.push_back(line);
          if (text[i] == '\\' && i + 1 < n) {
            literal.push_back(' ');
            lines.push_back(line);
            advance(i + 1);
          }
          advance(i + 1);
        }
        advance(i + 1);
      }
      flags_in_literal(literal, lines, &out);
    } else {
      advance(i + 1);
    }
  }
  return out;
}

/// The option names of one help text: the lines that start an option, `      --name arg  help`
/// or `  -h, --help  help` (a description's continuation lines are indented further).
void options_of_help(const std::string& help, std::set<std::string>* out) {
  static const std::regex option(R"(^ {1,10}(?:-[A-Za-z0-9], )?--([a-z0-9][a-z0-9-]*))");
  std::istringstream lines(help);
  std::string l;
  while (std::getline(lines, l)) {
    std::smatch m;
    if (std::regex_search(l, m, option)) out->insert(m[1]);
  }
}

class FlagNames : public ::testing::Test {
 protected:
  /// The output of `pagedw2v args…`, which must end with status 0.
  std::string help_of(const std::vector<std::string>& args) {
    const RunResult r = run_binary(args, dir_.path());
    std::string command = "pagedw2v";
    for (const std::string& a : args) command += " " + a;
    EXPECT_TRUE(r.exited && r.code == 0) << command << ": " << r.err;
    return r.out + r.err;
  }

  /// Every flag of every command and bench subcommand, as their help lists them.
  std::set<std::string> known_flags() {
    std::set<std::string> flags;
    const std::string usage = help_of({"--help"});
    std::istringstream lines(usage.substr(usage.find("commands:")));
    std::string l;
    static const std::regex command(R"(^  ([a-z][a-z-]*)\s)");
    std::vector<std::string> commands;
    std::getline(lines, l);  // "commands:"
    while (std::getline(lines, l) && !l.empty()) {
      std::smatch m;
      if (std::regex_search(l, m, command)) commands.push_back(m[1]);
    }
    EXPECT_GE(commands.size(), 2u) << usage;
    for (const std::string& c : commands) {
      const std::string help = help_of({c, "--help"});
      options_of_help(help, &flags);
      if (c != "bench") continue;
      // bench names its subcommands in its usage: `bench train …`, `bench transfer …`
      static const std::regex sub(R"(bench ([a-z]+))");
      std::set<std::string> subs;
      for (std::sregex_iterator it(help.begin(), help.end(), sub), end; it != end; ++it) {
        subs.insert((*it)[1]);
      }
      EXPECT_FALSE(subs.empty()) << help;
      for (const std::string& s : subs) options_of_help(help_of({c, s, "--help"}), &flags);
    }
    return flags;
  }

  /// Whether `pagedw2v --name` alone is accepted (the binary's own --help and --version).
  bool top_level_flag(const std::string& name) {
    const RunResult r = run_binary({"--" + name}, dir_.path());
    return r.exited && r.code == 0;
  }

  testing_util::TempDir dir_;
};

TEST(FlagMentions, AreTheNamesInStringLiteralsOnly) {
  const std::string source =
      "// a comment names --comment\n"
      "/* and so does --block\n  this one */\n"
      "const char* a = \"use --dim 100 or --min-count=2\";\n"
      "const char b = '-'; int big = 1'000'000; auto s = \"--:-- left\";\n"
      "auto f = \"word2vec's -size, --\" + name + \" --x-y- and a--b, ---c\";\n"
      "auto e = \"say \\\"--quoted\\\"\\n--after-escape\";\n"
      "auto r = R\"x(raw \"--raw\"\n  --next-line)x\";\n"
      "auto t = \"--last\";";
  const std::vector<FlagMention> got = flag_mentions(source);
  std::vector<std::pair<std::string, uint64_t>> seen;
  for (const FlagMention& m : got) seen.emplace_back(m.name, m.line);
  const std::vector<std::pair<std::string, uint64_t>> want = {
      {"dim", 4},          {"min-count", 4}, {"x-y", 6},       {"quoted", 7},
      {"after-escape", 7}, {"raw", 8},       {"next-line", 9}, {"last", 10}};
  EXPECT_EQ(seen, want);
}

TEST(FlagMentions, HelpLinesGiveOptionsNotTheFlagsTheirTextNames) {
  std::set<std::string> got;
  options_of_help(
      "Usage:\n  pagedw2v x --vectors PATH [--top N]\n\n"
      "      --vectors arg   vectors; see also --not-this\n"
      "                      and --nor-this on a continuation line\n"
      "  -h, --help          print this help\n"
      "      --top-n arg     answers\n",
      &got);
  EXPECT_EQ(got, (std::set<std::string>{"vectors", "help", "top-n"}));
}

// A flag named in a message of src/ or apps/ that no command takes is a stale name: each is
// reported with its file and line.
TEST_F(FlagNames, EveryFlagTheSourcesNameIsAFlagOfSomeCommand) {
  const std::set<std::string> known = known_flags();
  ASSERT_FALSE(known.empty());
  const std::filesystem::path root(PAGEDW2V_SOURCE_DIR);
  std::vector<std::filesystem::path> files;
  for (const char* top : {"src", "apps"}) {
    ASSERT_TRUE(std::filesystem::is_directory(root / top)) << (root / top);
    for (const auto& e : std::filesystem::recursive_directory_iterator(root / top)) {
      const std::string ext = e.path().extension().string();
      if (e.is_regular_file() &&
          (ext == ".cpp" || ext == ".hpp" || ext == ".cu" || ext == ".cuh" || ext == ".h")) {
        files.push_back(e.path());
      }
    }
  }
  std::sort(files.begin(), files.end());
  uint64_t mentions = 0;
  std::map<std::string, bool> top_level;
  for (const auto& path : files) {
    std::ifstream in(path, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (const FlagMention& m : flag_mentions(text)) {
      ++mentions;
      if (known.count(m.name) != 0) continue;
      auto it = top_level.find(m.name);
      if (it == top_level.end()) it = top_level.emplace(m.name, top_level_flag(m.name)).first;
      if (it->second) continue;
      ADD_FAILURE() << std::filesystem::relative(path, root).string() << ":" << m.line << ": --"
                    << m.name << " is not a flag of any command";
    }
  }
  EXPECT_GT(mentions, 0u) << "no flag named in " << files.size() << " source files";
}

}  // namespace
}  // namespace pagedw2v
