#include "text/phrase_stream.hpp"

#include <algorithm>

namespace pagedw2v {
namespace detail {

bool safe_at(const PhraseText& text, size_t p, size_t offset,
             const std::vector<PhraseTable>& tables, const TextOptions& options) {
  if (tables.empty()) return true;
  bool safe = true;
  size_t checked = 0;  // passes whose first token was looked at
  walk_from(text, p, offset, tables, options, [&](size_t k, const Token& t) {
    if (k == tables.size()) return false;
    if (k == checked) {
      if (tables[k].joins_left(tables[k].find(t.word, t.hash))) {
        safe = false;
        return false;
      }
      ++checked;
    }
    return checked < tables.size();
  });
  return safe;
}

Pos safe_cut(const PhraseText& text, Pos at, const std::vector<PhraseTable>& tables,
             const TextOptions& options) {
  const std::vector<std::string_view>& parts = text.parts;
  Pos cut{parts.size(), 0};
  run_guarded(
      [&] {
        size_t p = at.part;
        if (p >= parts.size() || at.offset == 0) {
          cut = {std::min(p, parts.size()), 0};
          return;
        }
        const std::string_view part = parts[p];
        size_t i = at.offset;
        auto space = [&](size_t j) { return is_space_byte(static_cast<unsigned char>(part[j])); };
        // Inside a token: go to its end.
        if (i < part.size() && !space(i) && !space(i - 1)) {
          while (i < part.size() && !space(i)) ++i;
        }
        for (;;) {
          while (i < part.size() && space(i)) {
            if (part[i] == '\n') {
              cut = i + 1 == part.size() ? Pos{p + 1, 0} : Pos{p, i + 1};
              return;
            }
            ++i;
          }
          if (i == part.size()) {
            cut = {p + 1, 0};
            return;
          }
          if (safe_at(text, p, i, tables, options)) {
            cut = {p, i};
            return;
          }
          while (i < part.size() && !space(i)) ++i;
        }
      },
      "a corpus file");
  return cut;
}

Pos place_of(const std::vector<std::string_view>& parts, uint64_t offset) {
  for (size_t p = 0; p < parts.size(); ++p) {
    if (offset < parts[p].size()) return {p, static_cast<size_t>(offset)};
    offset -= parts[p].size();
  }
  return {parts.size(), 0};
}

uint64_t offset_of(const std::vector<std::string_view>& parts, Pos at) {
  uint64_t offset = at.offset;
  for (size_t p = 0; p < at.part && p < parts.size(); ++p) offset += parts[p].size();
  return offset;
}

uint64_t total_bytes(const std::vector<std::string_view>& parts) {
  uint64_t n = 0;
  for (std::string_view p : parts) n += p.size();
  return n;
}

bool at_line_start(const PhraseText& text, Pos at) {
  if (at.part >= text.parts.size() || at.offset == 0) return true;
  const std::string_view part = text.parts[at.part];
  for (size_t i = at.offset; i > 0; --i) {
    const unsigned char c = static_cast<unsigned char>(part[i - 1]);
    if (c == '\n') return true;
    if (!is_space_byte(c)) return false;
  }
  return true;
}

}  // namespace detail
}  // namespace pagedw2v
