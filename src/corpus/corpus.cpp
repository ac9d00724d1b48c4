#include "corpus/corpus.hpp"

#include <algorithm>
#include <cstring>

#include "text/text_chunks.hpp"
#include "text/tokenizer.hpp"
#include "text/word_table.hpp"

namespace pagedw2v {
namespace {

/// What one thread's chunk encodes to: its tokens and, in order, the token counts at which a
/// line ended (a newline or a part's end), repeated counts dropped.
struct EncodedChunk {
  std::vector<uint32_t> tokens;  ///< empty when the tokens went straight into the result
  std::vector<uint64_t> line_ends;
  uint64_t size = 0;  ///< the chunk's tokens
};

/// Encodes by reading the text: each thread tokenises its chunk and looks every word up.
std::vector<EncodedChunk> encode_text(const std::vector<std::string_view>& parts,
                                      const Vocab& vocab, const EncodeOptions& options) {
  // The table the vocabulary was counted with when there is one; else one built from the words.
  detail::ShardedWordTable built;
  if (vocab.lookup() == nullptr) built = detail::lookup_table(vocab, options.threads);
  const detail::ShardedWordTable& table = vocab.lookup() != nullptr ? *vocab.lookup() : built;
  const std::vector<TextChunk> chunks = split_text(parts, std::max<uint32_t>(options.threads, 1));
  const size_t n = chunks.size();
  std::vector<EncodedChunk> out(n);
  uint64_t total_bytes = 0;
  for (std::string_view p : parts) total_bytes += p.size();
  run_parallel(n, [&](size_t t) {
    EncodedChunk& e = out[t];
    // The share of the kept words this chunk's share of the bytes suggests, and some slack.
    uint64_t bytes = 0;
    for (const TextSegment& seg : chunks[t]) bytes += seg.text.size();
    // A word takes a byte and a separator: counts read from a file (which may say anything)
    // cannot ask for more than the chunk could hold.
    if (total_bytes > 0) {
      const double share = static_cast<double>(vocab.total_count()) * static_cast<double>(bytes) /
                           static_cast<double>(total_bytes) * 1.05;
      e.tokens.reserve(static_cast<size_t>(std::min(share, static_cast<double>(bytes / 2))) + 1024);
    }
    detail::encode_chunk(chunks[t], table, options.text, e.tokens, e.line_ends);
    e.size = e.tokens.size();
  });
  return out;
}

/// Encodes what the count kept straight into `tokens` (the result, its size the tokens kept):
/// each chunk's codes mapped to rows, words not kept dropped, and the line ends moved to the
/// counts of the tokens kept. The count's chunks are the unit of work; a first pass counts each
/// chunk's tokens kept (the codes, when every word is kept), so that each writes at its offset.
std::vector<EncodedChunk> encode_counted(const detail::CountedText& counted,
                                         std::vector<uint32_t>& tokens) {
  const size_t n = counted.chunks.size();
  std::vector<EncodedChunk> out(n);
  const uint32_t shift = counted.id_bits;
  const uint32_t id_mask = shift >= 32 ? 0xFFFFFFFFu : (uint32_t{1} << shift) - 1;
  auto row_of = [&](uint32_t code) {
    const uint32_t shard = shift >= 32 ? 0 : code >> shift;
    return counted.rows[counted.shard_start[shard] + (code & id_mask)];
  };
  std::vector<uint64_t> offsets(n + 1, 0);
  run_parallel(n, [&](size_t t) {
    const detail::CountedText::Chunk& chunk = counted.chunks[t];
    uint64_t kept = chunk.codes.size();
    if (!counted.all_kept) {
      kept = 0;
      for (const uint32_t code : chunk.codes) kept += row_of(code) != detail::WordTable::kNone;
    }
    out[t].size = kept;
  });
  for (size_t t = 0; t < n; ++t) offsets[t + 1] = offsets[t] + out[t].size;
  tokens = counted.take_tokens(offsets[n]);
  tokens.resize(offsets[n]);
  run_parallel(n, [&](size_t t) {
    const detail::CountedText::Chunk& chunk = counted.chunks[t];
    EncodedChunk& e = out[t];
    uint32_t* const begin = tokens.data() + offsets[t];
    uint32_t* at = begin;
    auto line_end = [&] {
      const uint64_t size = static_cast<uint64_t>(at - begin);
      if (e.line_ends.empty() || e.line_ends.back() != size) e.line_ends.push_back(size);
    };
    size_t k = 0;
    const size_t m = chunk.codes.size();
    for (size_t i = 0; i < m; ++i) {
      while (k < chunk.line_ends.size() && chunk.line_ends[k] == i) {
        line_end();
        ++k;
      }
      const uint32_t row = row_of(chunk.codes[i]);
      if (row != detail::WordTable::kNone) *at++ = row;
    }
    for (; k < chunk.line_ends.size(); ++k) line_end();
  });
  return out;
}

}  // namespace

namespace detail {

/// The vocabulary as one lookup table, word -> row, built by `threads` threads (one per shard).
ShardedWordTable lookup_table(const Vocab& vocab, uint32_t threads) {
  const size_t n = std::max<uint32_t>(threads, 1);
  const uint32_t rows = vocab.size();
  std::vector<uint64_t> hashes(rows);
  run_parallel(n, [&](size_t t) {
    for (size_t row = rows * t / n; row < rows * (t + 1) / n; ++row) {
      hashes[row] = hash_bytes(vocab.word(static_cast<uint32_t>(row)));
    }
  });
  ShardedWordTable table(n, 0);
  const size_t shards = table.shard_count();
  run_parallel(std::min(n, shards), [&](size_t worker) {
    for (size_t p = worker; p < shards; p += n) {
      WordTable& shard = table.shard(p);
      shard.reserve(rows / shards + rows / shards / 8 + 64);
      for (uint32_t row = 0; row < rows; ++row) {
        if (table.shard_of(hashes[row]) != p) continue;
        const std::string_view w = vocab.word(row);
        // No word of a text is empty or longer.
        if (w.empty() || w.size() > kMaxWordBytes) continue;
        shard.insert(w, hashes[row]).value = row;
      }
    }
  });
  return table;
}

void encode_chunk(const TextChunk& chunk, const ShardedWordTable& table, const TextOptions& text,
                  std::vector<uint32_t>& tokens, std::vector<uint64_t>& line_ends) {
  const size_t base = tokens.size();
  auto line_end = [&] {
    const uint64_t at = tokens.size() - base;
    if (line_ends.empty() || line_ends.back() != at) line_ends.push_back(at);
  };
  for (const TextSegment& seg : chunk) {
    scan_words(
        seg.text, text, [&](uint64_t h) { table.prefetch(h); },
        [&](std::string_view w, uint64_t h) {
          const WordTable::Slot* s = table.find(w, h);
          if (s != nullptr && s->value != WordTable::kNone) {
            tokens.push_back(static_cast<uint32_t>(s->value));
          }
        },
        line_end);
    if (seg.ends_part) line_end();
  }
}

}  // namespace detail

uint64_t CorpusHasher::step(uint64_t h, uint64_t w) {
  h = (h ^ w) * 0x9E3779B97F4A7C15ull;
  return h ^ (h >> 29);
}

void CorpusHasher::add_tokens(const uint32_t* tokens, size_t n) {
  size_t i = 0;
  if (words_ % 2 == 1 && n > 0) {
    token_hash_ = step(token_hash_, pending_ | uint64_t{tokens[0]} << 32);
    i = 1;
  }
  for (; i + 1 < n; i += 2) {
    token_hash_ = step(token_hash_, tokens[i] | uint64_t{tokens[i + 1]} << 32);
  }
  if (i < n) pending_ = tokens[i];
  words_ += n;
}

void CorpusHasher::add_start(uint64_t start) {
  start_hash_ = step(start_hash_, start);
  ++starts_;
}

uint64_t CorpusHasher::hash() const {
  uint64_t t = token_hash_;
  if (words_ % 2 == 1) t = step(t, pending_);
  t = step(t, words_);
  const uint64_t s = step(start_hash_, starts_);
  uint64_t h = t ^ (s * 0xD6E8FEB86659FD93ull);
  h ^= h >> 32;
  h *= 0xD6E8FEB86659FD93ull;
  return h ^ (h >> 32);
}

EncodedCorpus encode_corpus_serial(std::string_view text, const Vocab& vocab,
                                   const EncodeOptions& options) {
  EncodedCorpus c;
  // Each token takes a byte and a separator: a count from a damaged file cannot ask for more.
  c.tokens.reserve(std::min<uint64_t>(vocab.total_count(), text.size() / 2 + 1));
  c.sentence_starts.push_back(0);
  uint64_t sentence_start = 0;
  auto end_sentence = [&] {
    if (c.tokens.size() > sentence_start) {
      sentence_start = c.tokens.size();
      c.sentence_starts.push_back(sentence_start);
    }
  };
  tokenize(
      text, options.text,
      [&](std::string_view w) {
        const int64_t id = vocab.find(w);
        if (id < 0) return;
        c.tokens.push_back(static_cast<uint32_t>(id));
        if (c.tokens.size() - sentence_start >= options.max_sentence) end_sentence();
      },
      end_sentence);
  end_sentence();
  return c;
}

EncodedCorpus encode_corpus(std::string_view text, const Vocab& vocab, uint32_t max_sentence) {
  EncodeOptions options;
  options.max_sentence = max_sentence;
  return encode_corpus(std::vector<std::string_view>{text}, vocab, options);
}

EncodedCorpus encode_corpus(const std::vector<std::string_view>& parts, const Vocab& vocab,
                            const EncodeOptions& options) {
  const detail::CountedText* counted = vocab.counted_text();
  if (counted != nullptr && counted->text.lowercase == options.text.lowercase &&
      counted->parts.size() == parts.size()) {
    for (size_t i = 0; i < parts.size() && counted != nullptr; ++i) {
      if (parts[i].data() != counted->parts[i].data() ||
          parts[i].size() != counted->parts[i].size()) {
        counted = nullptr;
      }
    }
  } else {
    counted = nullptr;
  }
  EncodedCorpus c;
  std::vector<EncodedChunk> out =
      counted != nullptr ? encode_counted(*counted, c.tokens) : encode_text(parts, vocab, options);
  const size_t n = out.size();

  // Sentence cuts, as the one-thread loop makes them: at every line end that closes a non-empty
  // sentence, and every max_sentence tokens within a line.
  c.sentence_starts.push_back(0);
  detail::SentenceCutter cutter(options.max_sentence);
  uint64_t base = 0;
  std::vector<uint64_t> offsets(n + 1, 0);
  for (size_t t = 0; t < n; ++t) {
    for (uint64_t e : out[t].line_ends) cutter.line_end(base + e, c.sentence_starts);
    base += out[t].size;
    offsets[t + 1] = base;
  }
  cutter.line_end(base, c.sentence_starts);
  if (counted != nullptr) return c;  // the tokens are in place

  // Concatenate: the first chunk's vector grows to hold all, the others copy in parallel.
  c.tokens = std::move(out[0].tokens);
  c.tokens.resize(base);
  run_parallel(n, [&](size_t t) {
    if (t == 0) return;
    std::copy(out[t].tokens.begin(), out[t].tokens.end(), c.tokens.begin() + offsets[t]);
    out[t].tokens = {};
  });
  return c;
}

std::vector<uint64_t> make_blocks(const EncodedCorpus& corpus, uint64_t target_words) {
  std::vector<uint64_t> blocks{0};
  const uint64_t n = corpus.sentences();
  uint64_t block_start_token = 0;
  for (uint64_t s = 0; s < n; ++s) {
    const uint64_t end_token = corpus.sentence_starts[s + 1];
    if (end_token - block_start_token >= target_words || s + 1 == n) {
      blocks.push_back(s + 1);
      block_start_token = end_token;
    }
  }
  return blocks;
}

}  // namespace pagedw2v
