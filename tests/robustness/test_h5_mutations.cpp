// One-byte mutations of our own embeddings.h5 and of a checkpoint, fed to `similar`, `eval`,
// `export` and `train --resume`: every run ends by itself (a libhdf5 parse that loops is stopped by
// the reader's own time limit), and every failure is one clear line. The same mutations of a copy
// without the integrity record (what a file written by another program looks like) go through the
// parse in a child process.
//
// In our own files one byte in every field of the integrity record (tag, hash, separator, size,
// newline) and in the rest of the user block is mutated, then PAGEDW2V_H5_MUTATIONS (default 10)
// bytes drawn from the HDF5 part, which the checksum covers: each of those refuses the file the
// same way, so more of them only repeat that path. The copies without the record get
// PAGEDW2V_H5_FOREIGN_MUTATIONS (default 30) bytes drawn from the whole file, each a new input to
// libhdf5. PAGEDW2V_H5_MUTATION_SEED sets the seed (printed, so that a failure can be replayed);
// tests/fuzz/mutate_h5.sh runs 10,000.
//
// The integrity record is a hash that anyone can compute again: PAGEDW2V_H5_RESEALED_MUTATIONS
// (default 30) mutants of each file get a record that matches them, and every one still ends
// cleanly, as do files whose heap objects of /vocab/words claim 64 B … 2^49 B more than their
// collection holds. The children that parse the files get 2 s of processor time
// (PAGEDW2V_H5_PARSE_CPU_SECONDS), so that a mutant that makes libhdf5 loop ends soon.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "../test_util.hpp"
#include "h5_heap.hpp"
#include "io/hdf5_io.hpp"
#include "run_binary.hpp"

namespace pagedw2v {
namespace {

using testing_util::clear_failure_problem;
using testing_util::fresh_seed;
using testing_util::grow_heap_object;
using testing_util::read_file;
using testing_util::run_binary;
using testing_util::RunResult;
using testing_util::TempDir;
using testing_util::write_file;

uint64_t env_number(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : fallback;
}

/// A trained run shared by the tests: its embeddings.h5, its first checkpoint, and the files
/// the commands read.
class Mutations : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ::setenv("PAGEDW2V_H5_PARSE_CPU_SECONDS", "2", 1);
    dir_ = new TempDir();
    std::mt19937 rng(7);
    std::string corpus;
    for (int s = 0; s < 200; ++s) {
      for (int w = 0; w < 12; ++w) corpus += "w" + std::to_string(rng() % 40) + " ";
      corpus += "\n";
    }
    write_file(dir_->file("corpus.txt"), corpus);
    write_file(dir_->file("pairs.tsv"), "w1\tw2\t3.5\nw3\tw4\t1.0\nw5\tw6\t7.0\nw7\tw8\t2.0\n");
    const RunResult trained = run_binary(
        {"train", "--corpus", dir_->file("corpus.txt"), "--output", dir_->file("run"), "--dim", "4",
         "--min-count", "1", "--epochs", "2", "--threads", "1", "--format", "h5", "--quiet"},
        dir_->path());
    ASSERT_EQ(trained.code, 0) << trained.err;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

 public:
  /// Counts of outcomes by command.
  struct Tally {
    std::map<std::string, uint64_t> ok, refused, bad;
    double slowest = 0;
  };

 protected:
  /// `n` byte positions of `bytes` drawn at random from `from` on.
  static std::vector<size_t> random_positions(const std::string& bytes, uint64_t n, size_t from,
                                              std::mt19937_64& rng) {
    std::vector<size_t> at;
    for (uint64_t i = 0; i < n && from < bytes.size(); ++i) {
      at.push_back(from + rng() % (bytes.size() - from));
    }
    return at;
  }

  /// One position in every field of the integrity record of our file `bytes`
  /// ("pagedw2v-xxh64 <16 hex digits> <size>\n" at the start of the 512-byte user block) and one
  /// in the rest of the user block; `n` more in the HDF5 part that the checksum covers.
  static std::vector<size_t> record_and_body_positions(const std::string& bytes, uint64_t n,
                                                       std::mt19937_64& rng) {
    constexpr size_t kUserBlock = 512;
    const size_t tag = std::string("pagedw2v-xxh64 ").size();
    const size_t newline = bytes.find('\n');
    EXPECT_EQ(bytes.rfind("pagedw2v-xxh64 ", 0), 0u) << "no integrity record";
    EXPECT_TRUE(newline > tag + 17 && newline < kUserBlock) << "no integrity record";
    if (bytes.size() <= kUserBlock || newline <= tag + 17 || newline >= kUserBlock) return {};
    auto in = [&](size_t begin, size_t end) { return begin + rng() % (end - begin); };
    std::vector<size_t> at = {in(0, tag),                    // the tag
                              in(tag, tag + 16),             // the hash
                              tag + 16,                      // the space after it
                              in(tag + 17, newline),         // the file size
                              newline,                       // the end of the line
                              in(newline + 1, kUserBlock)};  // the rest of the user block
    const std::vector<size_t> body = random_positions(bytes, n, kUserBlock, rng);
    at.insert(at.end(), body.begin(), body.end());
    return at;
  }

  /// Whether `err` is empty or only `similar`'s notes of queries it skipped, for a word not in the
  /// vocabulary or a vector with NaN or infinite values: a mutated byte inside a stored word
  /// renames it, one in a vector can make it NaN, and the file is still a valid one.
  static bool only_skipped_words(const std::string& err) {
    size_t begin = 0;
    while (begin < err.size()) {
      const size_t end = err.find('\n', begin);
      if (end == std::string::npos) return false;
      const std::string line = err.substr(begin, end - begin);
      if (line.rfind("pagedw2v: skipped '", 0) != 0 ||
          (line.find("not in the vocabulary") == std::string::npos &&
           line.find("holds NaN or infinite values") == std::string::npos)) {
        return false;
      }
      begin = end + 1;
    }
    return true;
  }

  /// `command` with "{}" replaced by `file`, "@NAME" by NAME in `work` and "%NAME" by NAME in the
  /// suite's directory.
  static std::vector<std::string> arguments(const std::vector<std::string>& command,
                                            const std::string& file, const TempDir& work) {
    std::vector<std::string> args;
    for (const std::string& a : command) {
      if (a == "{}") {
        args.push_back(file);
      } else if (a.rfind("@", 0) == 0) {
        args.push_back(work.file(a.substr(1)));
      } else if (a.rfind("%", 0) == 0) {
        args.push_back(dir_->file(a.substr(1)));
      } else {
        args.push_back(a);
      }
    }
    return args;
  }

  /// Mutates one byte of `original` at each of `positions` (a random change, seeded by `seed`), and
  /// runs `commands` (with "{}" for the file) on every mutant, its integrity record computed again
  /// when `reseal`. A run must succeed or fail with one line, the run ending by itself.
  static Tally mutate(const std::string& original,
                      const std::vector<std::vector<std::string>>& commands,
                      const std::vector<size_t>& positions, uint64_t seed, bool reseal = false) {
    const std::string bytes = read_file(original);
    EXPECT_FALSE(bytes.empty());
    std::mt19937_64 rng(seed);
    Tally tally;
    const TempDir work;
    const std::string mutant = work.file("mutant.h5");
    for (size_t i = 0; i < positions.size(); ++i) {
      std::string m = bytes;
      const size_t at = positions[i];
      const auto flip = static_cast<unsigned char>(1 + rng() % 255);
      m[at] = static_cast<char>(static_cast<unsigned char>(m[at]) ^ flip);
      write_file(mutant, m);
      if (reseal) seal_h5_file(mutant);
      for (const auto& command : commands) {
        const std::vector<std::string> args = arguments(command, mutant, work);
        std::filesystem::remove_all(work.file("out"));
        // A run that hangs is killed (run_binary's limit) and reported as timed out.
        const RunResult r = run_binary(args, work.path());
        tally.slowest = std::max(tally.slowest, r.seconds);
        const std::string& name = command[0];
        if (r.exited && r.code == 0 && only_skipped_words(r.err) && !r.timed_out) {
          ++tally.ok[name];
          continue;
        }
        const std::string problem = clear_failure_problem(r, 1);
        if (problem.empty()) {
          ++tally.refused[name];
        } else {
          ++tally.bad[name];
          ADD_FAILURE() << "byte " << at << " ^ " << int{flip} << " (seed " << seed << ", mutation "
                        << i << "): " << problem;
        }
      }
    }
    return tally;
  }

  static void report(const char* what, const Tally& t, uint64_t n, uint64_t seed) {
    std::printf("%s: %llu mutations (seed %llu), slowest run %.2f s\n", what,
                static_cast<unsigned long long>(n), static_cast<unsigned long long>(seed),
                t.slowest);
    std::map<std::string, bool> names;
    for (const auto* m : {&t.ok, &t.refused, &t.bad}) {
      for (const auto& [name, count] : *m) names[name] = true;
    }
    for (const auto& [name, unused] : names) {
      auto get = [&](const std::map<std::string, uint64_t>& m) {
        const auto it = m.find(name);
        return static_cast<unsigned long long>(it == m.end() ? 0 : it->second);
      };
      std::printf("  %-8s ok %llu, refused with one line %llu, crashed/hung/unclear %llu\n",
                  name.c_str(), get(t.ok), get(t.refused), get(t.bad));
    }
    std::fflush(stdout);
  }

  /// A copy of `path` without its integrity record: a file as another program writes it.
  static std::string foreign_copy(const std::string& path, const std::string& name) {
    std::string bytes = read_file(path);
    for (size_t i = 0; i < 64 && i < bytes.size(); ++i) bytes[i] = '\0';
    write_file(dir_->file(name), bytes);
    return dir_->file(name);
  }

  static const std::vector<std::vector<std::string>>& reading_commands() {
    static const std::vector<std::vector<std::string>> c = {
        {"similar", "--vectors", "{}", "w1", "w2"},
        {"eval", "--vectors", "{}", "--similarity", "%pairs.tsv", "--json"},
    };
    return c;
  }
  static const std::vector<std::vector<std::string>>& checkpoint_commands() {
    static const std::vector<std::vector<std::string>> c = {
        {"similar", "--vectors", "{}", "w1", "w2"},
        {"eval", "--vectors", "{}", "--similarity", "%pairs.tsv", "--json"},
        {"export", "--checkpoint", "{}", "--output", "@out", "--format", "npy"},
        {"train", "--resume", "{}", "--output", "@out", "--quiet", "--format", "npy"},
    };
    return c;
  }

  static TempDir* dir_;
};

TempDir* Mutations::dir_ = nullptr;

/// Runs of `command` that `t` counts as refused with one line.
uint64_t refused(const Mutations::Tally& t, const std::string& command) {
  const auto it = t.refused.find(command);
  return it == t.refused.end() ? 0 : it->second;
}

// Every mutant but those of the record's tag (the file then reads as another program's) and of
// the rest of the user block (outside the record and the checksum) is refused by every command.
TEST_F(Mutations, OfEmbeddingsH5EndCleanly) {
  const uint64_t n = env_number("PAGEDW2V_H5_MUTATIONS", 10);
  const uint64_t seed = env_number("PAGEDW2V_H5_MUTATION_SEED", fresh_seed());
  std::mt19937_64 rng(seed);
  const std::string file = dir_->file("run/embeddings.h5");
  const std::vector<size_t> at = record_and_body_positions(read_file(file), n, rng);
  const Tally t = mutate(file, reading_commands(), at, seed);
  report("embeddings.h5", t, at.size(), seed);
  for (const auto& command : reading_commands()) {
    EXPECT_GE(refused(t, command[0]), at.size() - 2) << command[0];
  }
}

TEST_F(Mutations, OfACheckpointEndCleanly) {
  const uint64_t n = env_number("PAGEDW2V_H5_MUTATIONS", 10);
  const uint64_t seed = env_number("PAGEDW2V_H5_MUTATION_SEED", fresh_seed());
  std::mt19937_64 rng(seed);
  const std::string file = dir_->file("run/checkpoints/epoch-1.h5");
  const std::vector<size_t> at = record_and_body_positions(read_file(file), n, rng);
  const Tally t = mutate(file, checkpoint_commands(), at, seed);
  report("checkpoint", t, at.size(), seed);
  for (const auto& command : checkpoint_commands()) {
    EXPECT_GE(refused(t, command[0]), at.size() - 2) << command[0];
  }
}

// Without the record every mutant reaches libhdf5, in a child process. The checkpoint's mutants
// go to the commands that read it as a checkpoint (`export`, `train --resume`): `similar` and
// `eval` read its vectors with the same reader as an embeddings.h5, whose mutants they get.
TEST_F(Mutations, OfFilesWithoutChecksumEndCleanly) {
  const uint64_t n = env_number("PAGEDW2V_H5_FOREIGN_MUTATIONS", 30);
  const uint64_t seed = env_number("PAGEDW2V_H5_MUTATION_SEED", fresh_seed());
  const std::string embeddings = foreign_copy(dir_->file("run/embeddings.h5"), "foreign.h5");
  const std::string checkpoint =
      foreign_copy(dir_->file("run/checkpoints/epoch-1.h5"), "foreign-checkpoint.h5");
  // Unmutated, they still load.
  EXPECT_EQ(run_binary({"similar", "--vectors", embeddings, "w1"}, dir_->path()).code, 0);
  std::mt19937_64 rng(seed);
  const Tally a = mutate(embeddings, reading_commands(),
                         random_positions(read_file(embeddings), n, 0, rng), seed);
  report("embeddings.h5 without checksum", a, n, seed);
  const std::vector<std::vector<std::string>> checkpoint_readers(checkpoint_commands().begin() + 2,
                                                                 checkpoint_commands().end());
  ASSERT_EQ(checkpoint_readers.front()[0], "export");
  const Tally b = mutate(checkpoint, checkpoint_readers,
                         random_positions(read_file(checkpoint), n, 0, rng), seed + 1);
  report("checkpoint without checksum", b, n, seed + 1);
}

// Bytes of the HDF5 part changed and the record made to match: the file passes the hash, and the
// parse in a child still turns every crash, loop or out-of-bounds read of libhdf5 into one line.
TEST_F(Mutations, OfResealedFilesEndCleanly) {
  const uint64_t n = env_number("PAGEDW2V_H5_RESEALED_MUTATIONS", 30);
  const uint64_t seed = env_number("PAGEDW2V_H5_MUTATION_SEED", fresh_seed());
  std::mt19937_64 rng(seed);
  // After the user block and the HDF5 signature that follows it (without which there is no file
  // to seal).
  constexpr size_t kFirst = 512 + 8;
  const std::string embeddings = dir_->file("run/embeddings.h5");
  const Tally a = mutate(embeddings, reading_commands(),
                         random_positions(read_file(embeddings), n, kFirst, rng), seed, true);
  report("embeddings.h5 resealed", a, n, seed);
  const std::string checkpoint = dir_->file("run/checkpoints/epoch-1.h5");
  const Tally b = mutate(checkpoint, checkpoint_commands(),
                         random_positions(read_file(checkpoint), n, kFirst, rng), seed + 1, true);
  report("checkpoint resealed", b, n, seed + 1);
}

// A heap object of /vocab/words grown past its collection by 64 B … 2^49 B, the record computed
// again: every command that reads the file says that it is damaged, in one line.
TEST_F(Mutations, HeapObjectsGrownPastTheirCollectionEndInOneLine) {
  const std::vector<std::pair<std::string, const std::vector<std::vector<std::string>>*>> files = {
      {dir_->file("run/embeddings.h5"), &reading_commands()},
      {dir_->file("run/checkpoints/epoch-1.h5"), &checkpoint_commands()}};
  const TempDir work;
  const std::string mutant = work.file("grown.h5");
  for (const auto& [file, commands] : files) {
    for (const int shift : {6, 10, 20, 30, 40, 49}) {
      const uint64_t delta = uint64_t{1} << shift;
      SCOPED_TRACE(file + ", /vocab/words object 'w1' grown by " + std::to_string(delta));
      std::string bytes = read_file(file);
      ASSERT_NE(grow_heap_object(bytes, "w1", delta), std::string::npos);
      write_file(mutant, bytes);
      seal_h5_file(mutant);
      for (const auto& command : *commands) {
        const std::vector<std::string> args = arguments(command, mutant, work);
        std::filesystem::remove_all(work.file("out"));
        const RunResult r = run_binary(args, work.path());
        EXPECT_EQ(clear_failure_problem(r, 1, "/vocab/words is damaged ("), "");
        EXPECT_FALSE(std::filesystem::exists(work.file("out/vectors.npy"))) << r.command;
      }
    }
  }
}

}  // namespace
}  // namespace pagedw2v
