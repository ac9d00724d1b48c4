#include "vocab/vocab_file.hpp"

#include <charconv>
#include <string_view>
#include <vector>

#include "base/atomic_file.hpp"
#include "base/error.hpp"
#include "base/mapped_file.hpp"
#include "vocab/word_list.hpp"

namespace pagedw2v {
namespace {

/// word2vec.c's word for the end of a line.
constexpr std::string_view kSentenceEnd = "</s>";

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f'; }

/// The first line of `text` that holds more than a line end, or "".
std::string_view first_line(std::string_view text) {
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty()) return line;
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return {};
}

/// word2vec's `word count` lines (its ReadVocab splits them at white space).
Vocab load_word2vec_vocab(const std::string& path, std::string_view text, bool tokenizer_words) {
  WordList words;
  std::vector<uint64_t> counts;
  uint64_t total = 0;
  size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    size_t end = line.size();
    while (end > 0 && is_blank(line[end - 1])) --end;
    const size_t space = line.find_last_of(' ', end == 0 ? 0 : end - 1);
    uint64_t count = 0;
    bool ok = space != std::string_view::npos && space > 0 && space + 1 < end;
    if (ok) {
      const auto parsed = std::from_chars(line.data() + space + 1, line.data() + end, count);
      ok = parsed.ptr == line.data() + end && parsed.ec == std::errc();
    }
    const std::string_view word = ok ? line.substr(0, space) : std::string_view();
    for (const char c : word) ok = ok && !is_blank(c) && c != '\0';
    if (!ok) {
      throw Error("'" + path + "' line " + std::to_string(line_no) +
                  ": expected `word count` (word2vec's -save-vocab) or word<TAB>count");
    }
    if (word == kSentenceEnd) continue;
    Vocab::check_file_word(word, count, &total, tokenizer_words,
                           "'" + path + "' line " + std::to_string(line_no) + ": ");
    words.push_back(word);
    counts.push_back(count);
  }
  return Vocab::from_word_list(std::move(words), std::move(counts));
}

}  // namespace

const char* to_string(VocabFileFormat format) {
  return format == VocabFileFormat::kWord2vec ? "word2vec" : "tsv";
}

bool parse_vocab_file_format(const std::string& text, VocabFileFormat* format) {
  if (text == "tsv") {
    *format = VocabFileFormat::kTsv;
  } else if (text == "word2vec") {
    *format = VocabFileFormat::kWord2vec;
  } else {
    return false;
  }
  return true;
}

Vocab load_vocab_file(const std::string& path, bool tokenizer_words) {
  {
    const MappedFile file(path);
    // Every read of the map is guarded: a file truncated meanwhile is an error, not SIGBUS.
    const bool word2vec = file.read([](std::string_view text) {
      const std::string_view first = first_line(text);
      return !first.empty() && first.find('\t') == std::string_view::npos;
    });
    if (word2vec) {
      return file.read(
          [&](std::string_view text) { return load_word2vec_vocab(path, text, tokenizer_words); });
    }
  }
  return Vocab::load_tsv(path, tokenizer_words);
}

void save_vocab_file(const Vocab& vocab, const std::string& path, VocabFileFormat format) {
  if (format == VocabFileFormat::kTsv) {
    vocab.save_tsv(path);
    return;
  }
  AtomicFile out(path);
  std::string buf = std::string(kSentenceEnd) + " 0\n";
  uint32_t row = 0;
  vocab.for_each_word_run([&](uint64_t, const WordList& run) {
    for (const std::string_view w : run) {
      buf += w;
      buf += ' ';
      buf += std::to_string(vocab.count(row++));
      buf += '\n';
      if (buf.size() > (1 << 20)) {
        out.write(buf);
        buf.clear();
      }
    }
  });
  out.write(buf);
  out.commit();
}

}  // namespace pagedw2v
