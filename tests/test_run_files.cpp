// What a run writes, and when: temporary files, the output lock, export sets, checkpoint pruning
// by position, background checkpoint writes, and the settings a resumed run keeps.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "base/atomic_file.hpp"
#include "base/error.hpp"
#include "io/export.hpp"
#include "io/npy.hpp"
#include "test_util.hpp"
#include "train/checkpoint.hpp"
#include "train/trainer.hpp"

namespace pagedw2v {
namespace {

using testing_util::entries;
using testing_util::fresh_seed;
using testing_util::read_file;
using testing_util::TempDir;
using testing_util::write_file;

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

/// A pid that no process has: a child that has ended and been reaped.
long dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

Vocab small_vocab(uint32_t n) {
  std::vector<std::string> words;
  std::vector<uint64_t> counts;
  for (uint32_t i = 0; i < n; ++i) {
    words.push_back("w" + std::to_string(i));
    counts.push_back(100 - i);
  }
  return Vocab::from_words(std::move(words), std::move(counts));
}

Model random_model(uint32_t rows, uint32_t dim, OptimizerKind kind, uint64_t seed) {
  Model m = allocate_model(rows, dim, kind, false, "");
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  auto fill = [&](HostTable& t) {
    for (uint64_t r = 0; r < t.rows(); ++r) {
      for (uint32_t j = 0; j < t.dim(); ++j) t.row(r)[j] = u(rng);
    }
  };
  fill(m.input);
  fill(m.output);
  for (HostTable& t : m.input_state) fill(t);
  for (HostTable& t : m.output_state) fill(t);
  return m;
}

std::string table_bytes(const HostTable& t) {
  std::string s;
  for (uint64_t r = 0; r < t.rows(); ++r) {
    s.append(reinterpret_cast<const char*>(t.row(r)), t.dim() * sizeof(float));
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// Temporary files

TEST(TempFiles, AreCreatedExclusivelyWithUniqueNames) {
  TempDir dir;
  const std::string target = dir.file("vectors.npy");
  std::set<std::string> names;
  for (int i = 0; i < 50; ++i) {
    const std::string name = temp_name_for(target);
    EXPECT_TRUE(names.insert(name).second) << name;
    struct stat st {};
    ASSERT_EQ(::lstat(name.c_str(), &st), 0);
    EXPECT_TRUE(S_ISREG(st.st_mode));
    long pid = 0;
    EXPECT_TRUE(is_temp_name(std::filesystem::path(name).filename().string(), &pid)) << name;
    EXPECT_EQ(pid, static_cast<long>(::getpid()));
  }
  EXPECT_FALSE(is_temp_name("vectors.npy"));
  EXPECT_FALSE(is_temp_name("vectors.npy.tmp-"));
  EXPECT_FALSE(is_temp_name("vectors.npy.tmp-12a"));
  EXPECT_FALSE(is_temp_name(".tmp-12"));
}

TEST(TempFiles, AWriterNeverWritesThroughAPlantedLink) {
  TempDir dir;
  write_file(dir.file("victim"), "precious");
  // Links under every name a writer of the old scheme would have used.
  for (int pid = ::getpid(); pid < ::getpid() + 4; ++pid) {
    ASSERT_EQ(::symlink(dir.file("victim").c_str(),
                        (dir.file("vocab.tsv") + ".tmp-" + std::to_string(pid)).c_str()),
              0);
  }
  ASSERT_EQ(::symlink(dir.file("victim").c_str(), dir.file("vocab.tsv").c_str()), 0);
  small_vocab(5).save_tsv(dir.file("vocab.tsv"));
  EXPECT_EQ(read_file(dir.file("victim")), "precious");
  struct stat st {};
  ASSERT_EQ(::lstat(dir.file("vocab.tsv").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
}

TEST(TempFiles, OnlyThoseOfEndedProcessesAreRemoved) {
  TempDir dir;
  const std::string dead = dir.file("vectors.npy.abcdef.tmp-" + std::to_string(dead_pid()));
  const std::string mine = dir.file("vectors.npy.ghijkl.tmp-" + std::to_string(::getpid()));
  const std::string live = dir.file("epoch-1.h5.mnopqr.tmp-1");  // init never ends
  const std::string stale_dir = dir.file("export.stuvwx.tmp-" + std::to_string(dead_pid()));
  for (const std::string& p : {dead, mine, live}) write_file(p, "partial");
  ASSERT_EQ(::mkdir(stale_dir.c_str(), 0700), 0);
  write_file(stale_dir + "/vectors.npy", "partial");
  write_file(dir.file("vectors.npy"), "kept");
  EXPECT_EQ(remove_stale_temps(dir.path()), 2u);
  EXPECT_FALSE(exists(dead));
  EXPECT_FALSE(exists(stale_dir));
  EXPECT_TRUE(exists(mine));
  EXPECT_TRUE(exists(live));
  EXPECT_TRUE(exists(dir.file("vectors.npy")));
}

TEST(OutputLock, ASecondLockOnTheSameDirectoryIsRefused) {
  TempDir dir;
  {
    const OutputLock first(dir.path());
    try {
      const OutputLock second(dir.path());
      FAIL() << "locked twice";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("in use by another pagedw2v process"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_NO_THROW(OutputLock again(dir.path()));
}

// ---------------------------------------------------------------------------------------------
// Export sets

TEST(ExportSet, AFailedExportLeavesTheOlderSetUntouched) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  TempDir dir;
  const std::string out = dir.file("run");
  const Vocab old_vocab = small_vocab(20);
  ExportOptions options;
  options.formats = {"npy", "txt"};
  export_model(out, old_vocab, random_model(20, 4, OptimizerKind::kSgd, seed), options);
  const std::string old_tsv = read_file(out + "/vocab.tsv");
  const std::string old_npy = read_file(out + "/vectors.npy");

  // The next export fails on its largest file (vectors.txt, past a file size limit) after the
  // others were written: nothing of it may reach the directory.
  const Vocab new_vocab = small_vocab(2000);
  const Model model = random_model(2000, 16, OptimizerKind::kSgd, seed + 1);
  {
    struct rlimit saved {};
    ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
    const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
    struct rlimit limited = saved;
    limited.rlim_cur = 200 << 10;  // vectors.npy is 128 KiB; vectors.txt over 300 KiB
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
    try {
      export_model(out, new_vocab, model, options);
      ADD_FAILURE() << "the export did not fail";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("File too large"), std::string::npos) << e.what();
    }
    ::setrlimit(RLIMIT_FSIZE, &saved);
    std::signal(SIGXFSZ, old_handler);
  }
  EXPECT_EQ(read_file(out + "/vocab.tsv"), old_tsv);
  EXPECT_EQ(read_file(out + "/vectors.npy"), old_npy);
  for (const std::string& name : entries(out)) {
    EXPECT_FALSE(is_temp_name(name)) << name;
  }
  // A successful one replaces the set and removes the files of formats it did not write.
  ExportOptions npy_only;
  npy_only.formats = {"npy"};
  const std::vector<std::string> written = export_model(out, new_vocab, model, npy_only);
  EXPECT_EQ(written, (std::vector<std::string>{out + "/vocab.tsv", out + "/vectors.npy"}));
  EXPECT_FALSE(exists(out + "/vectors.txt"));
  EXPECT_EQ(read_npy(out + "/vectors.npy").rows, 2000u);
}

TEST(ExportSet, SaveContextWritesTheOutputVectorsInEveryFormat) {
  const uint64_t seed = fresh_seed();
  TempDir dir;
  const Vocab vocab = small_vocab(12);
  const Model model = random_model(12, 3, OptimizerKind::kSgd, seed);
  ExportOptions options;
  options.save_context = true;
  const std::vector<std::string> written = export_model(dir.file("o"), vocab, model, options);
  for (const char* name : {"context_vectors.npy", "context_vectors.bin", "context_vectors.txt"}) {
    EXPECT_NE(std::find(written.begin(), written.end(), dir.file("o/") + name), written.end())
        << name;
  }
  const NpyMatrix context = read_npy(dir.file("o/context_vectors.npy"));
  EXPECT_EQ(testing_util::bytes_of(context.data.data(), context.data.size()),
            table_bytes(model.output));
  EXPECT_NE(read_file(dir.file("o/context_vectors.txt")), read_file(dir.file("o/vectors.txt")));
}

TEST(ExportSet, FormatNoneWritesNothing) {
  TempDir dir;
  ExportOptions none;
  none.formats = parse_formats("none");
  EXPECT_TRUE(none.formats.empty());
  EXPECT_TRUE(
      export_model(dir.file("o"), small_vocab(3), random_model(3, 2, OptimizerKind::kSgd, 1), none)
          .empty());
  EXPECT_TRUE(entries(dir.file("o")).empty());
  EXPECT_THROW(parse_formats("none,npy"), UsageError);
}

// ---------------------------------------------------------------------------------------------
// Checkpoints

TEST(CheckpointNames, StandForTheirPosition) {
  EXPECT_EQ(checkpoint_words("epoch-3.h5", 1000), std::optional<uint64_t>(3000));
  EXPECT_EQ(checkpoint_words("step-2500.h5", 1000), std::optional<uint64_t>(2500));
  EXPECT_FALSE(checkpoint_words("latest.h5", 1000));
  EXPECT_FALSE(checkpoint_words("epoch-.h5", 1000));
  EXPECT_FALSE(checkpoint_words("epoch-1.h5.abc.tmp-12", 1000));
  EXPECT_FALSE(checkpoint_words("step-12x.h5", 1000));
}

/// A small run's pieces for writing checkpoints by hand.
struct CheckpointFixture {
  TempDir dir;
  Config config;
  Vocab vocab = small_vocab(16);
  CorpusFingerprint corpus{1000000, 10, 42};  // positions below up to 2 epochs of it

  CheckpointFixture() {
    config.corpus = dir.file("corpus.txt");
    config.dim = 4;
    config.optimizer = OptimizerKind::kAdam;
  }
};

TEST(CheckpointDir, PrunesByPositionNotByFileTime) {
  CheckpointFixture f;
  const Model model = random_model(16, 4, OptimizerKind::kAdam, fresh_seed());
  CheckpointDir dir(f.dir.path(), 2, 1000);
  dir.write(true, f.config, f.vocab, model, {1, 0, 1000}, f.corpus, 0.01f);
  // A stale file of an earlier position with the newest time of all (clock skew, a copy).
  const std::string stale = dir.path() + "/step-500.h5";
  std::filesystem::copy_file(dir.path() + "/epoch-1.h5", stale);
  const struct timeval future[2] = {{4102444800, 0}, {4102444800, 0}};  // 2100-01-01
  ASSERT_EQ(::utimes(stale.c_str(), future), 0);
  // And one past the position about to be written, from a continuation this run replaces.
  std::filesystem::copy_file(dir.path() + "/epoch-1.h5", dir.path() + "/epoch-9.h5");

  const std::string written =
      dir.write(false, f.config, f.vocab, model, {1, 5, 1500}, f.corpus, 0.01f);
  EXPECT_EQ(written, dir.path() + "/step-1500.h5");
  EXPECT_EQ(entries(dir.path()),
            (std::vector<std::string>{"epoch-1.h5", "latest.h5", "step-1500.h5"}));
  char target[64] = {};
  ASSERT_GT(::readlink((dir.path() + "/latest.h5").c_str(), target, sizeof target - 1), 0);
  EXPECT_STREQ(target, "step-1500.h5");
}

TEST(CheckpointWriter, ASnapshotHoldsTheTablesAsTheyWereWhenItWasTaken) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  CheckpointFixture f;
  Model model = random_model(16, 4, OptimizerKind::kAdam, seed);
  const std::string input = table_bytes(model.input);
  const std::string state = table_bytes(model.output_state[1]);
  CheckpointDir dir(f.dir.path(), 3, 1000);
  CheckpointWriter writer(dir, f.config, f.vocab, f.corpus);
  writer.write_snapshot(true, model, {1, 0, 1000}, 0.01f);
  // Training goes on at once: the tables change while the copy is written.
  model.input.fill(7.0f);
  model.output_state[1].fill(-3.0f);
  EXPECT_EQ(writer.wait(), dir.path() + "/epoch-1.h5");
  const Checkpoint ck = load_checkpoint(dir.path() + "/epoch-1.h5");
  EXPECT_EQ(table_bytes(ck.model.input), input);
  EXPECT_EQ(table_bytes(ck.model.output_state[1]), state);
  EXPECT_EQ(ck.position.words_done, 1000u);

  // Written in place, the next one holds the tables as they are now.
  writer.write_in_place(true, model, {2, 0, 2000}, 0.01f);
  EXPECT_EQ(writer.wait(), dir.path() + "/epoch-2.h5");
  EXPECT_EQ(table_bytes(load_checkpoint(dir.path() + "/epoch-2.h5").model.input),
            table_bytes(model.input));
  EXPECT_EQ(writer.written(), 2u);
}

TEST(CheckpointWriter, ABackgroundFailureIsThrownByTheNextCall) {
  CheckpointFixture f;
  const Model model = random_model(16, 4, OptimizerKind::kAdam, fresh_seed());
  CheckpointDir dir(f.dir.path(), 3, 1000);
  CheckpointWriter writer(dir, f.config, f.vocab, f.corpus);
  // A directory where the checkpoint file should go makes its rename fail.
  ASSERT_EQ(::mkdir((dir.path() + "/epoch-1.h5").c_str(), 0755), 0);
  write_file(dir.path() + "/epoch-1.h5/x", "");
  writer.write_snapshot(true, model, {1, 0, 1000}, 0.01f);
  EXPECT_THROW(writer.wait(), Error);
  for (const std::string& name : entries(dir.path())) EXPECT_FALSE(is_temp_name(name)) << name;
  EXPECT_NO_THROW(writer.wait());  // reported once
}

// ---------------------------------------------------------------------------------------------
// Resuming

TEST(ResumeSettings, ThreadsAndDeterminismComeFromTheCheckpointUnlessGiven) {
  Config saved;
  saved.threads = 1;
  saved.deterministic = true;
  saved.epochs = 3;
  Config requested;
  requested.resume = "ck.h5";
  requested.output = "out";
  Config merged = merge_for_resume(saved, requested);
  EXPECT_EQ(merged.threads, 1u);
  EXPECT_TRUE(merged.deterministic);
  EXPECT_EQ(merged.effective_threads(), 1u);

  apply_option(requested, "threads", "2");
  merged = merge_for_resume(saved, requested);
  EXPECT_EQ(merged.threads, 2u);
  EXPECT_FALSE(merged.deterministic);

  Config one_thread;
  one_thread.threads = 1;
  Config plain;
  plain.resume = "ck.h5";
  EXPECT_EQ(merge_for_resume(one_thread, plain).effective_threads(), 1u);
}

// A run resumed on another machine trains where its checkpoint's run did unless told: a CPU run
// resumed where a GPU is visible stays on the CPU, and so resumes to the same bits.
TEST(ResumeSettings, DeviceAndPlacementComeFromTheCheckpointUnlessGiven) {
  Config saved;
  apply_option(saved, "device", "cpu");
  apply_option(saved, "placement", "paged");
  Config requested;
  requested.resume = "ck.h5";
  requested.output = "out";
  Config merged = merge_for_resume(saved, requested);
  EXPECT_EQ(merged.device, DeviceKind::kCpu);
  EXPECT_EQ(merged.placement, Placement::kPaged);

  apply_option(requested, "device", "auto");
  apply_option(requested, "placement", "resident");
  merged = merge_for_resume(saved, requested);
  EXPECT_EQ(merged.device, DeviceKind::kAuto);
  EXPECT_EQ(merged.placement, Placement::kResident);
  // Both are recorded in the checkpoint, so the command that resumes a run leaves them out.
  EXPECT_TRUE(checkpoint_records("device"));
  EXPECT_TRUE(checkpoint_records("placement"));
}

TEST(ResumeSettings, TheVocabularyFileIsTheCheckpointsOwn) {
  Config saved;
  saved.vocab_file = "/data/vocab.tsv";
  Config requested;
  requested.resume = "ck.h5";
  requested.output = "out";
  // Not given, or given as the checkpoint recorded it (a config file used again): recorded as it
  // was.
  EXPECT_EQ(merge_for_resume(saved, requested).vocab_file, "/data/vocab.tsv");
  apply_option(requested, "vocab", "/data/vocab.tsv");
  EXPECT_EQ(merge_for_resume(saved, requested).vocab_file, "/data/vocab.tsv");
  // Another file would be ignored: refused, naming where the vocabulary came from.
  apply_option(requested, "vocab", "other.tsv");
  try {
    merge_for_resume(saved, requested);
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "--vocab cannot be given when resuming: the checkpoint holds its vocabulary (read "
              "from '/data/vocab.tsv')");
  }
  saved.vocab_file.clear();
  EXPECT_THROW(merge_for_resume(saved, requested), UsageError);
}

TEST(ResumeSettings, TheResumeCommandNamesWhatTheCheckpointDoesNotHold) {
  Config c;
  apply_option(c, "corpus", "c.txt");
  apply_option(c, "output", "my run");
  apply_option(c, "dim", "8");
  apply_option(c, "format", "npy,txt");
  apply_option(c, "quiet", "true");
  apply_option(c, "threads", "1");
  const std::string command = resume_command(c, "my run/checkpoints/step-10.h5");
  EXPECT_EQ(command,
            "pagedw2v train --output 'my run' --format npy,txt --quiet=true --resume 'my "
            "run/checkpoints/step-10.h5'");
  EXPECT_TRUE(checkpoint_records("threads"));
  EXPECT_TRUE(checkpoint_records("deterministic"));
  EXPECT_FALSE(checkpoint_records("format"));
  EXPECT_FALSE(checkpoint_records("lr-schedule"));

  // A decay begun anew goes on along its line; standard input is piped again.
  Config again;
  apply_option(again, "corpus", "-");
  apply_option(again, "output", "run");
  apply_option(again, "resume", "a.h5");
  apply_option(again, "lr-schedule", "restart");
  EXPECT_EQ(resume_command(again, "run/checkpoints/latest.h5"),
            "pagedw2v train --output run --lr-schedule continue --corpus - --resume "
            "run/checkpoints/latest.h5 (with the same text on standard input)");
}

}  // namespace
}  // namespace pagedw2v
