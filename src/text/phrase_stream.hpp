#pragma once
/// @file phrase_stream.hpp
/// The text as the phrase passes read it: tokens through the passes (a JoinStage a pass, then a
/// sink that counts or writes), ranges of the text that one thread reads, and the safe cuts that
/// split the text between threads without changing what the passes make of it.
///
/// A cut is safe where every pass starts afresh whatever came before: after a newline, at a
/// part's start, or before a token T such that, running the passes from T, the first token each
/// pass receives (which begins with T) is not the second word of one of its phrases. No pass then
/// joins anything across the cut, and, pass by pass, each one's output from the cut on is the
/// same as when the text is read from its start.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/string_index.hpp"
#include "text/phrases.hpp"
#include "text/text_chunks.hpp"
#include "text/tokenizer.hpp"

namespace pagedw2v {
namespace detail {

/// A token on its way through the passes: its bytes, their hash_bytes(), and whether a pass
/// joined it.
struct Token {
  std::string_view word;
  uint64_t hash = 0;
  bool joined = false;
};

/// One pass applied to a stream of tokens, left to right: it holds the last token until the next
/// one tells whether the two join. Each token in gives at most one token out.
class JoinStage {
 public:
  explicit JoinStage(const PhraseTable& table) : table_(&table) {}

  /// Takes the next token of the sentence; true with `*out` set when a token leaves (valid until
  /// the next call).
  bool take(Token in, Token* out) {
    const uint32_t id = table_->find(in.word, in.hash);
    if (holding_) {
      if (held_id_ != PhraseTable::kNone && id != PhraseTable::kNone &&
          table_->joins(held_id_, id, held_hash_, in.hash)) {
        out_.assign(held_);
        out_ += '_';
        out_.append(in.word);
        *out = {out_, detail::hash_bytes(out_), true};
        holding_ = false;
        return true;
      }
      out_.swap(held_);
      *out = {out_, held_hash_, held_joined_};
    }
    held_.assign(in.word);
    held_hash_ = in.hash;
    held_joined_ = in.joined;
    held_id_ = id;
    const bool left = holding_;
    holding_ = true;
    return left;
  }
  /// Ends the sentence: the held token leaves, if any.
  bool flush(Token* out) {
    if (!holding_) return false;
    out_.swap(held_);
    *out = {out_, held_hash_, held_joined_};
    holding_ = false;
    return true;
  }
  const PhraseTable& table() const { return *table_; }

 private:
  const PhraseTable* table_;
  std::string held_, out_;
  uint64_t held_hash_ = 0;
  uint32_t held_id_ = PhraseTable::kNone;
  bool held_joined_ = false;
  bool holding_ = false;
};

/// The passes in order, then `Sink`, which has prefetch(hash), token(Token), newline() and
/// part_end().
template <class Sink>
class Pipeline {
 public:
  Pipeline(const std::vector<PhraseTable>& tables, Sink& sink) : sink_(sink) {
    stages_.reserve(tables.size());
    for (const PhraseTable& t : tables) stages_.emplace_back(t);
  }

  /// Called for each token in text order, ahead of token(): brings in the first pass's slots of
  /// the word and of its pair with the word before (a wasted load where a newline or a join
  /// came between).
  void prefetch(uint64_t h) {
    if (stages_.empty()) {
      sink_.prefetch(h);
    } else {
      const PhraseTable& first = stages_.front().table();
      first.prefetch(h);
      first.prefetch_pair(last_hash_, h);
      last_hash_ = h;
    }
  }
  void token(Token t) { feed(0, t); }
  /// Lets every held token go on to the sink, as at a sentence's end (without telling the sink).
  void flush() {
    for (size_t k = 0; k < stages_.size(); ++k) {
      Token t;
      if (stages_[k].flush(&t)) feed(k + 1, t);
    }
  }
  void newline() {
    flush();
    sink_.newline();
  }
  void part_end() {
    flush();
    sink_.part_end();
  }

 private:
  void feed(size_t k, Token t) {
    for (; k < stages_.size(); ++k) {
      if (!stages_[k].take(t, &t)) return;
    }
    sink_.token(t);
  }

  std::vector<JoinStage> stages_;
  Sink& sink_;
  uint64_t last_hash_ = 0;
};

/// A place in the text: a part and an offset in it. A place at a part's end is written as the
/// next part's start.
struct Pos {
  size_t part = 0;
  size_t offset = 0;
  bool operator<(const Pos& o) const { return part != o.part ? part < o.part : offset < o.offset; }
  bool operator==(const Pos& o) const { return part == o.part && offset == o.offset; }
};

/// Bytes of text one thread reads before it lets them go (CorpusText::release).
constexpr size_t kPieceBytes = size_t{8} << 20;

/// Reads [begin, end) through `pipeline`: tokens, newlines and part ends in text order.
template <class Sink>
void read_range(const PhraseText& text, Pos begin, Pos end, const TextOptions& options,
                Pipeline<Sink>& pipeline) {
  const std::vector<std::string_view>& parts = text.parts;
  for (size_t p = begin.part;
       p < parts.size() && (p < end.part || (p == end.part && end.offset > 0)); ++p) {
    const std::string_view part = parts[p];
    size_t from = p == begin.part ? begin.offset : 0;
    const size_t to = p == end.part ? end.offset : part.size();
    while (from < to) {
      size_t stop = std::min(to, from + kPieceBytes);
      while (stop < to && !is_space_byte(static_cast<unsigned char>(part[stop]))) ++stop;
      detail::scan_words(
          part.substr(from, stop - from), options, [&](uint64_t h) { pipeline.prefetch(h); },
          [&](std::string_view w, uint64_t h) {
            pipeline.token({w, h, false});
          },
          [&] { pipeline.newline(); });
      if (text.source != nullptr) text.source->release(p, from, stop);
      from = stop;
    }
    if (p != end.part) pipeline.part_end();
  }
}

/// Runs the passes afresh from the token that starts at `offset` of part `p`, to the sentence's
/// end at most, calling `visit(k, token)` for every token pass k receives (k = tables.size(): a
/// token the passes give out) until it returns false.
template <class Visit>
void walk_from(const PhraseText& text, size_t p, size_t offset,
               const std::vector<PhraseTable>& tables, const TextOptions& options, Visit&& visit) {
  std::vector<JoinStage> stages;
  stages.reserve(tables.size());
  for (const PhraseTable& t : tables) stages.emplace_back(t);
  bool going = true;
  auto feed = [&](size_t k, Token t) {
    for (; going; ++k) {
      if (!visit(k, t)) {
        going = false;
        return;
      }
      if (k == stages.size() || !stages[k].take(t, &t)) return;
    }
  };
  const std::string_view part = text.parts[p];
  char buf[kMaxWordBytes];
  size_t i = offset;
  while (going) {
    while (i < part.size() && is_space_byte(static_cast<unsigned char>(part[i])) &&
           part[i] != '\n') {
      ++i;
    }
    if (i == part.size() || part[i] == '\n') break;
    const size_t start = i;
    while (i < part.size() && !is_space_byte(static_cast<unsigned char>(part[i]))) ++i;
    const std::string_view w = normalize_word(part.substr(start, i - start), options, buf);
    feed(0, {w, detail::hash_bytes(w), false});
  }
  for (size_t k = 0; going && k < stages.size(); ++k) {
    Token t;
    if (stages[k].flush(&t)) feed(k + 1, t);
  }
}

/// Whether every pass starts afresh at the token at `offset` of part `p`: the token each pass
/// receives first from there (which begins with that token) is not the second word of one of
/// its phrases, so no pass joins it to what came before.
bool safe_at(const PhraseText& text, size_t p, size_t offset,
             const std::vector<PhraseTable>& tables, const TextOptions& options);

/// The first safe cut at or after `at` (a place where the text may be split between threads
/// without changing the result): a part's start, just after a newline, or before a token where
/// safe_at() holds.
Pos safe_cut(const PhraseText& text, Pos at, const std::vector<PhraseTable>& tables,
             const TextOptions& options);

/// The place `offset` bytes into the whole text, and back; the bytes of all parts.
Pos place_of(const std::vector<std::string_view>& parts, uint64_t offset);
uint64_t offset_of(const std::vector<std::string_view>& parts, Pos at);
uint64_t total_bytes(const std::vector<std::string_view>& parts);

/// Whether the text before `at` ends a line (nothing but spaces since a newline or the part's
/// start).
bool at_line_start(const PhraseText& text, Pos at);

}  // namespace detail
}  // namespace pagedw2v
