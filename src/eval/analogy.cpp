#include "eval/analogy.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <atomic>
#include <exception>
#include <mutex>
#include <new>
#include <string_view>
#include <thread>

#include "base/error.hpp"
#include "base/mapped_file.hpp"
#include "base/worker_threads.hpp"
#include "eval/neighbors.hpp"
#include "text/utf8.hpp"

namespace pagedw2v {

namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Questions scored by one matrix product: up to 256 at a time (W (rows × dim) · Q (dim × 256)
// runs near the machine's peak), fewer when the vocabulary is so large that the scores would
// pass 64 MB per thread (256 × 30,000 scores are 30 MB).
constexpr size_t kMaxBatch = 256;
constexpr size_t kMaxScores = size_t{16} << 20;
// gensim's most_similar(topn=5) takes the 5 + 3 best rows, drops the rows of a, b and c, keeps
// five, and answers with the first of those whose word is not a case variant of a, b or c.
constexpr size_t kTopn = 5;
constexpr size_t kCandidates = kTopn + 3;

struct Question {
  uint32_t section;
  uint32_t a, b, c;  // rows (the first of each word's case variants)
  uint32_t expected;
};

// Python's str.split() separators among ASCII bytes.
bool is_python_space(unsigned char ch) {
  return ch == ' ' || (ch >= '\t' && ch <= '\r') || (ch >= 0x1c && ch <= 0x1f);
}

std::vector<std::string_view> split_words(std::string_view line) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_python_space(static_cast<unsigned char>(line[i]))) ++i;
    const size_t start = i;
    while (i < line.size() && !is_python_space(static_cast<unsigned char>(line[i]))) ++i;
    if (i > start) words.push_back(line.substr(start, i - start));
  }
  return words;
}

// gensim: line.lstrip(': ').strip()
std::string section_name(std::string_view line) {
  size_t begin = 0;
  while (begin < line.size() && (line[begin] == ':' || line[begin] == ' ')) ++begin;
  size_t end = line.size();
  while (end > begin && is_python_space(static_cast<unsigned char>(line[end - 1]))) --end;
  while (begin < end && is_python_space(static_cast<unsigned char>(line[begin]))) ++begin;
  // Names are printed in JSON reports, which must be UTF-8.
  return valid_utf8(line.substr(begin, end - begin));
}

// The best kCandidates rows of one score column, best first; ties keep the lower row.
struct TopRows {
  std::array<float, kCandidates> score;
  std::array<uint32_t, kCandidates> row;
  size_t size = 0;

  void scan(const float* scores, uint32_t rows) {
    size = 0;
    for (uint32_t r = 0; r < rows; ++r) {
      const float s = scores[r];
      if (s != s) continue;  // NaN cannot win
      if (size == kCandidates && !(s > score[kCandidates - 1])) continue;
      size_t pos = size < kCandidates ? size++ : kCandidates - 1;
      while (pos > 0 && score[pos - 1] < s) {
        score[pos] = score[pos - 1];
        row[pos] = row[pos - 1];
        --pos;
      }
      score[pos] = s;
      row[pos] = r;
    }
  }
};

bool answer_is_right(const Question& q, const TopRows& top, const std::vector<uint32_t>& canon) {
  size_t kept = 0;
  bool have_prediction = false;
  uint32_t predicted = 0;
  for (size_t i = 0; i < top.size && kept < kTopn; ++i) {
    const uint32_t r = top.row[i];
    if (r == q.a || r == q.b || r == q.c) continue;
    ++kept;
    predicted = canon[r];
    have_prediction = true;
    if (predicted != q.a && predicted != q.b && predicted != q.c) break;
  }
  return have_prediction && predicted == q.expected;
}

}  // namespace

AnalogyReport evaluate_analogies(const LoadedEmbeddings& embeddings,
                                 const std::string& questions_path, uint32_t restrict_vocab) {
  check_embeddings(embeddings);
  const uint64_t limit =
      restrict_vocab == 0 ? embeddings.rows : std::min<uint64_t>(restrict_vocab, embeddings.rows);
  const auto index = case_folded_index(embeddings, limit);
  // canon[r]: the row that stands for row r's word once case is folded.
  std::vector<uint32_t> canon(limit);
  for (uint64_t r = 0; r < limit; ++r) {
    const auto it = index.find(fold_case(embeddings.words[r]));
    canon[r] = it != index.end() ? it->second : static_cast<uint32_t>(r);
  }

  AnalogyReport report;
  report.restrict_vocab = limit;
  report.nonfinite_rows = nonfinite_rows(embeddings, limit);
  std::vector<Question> questions;
  {
    const MappedFile file(questions_path);
    file.read([&](std::string_view text) {
      size_t pos = 0;
      uint64_t line_no = 0;
      while (pos < text.size()) {
        size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) end = text.size();
        const std::string_view line = text.substr(pos, end - pos);
        pos = end + 1;
        ++line_no;
        if (line.substr(0, 2) == ": ") {
          report.sections.push_back(AnalogySection{section_name(line)});
          continue;
        }
        if (report.sections.empty()) {
          throw Error(questions_path + ":" + std::to_string(line_no) +
                      ": question before the first ': section' header");
        }
        const auto words = split_words(line);
        if (words.size() != 4) continue;
        ++report.questions;
        AnalogySection& section = report.sections.back();
        std::array<uint32_t, 4> rows{};
        bool known = true;
        for (size_t i = 0; i < 4 && known; ++i) {
          const auto it = index.find(fold_case(words[i]));
          known = it != index.end();
          if (known) rows[i] = it->second;
        }
        if (!known) {
          ++section.oov;
          ++report.oov;
          continue;
        }
        questions.push_back(Question{static_cast<uint32_t>(report.sections.size() - 1), rows[0],
                                     rows[1], rows[2], rows[3]});
      }
    });
  }

  const std::vector<float> unit = normalized_rows(embeddings, limit);
  const Eigen::Index dim = embeddings.dim;
  const Eigen::Map<const RowMatrix> vocab(unit.data(), static_cast<Eigen::Index>(limit), dim);
  std::vector<uint8_t> right(questions.size(), 0);
  const size_t batch_size =
      std::clamp<size_t>(kMaxScores / std::max<uint64_t>(limit, 1), 1, kMaxBatch);
  const size_t batches = (questions.size() + batch_size - 1) / batch_size;
  std::atomic<size_t> next_batch{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;

  auto worker = [&] {
    try {
      Eigen::MatrixXf query(dim, static_cast<Eigen::Index>(batch_size));
      Eigen::MatrixXf scores;
      TopRows top;
      for (size_t batch = next_batch++; batch < batches; batch = next_batch++) {
        const size_t first = batch * batch_size;
        const size_t count = std::min(batch_size, questions.size() - first);
        for (size_t j = 0; j < count; ++j) {
          const Question& q = questions[first + j];
          // Unnormalised b − a + c ranks the rows exactly as its unit vector does.
          query.col(static_cast<Eigen::Index>(j)) =
              (vocab.row(q.b) - vocab.row(q.a) + vocab.row(q.c)).transpose();
        }
        // One column of scores per question, contiguous over the vocabulary.
        scores.noalias() = vocab * query.leftCols(static_cast<Eigen::Index>(count));
        for (size_t j = 0; j < count; ++j) {
          top.scan(scores.col(static_cast<Eigen::Index>(j)).data(), static_cast<uint32_t>(limit));
          right[first + j] = answer_is_right(questions[first + j], top, canon);
        }
      }
    } catch (...) {
      const std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      next_batch = batches;
    }
  };
  const size_t threads =
      std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), batches);
  if (batches > 0) run_workers(static_cast<uint32_t>(threads), [&](uint32_t) { worker(); });
  if (failure) {
    try {
      std::rethrow_exception(failure);
    } catch (const std::bad_alloc&) {
      throw Error("not enough memory to answer the analogy questions");
    }
  }

  for (size_t i = 0; i < questions.size(); ++i) {
    AnalogySection& section = report.sections[questions[i].section];
    if (right[i]) {
      ++section.correct;
      ++report.correct;
    } else {
      ++section.incorrect;
      ++report.incorrect;
    }
  }
  return report;
}

AnalogySubtotals analogy_subtotals(const AnalogyReport& report) {
  AnalogySubtotals t;
  for (const AnalogySection& s : report.sections) {
    AnalogySection& sum = s.name.rfind("gram", 0) == 0 ? t.syntactic : t.semantic;
    sum.correct += s.correct;
    sum.incorrect += s.incorrect;
    sum.oov += s.oov;
  }
  return t;
}

}  // namespace pagedw2v
