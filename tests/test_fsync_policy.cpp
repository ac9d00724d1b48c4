// Which files are fsync'ed: checkpoints written during training always are; the files written at
// the end of a normal run (exports, the last checkpoint) only with --fsync-outputs. Either way
// they appear under their names only complete.
//
// This executable defines fsync() itself, so that every call the library makes (on any thread)
// is recorded with the path of the file or directory, then done by the system call.
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "base/atomic_file.hpp"
#include "io/export.hpp"
#include "io/npy.hpp"
#include "test_util.hpp"
#include "train/trainer.hpp"
#include "vocab/vocab.hpp"

namespace {

std::mutex g_mutex;
std::vector<std::string> g_synced;

}  // namespace

extern "C" int fsync(int fd) {
  char link[64];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  char target[4096];
  const ssize_t n = ::readlink(link, target, sizeof target);
  {
    const std::lock_guard<std::mutex> lock(g_mutex);
    g_synced.emplace_back(n > 0 ? std::string(target, static_cast<size_t>(n)) : "?");
  }
  return static_cast<int>(::syscall(SYS_fsync, fd));
}

namespace pagedw2v {
namespace {

using testing_util::entries;
using testing_util::read_file;
using testing_util::TempDir;
using testing_util::write_file;

/// The paths fsync'ed since the last call.
std::vector<std::string> take_synced() {
  const std::lock_guard<std::mutex> lock(g_mutex);
  std::vector<std::string> out;
  out.swap(g_synced);
  return out;
}

/// Whether a synced path holds `part` (temporary names hold the final name, then a tag).
bool synced(const std::vector<std::string>& paths, const std::string& part) {
  return std::any_of(paths.begin(), paths.end(),
                     [&](const std::string& p) { return p.find(part) != std::string::npos; });
}

bool has_temp(const std::string& dir) {
  for (const std::string& name : entries(dir)) {
    if (is_temp_name(name)) return true;
  }
  return false;
}

TEST(FsyncPolicy, AtomicFileFollowsTheThreadsScope) {
  TempDir dir;
  take_synced();
  {
    AtomicFile f(dir.file("durable.txt"));
    f.write("durable\n");
    f.commit();
  }
  std::vector<std::string> paths = take_synced();
  EXPECT_TRUE(synced(paths, "durable.txt")) << "a default commit fsyncs the file";
  EXPECT_TRUE(synced(paths, dir.path())) << "and its directory";
  {
    const FsyncScope scope(false);
    EXPECT_FALSE(fsync_on_commit());
    AtomicFile f(dir.file("quick.txt"));
    f.write("quick\n");
    f.commit();
  }
  EXPECT_TRUE(fsync_on_commit()) << "the scope restores the setting";
  paths = take_synced();
  EXPECT_TRUE(paths.empty()) << paths.front();
  EXPECT_EQ(read_file(dir.file("quick.txt")), "quick\n");
  EXPECT_FALSE(has_temp(dir.path()));

  // A file written by name (as HDF5 writes) and committed.
  {
    const FsyncScope scope(false);
    const std::string temp = temp_name_for(dir.file("byname.bin"));
    write_file(temp, "by name");
    commit_file(temp, dir.file("byname.bin"));
  }
  EXPECT_TRUE(take_synced().empty());
  EXPECT_EQ(read_file(dir.file("byname.bin")), "by name");
  EXPECT_FALSE(has_temp(dir.path()));
}

Model small_model(uint32_t rows, uint32_t dim) {
  Model m{HostTable(rows, dim, "test table", ""), HostTable(rows, dim, "test table", "")};
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.1f);
  for (uint64_t i = 0; i < uint64_t{rows} * dim; ++i) {
    m.input.data()[i] = normal(rng);
    m.output.data()[i] = normal(rng);
  }
  return m;
}

// The export writes each format on a thread of its own: each takes the caller's setting.
TEST(FsyncPolicy, ExportThreadsTakeTheCallersSetting) {
  TempDir dir;
  const Vocab vocab = Vocab::from_words({"a", "b", "c"}, {3, 2, 1});
  const Model model = small_model(3, 4);
  ExportOptions options;
  options.formats = {"npy", "h5", "bin", "txt"};
  take_synced();
  {
    const FsyncScope scope(false);
    export_model(dir.file("quick"), vocab, model, options);
  }
  std::vector<std::string> paths = take_synced();
  EXPECT_TRUE(paths.empty()) << paths.front();
  const std::vector<std::string> written = entries(dir.file("quick"));
  for (const char* name :
       {"vocab.tsv", "vectors.npy", "embeddings.h5", "vectors.bin", "vectors.txt"}) {
    EXPECT_NE(std::find(written.begin(), written.end(), name), written.end()) << name;
  }
  EXPECT_FALSE(has_temp(dir.file("quick")));
  const NpyMatrix back = read_npy(dir.file("quick/vectors.npy"));
  ASSERT_EQ(back.data.size(), 12u);
  EXPECT_EQ(back.data[5], model.input.data()[5]);

  export_model(dir.file("durable"), vocab, model, options);
  paths = take_synced();
  for (const char* name :
       {"vocab.tsv", "vectors.npy", "embeddings.h5", "vectors.bin", "vectors.txt"}) {
    EXPECT_TRUE(synced(paths, name)) << name << " is fsync'ed by default";
  }
}

std::string corpus_text() {
  std::mt19937 rng(11);
  std::string text;
  for (int s = 0; s < 300; ++s) {
    for (int i = 0; i < 10; ++i) text += "w" + std::to_string(rng() % 40) + " ";
    text += "\n";
  }
  return text;
}

// A run of two epochs: the first epoch's checkpoint is fsync'ed (it is there to survive a
// failure mid-run); the last checkpoint and the export files only with --fsync-outputs.
TEST(FsyncPolicy, OnlyCheckpointsDuringTrainingAreDurableByDefault) {
  TempDir dir;
  write_file(dir.file("corpus.txt"), corpus_text());
  for (const bool fsync_outputs : {false, true}) {
    const std::string out = fsync_outputs ? "durable" : "quick";
    Config c = testing_util::small_cpu_config(dir, out, 8, 2);
    c.fsync_outputs = fsync_outputs;
    take_synced();
    run_training(c, nullptr);
    const std::vector<std::string> paths = take_synced();
    EXPECT_TRUE(synced(paths, "epoch-1.h5")) << out;
    EXPECT_EQ(synced(paths, "epoch-2.h5"), fsync_outputs) << out;
    EXPECT_EQ(synced(paths, "vectors.npy"), fsync_outputs) << out;
    EXPECT_EQ(synced(paths, "vocab.tsv"), fsync_outputs) << out;
    const std::vector<std::string> written = entries(dir.file(out));
    EXPECT_NE(std::find(written.begin(), written.end(), "vectors.npy"), written.end());
    EXPECT_FALSE(has_temp(dir.file(out)));
    const std::vector<std::string> checkpoints = entries(dir.file(out + "/checkpoints"));
    EXPECT_NE(std::find(checkpoints.begin(), checkpoints.end(), "epoch-2.h5"), checkpoints.end());
    EXPECT_FALSE(has_temp(dir.file(out + "/checkpoints")));
  }
}

}  // namespace
}  // namespace pagedw2v
