// Paged tables on the GPU: the slot-map kernels against a host model of the same rules, and
// whole runs with paged tables against resident ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "config.hpp"
#include "error.hpp"
#include "gpu/cuda_backend.hpp"
#include "gpu/device_buffer.hpp"
#include "gpu/stream.hpp"
#include "negative_pool.cuh"
#include "negative_pool.hpp"
#include "paging.cuh"
#include "train/backend.hpp"
#include "train/training_set.hpp"

namespace pagedw2v {
namespace {

#define REQUIRE_GPU() \
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device"

template <typename T>
DeviceBuffer<T> upload(const std::vector<T>& v) {
  DeviceBuffer<T> d(std::max<size_t>(v.size(), 1), "test");
  if (!v.empty()) {
    PAGEDW2V_CUDA_TRY(cudaMemcpy(d.data(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  return d;
}

template <typename T>
std::vector<T> download(const DeviceBuffer<T>& d, size_t n) {
  std::vector<T> v(n);
  if (n > 0) {
    PAGEDW2V_CUDA_TRY(cudaMemcpy(v.data(), d.data(), n * sizeof(T), cudaMemcpyDeviceToHost));
  }
  return v;
}

// Several super-batches through collect → select → assign → map → leave, compared with a
// host model of paging.cuh's rules, step by step.
TEST(CudaPaging, SlotMapFollowsTheRules) {
  REQUIRE_GPU();
  const uint32_t vocab = 5000, hot = 300, capacity = 2000;
  std::mt19937 rng(7);
  std::vector<uint32_t> owner(vocab, 0), where(vocab, 0);
  std::map<uint64_t, std::vector<uint32_t>> lists;
  DeviceBuffer<uint32_t> d_owner = upload(owner), d_where = upload(where);
  DeviceBuffer<uint8_t> d_marks = upload(std::vector<uint8_t>(vocab, 0));
  DeviceBuffer<uint32_t> d_list(vocab, "list"), d_count(1, "count"), d_src(vocab, "src");
  DeviceBuffer<uint8_t> d_leave(vocab, "leave");
  const size_t temp_bytes = select_marked_ids_temp_bytes(vocab);
  DeviceBuffer<unsigned char> d_temp(std::max<size_t>(temp_bytes, 1), "temp");
  DeviceBuffer<unsigned long long> d_counter = upload(std::vector<unsigned long long>(3, 0));
  Stream st;
  const uint64_t first_valid = 2;  // numbers 0 and 1 belong to an earlier span
  for (uint64_t number = 0; number < 9; ++number) {
    // Skewed ids with repeats, some hot.
    std::vector<uint32_t> ids(1500);
    for (uint32_t& id : ids) {
      const double u = std::uniform_real_distribution<double>(0, 1)(rng);
      id = static_cast<uint32_t>(std::pow(u, 2.5) * vocab) % vocab;
    }
    DeviceBuffer<uint32_t> d_ids = upload(ids);
    launch_mark_cold_ids(d_ids.data(), ids.size(), hot, d_marks.data(), nullptr, st.get());
    launch_select_marked_ids(d_marks.data(), vocab, d_list.data(), d_count.data(), d_temp.data(),
                             temp_bytes, st.get());
    st.synchronize();
    const uint32_t n = download(d_count, 1)[0];
    std::vector<uint32_t> want_list;
    for (uint32_t id : ids)
      if (id >= hot) want_list.push_back(id);
    std::sort(want_list.begin(), want_list.end());
    want_list.erase(std::unique(want_list.begin(), want_list.end()), want_list.end());
    ASSERT_EQ(n, want_list.size());
    ASSERT_EQ(download(d_list, n), want_list) << number;
    ASSERT_LE(n, capacity);

    const uint32_t base = hot + static_cast<uint32_t>(number % 3) * capacity;
    launch_assign_slots(d_list.data(), n, number, first_valid, base, d_owner.data(), d_where.data(),
                        d_marks.data(), d_src.data(), d_counter.data(), st.get());
    DeviceBuffer<uint32_t> d_rows(ids.size(), "rows");
    launch_map_rows(d_ids.data(), ids.size(), hot, d_where.data(), d_rows.data(),
                    d_counter.data() + 1, st.get());
    st.synchronize();
    // Host model.
    std::vector<uint32_t> want_src(n);
    uint64_t from_host = 0;
    for (uint32_t k = 0; k < n; ++k) {
      const uint32_t id = want_list[k];
      const uint32_t o = owner[id];
      const uint64_t lo = std::max<uint64_t>(number >= 2 ? number - 2 : 0, first_valid);
      const bool dev = o != 0 && o - 1 >= lo && o - 1 < number;
      want_src[k] = dev ? where[id] : kFromHostSlot;
      from_host += !dev;
      owner[id] = static_cast<uint32_t>(number + 1);
      where[id] = base + k;
    }
    EXPECT_EQ(download(d_src, n), want_src) << number;
    EXPECT_EQ(download(d_owner, vocab), owner) << number;
    const std::vector<uint32_t> rows = download(d_rows, ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      EXPECT_EQ(rows[i], ids[i] < hot ? ids[i] : where[ids[i]]) << i;
    }
    const std::vector<uint8_t> marks = download(d_marks, vocab);
    EXPECT_EQ(std::count(marks.begin(), marks.end(), 0), static_cast<long>(vocab));
    lists[number] = want_list;
    // Leave flags of number − 2: rows that neither number − 1 nor number staged.
    if (number >= first_valid + 2) {
      const auto& old = lists[number - 2];
      DeviceBuffer<uint32_t> d_old = upload(old);
      launch_mark_leaving_rows(d_old.data(), static_cast<uint32_t>(old.size()), number - 2,
                               d_owner.data(), d_leave.data(), d_counter.data() + 2, st.get());
      st.synchronize();
      const std::vector<uint8_t> leave = download(d_leave, old.size());
      for (size_t k = 0; k < old.size(); ++k) {
        EXPECT_EQ(leave[k] != 0, owner[old[k]] == number - 1) << k;
      }
    }
    (void)from_host;
  }
}

// Row moves: every table, both directions, dims that take the 16-byte and the 4-byte path.
TEST(CudaPaging, MovesRowsOfEveryTable) {
  REQUIRE_GPU();
  for (const uint32_t dim : {7u, 128u}) {
    const uint32_t stride = (dim + 3) & ~3u, vocab = 1000, dev_rows = 900, n = 200;
    std::mt19937 rng(dim);
    std::uniform_real_distribution<float> u(-1, 1);
    std::vector<uint32_t> list(vocab);
    for (uint32_t i = 0; i < vocab; ++i) list[i] = i;
    std::shuffle(list.begin(), list.end(), rng);
    list.resize(n);
    std::sort(list.begin(), list.end());
    std::vector<uint32_t> src(n);
    std::vector<uint8_t> leave(n);
    for (uint32_t k = 0; k < n; ++k) {
      src[k] = k % 3 == 0 ? 500 + k : kFromHostSlot;  // slots 500.. hold device sources
      leave[k] = k % 2;
    }
    const int tables = 3;
    std::vector<std::vector<float>> host(tables, std::vector<float>(size_t{vocab} * dim));
    std::vector<std::vector<float>> dev(tables, std::vector<float>(size_t{dev_rows} * stride));
    for (auto& t : host)
      for (float& x : t) x = u(rng);
    for (auto& t : dev)
      for (size_t i = 0; i < t.size(); ++i) t[i] = i % stride < dim ? u(rng) : 0.0f;
    std::vector<float*> host_pinned(tables);
    std::vector<DeviceBuffer<float>> d_dev;
    MoveArgs m;
    for (int t = 0; t < tables; ++t) {
      PAGEDW2V_CUDA_TRY(cudaHostAlloc(reinterpret_cast<void**>(&host_pinned[t]), host[t].size() * 4,
                                      cudaHostAllocMapped));
      std::memcpy(host_pinned[t], host[t].data(), host[t].size() * 4);
      d_dev.push_back(upload(dev[t]));
      m.tables[t] = PagedTable{host_pinned[t], d_dev[t].data()};
    }
    m.table_count = tables;
    m.dim = dim;
    m.stride = stride;
    DeviceBuffer<uint32_t> d_list = upload(list), d_src = upload(src);
    DeviceBuffer<uint8_t> d_leave = upload(leave);
    m.list = d_list.data();
    m.n = n;
    m.base = 100;
    m.src = d_src.data();
    m.leave = d_leave.data();
    Stream st;
    launch_move_rows(MoveKind::kFromHost, m, st.get());
    launch_move_rows(MoveKind::kFromDevice, m, st.get());
    st.synchronize();
    for (int t = 0; t < tables; ++t) {
      std::vector<float> want = dev[t];
      for (uint32_t k = 0; k < n; ++k) {
        for (uint32_t d = 0; d < dim; ++d) {
          want[(100 + k) * size_t{stride} + d] = src[k] == kFromHostSlot
                                                     ? host[t][size_t{list[k]} * dim + d]
                                                     : dev[t][size_t{src[k]} * stride + d];
        }
      }
      ASSERT_EQ(download(d_dev[t], want.size()), want) << dim << " table " << t;
      // Back to the host: only rows with leave set.
      std::vector<float> after = download(d_dev[t], want.size());
      std::vector<float> want_host = host[t];
      for (uint32_t k = 0; k < n; ++k) {
        if (!leave[k]) continue;
        for (uint32_t d = 0; d < dim; ++d)
          want_host[size_t{list[k]} * dim + d] = after[(100 + k) * size_t{stride} + d];
      }
      dev[t] = after;
      host[t] = want_host;
    }
    launch_move_rows(MoveKind::kToHost, m, st.get());
    st.synchronize();
    for (int t = 0; t < tables; ++t) {
      EXPECT_EQ(0, std::memcmp(host_pinned[t], host[t].data(), host[t].size() * 4)) << dim;
      cudaFreeHost(host_pinned[t]);
    }
  }
}

// The pools of several periods in one launch equal the CPU's pools of each period.
TEST(CudaPaging, PoolsOfConsecutivePeriods) {
  REQUIRE_GPU();
  std::vector<double> w(5000);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 1.0 / (i + 1.0);
  const AliasTable noise(w);
  DeviceBuffer<AliasEntry> d_noise = upload(noise.entries());
  const uint32_t n = 777, count = 5;
  DeviceBuffer<uint32_t> d_out(n * count, "pools");
  launch_draw_pools(42, 3, 10, count, d_noise.data(), noise.size(), n, d_out.data(), nullptr);
  PAGEDW2V_CUDA_TRY(cudaDeviceSynchronize());
  const std::vector<uint32_t> got = download(d_out, n * count);
  for (uint32_t q = 0; q < count; ++q) {
    const std::vector<uint32_t> want = draw_pool(42, 3, 10 + q, noise, n);
    ASSERT_TRUE(std::equal(want.begin(), want.end(), got.begin() + q * n)) << q;
  }
}

/// A Zipf-like text: `words` tokens over `vocab` words, sentences of 3 … 60 words.
std::string zipf_text(uint32_t vocab, uint32_t words, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<double> w(vocab);
  for (uint32_t r = 0; r < vocab; ++r) w[r] = 1.0 / (r + 1.0);
  std::discrete_distribution<uint32_t> pick(w.begin(), w.end());
  std::uniform_int_distribution<int> len(3, 60);
  std::string text;
  uint32_t left = words;
  while (left > 0) {
    const uint32_t n = std::min<uint32_t>(left, len(rng));
    for (uint32_t i = 0; i < n; ++i) {
      text += "w" + std::to_string(pick(rng));
      text += i + 1 < n ? ' ' : '\n';
    }
    left -= n;
  }
  return text;
}

struct RunResult {
  std::vector<float> input, output;
  std::vector<std::vector<float>> state;
  SpanStats stats;
  CudaBackendReport report;
};

struct RunSetup {
  uint32_t dim = 32;
  ModelKind model = ModelKind::kSkipGram;
  OptimizerKind optimizer = OptimizerKind::kSgd;
  uint32_t pool = 512;
  uint32_t batch_words = 16384;
  uint32_t pool_words = 16384;
  uint32_t epochs = 2;
};

RunResult train(const TrainingSet& set, const RunSetup& s, Placement placement, uint64_t hot,
                uint64_t staging, bool serial) {
  Config c;
  c.corpus = "zipf";
  c.dim = s.dim;
  c.model = s.model;
  c.optimizer = s.optimizer;
  c.epochs = s.epochs;
  c.min_count = 1;
  c.negative_pool = s.pool;
  c.batch_words = s.batch_words;
  c.pool_words = s.pool_words;
  TrainData data = set.train_data(c);
  data.params.negative_pool = s.pool;
  data.params.batch_blocks = (s.batch_words + kBlockWords - 1) / kBlockWords;
  data.params.pool_blocks = (s.pool_words + kBlockWords - 1) / kBlockWords;
  data.optimizer = c.optimizer_params();
  Model m{HostTable(set.vocab.size(), c.dim, "in", ""),
          HostTable(set.vocab.size(), c.dim, "out", "")};
  init_model(m, c.seed);
  init_optimizer_state(m, s.optimizer);
  CudaBackendOptions o;
  o.gpu.placement = placement;
  o.hot_rows = hot;
  o.staging_rows = staging;
  o.serial = serial;
  RunResult r;
  {
    auto backend = make_cuda_backend(m, data, o);
    // Spans of uneven length, as timed checkpoints would cut them.
    const uint64_t nb = set.block_count();
    for (uint32_t e = 0; e < c.epochs; ++e) {
      for (uint64_t b = 0; b < nb;) {
        const uint64_t end = std::min<uint64_t>(nb, b + 3 + (b % 5));
        r.stats += backend->train(e, b, end);
        b = end;
      }
    }
    backend->sync_to_host();
    EXPECT_TRUE(cuda_backend_report(*backend, &r.report));
  }
  r.input.assign(m.input.data(), m.input.data() + m.input.rows() * c.dim);
  r.output.assign(m.output.data(), m.output.data() + m.output.rows() * c.dim);
  for (auto& t : m.input_state) r.state.emplace_back(t.data(), t.data() + t.rows() * c.dim);
  for (auto& t : m.output_state) r.state.emplace_back(t.data(), t.data() + t.rows() * c.dim);
  return r;
}

TrainingSet make_set(uint32_t vocab, uint32_t words) {
  Config c;
  c.corpus = "zipf";
  c.min_count = 1;
  return make_training_set(zipf_text(vocab, words, 11), c);
}

void expect_bits_equal(const std::vector<float>& a, const std::vector<float>& b,
                       const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  size_t differ = 0;
  for (size_t i = 0; i < a.size(); ++i) differ += std::memcmp(&a[i], &b[i], 4) != 0;
  EXPECT_EQ(differ, 0u) << what << ": " << differ << " of " << a.size() << " floats differ";
}

class PagedEqualsResident
    : public ::testing::TestWithParam<std::tuple<ModelKind, uint32_t, OptimizerKind, uint32_t>> {};

// With one warp per launch there are no races, so the paged run — rows staged, trained in
// their slots, copied between buffers and written back — must give the resident run's bits.
TEST_P(PagedEqualsResident, BitForBit) {
  REQUIRE_GPU();
  const auto [model, dim, optimizer, pool_words] = GetParam();
  const TrainingSet set = make_set(3000, 60000);
  RunSetup s;
  s.model = model;
  s.dim = dim;
  s.optimizer = optimizer;
  s.pool_words = pool_words;
  if (pool_words < s.batch_words) s.pool = 128;  // several pools per super-batch
  const RunResult resident = train(set, s, Placement::kResident, 0, 0, true);
  // sgd: small staging buffers force super-batches to split; an optimizer steps once per piece,
  // so there the buffers hold a whole super-batch (no split) for the steps to coincide.
  const uint64_t staging = optimizer == OptimizerKind::kSgd ? 1600 : 3000;
  const RunResult paged = train(set, s, Placement::kPaged, 100, staging, true);
  EXPECT_TRUE(paged.report.paged);
  EXPECT_FALSE(resident.report.paged);
  EXPECT_GT(paged.report.rows_from_host, 0u);
  EXPECT_GT(paged.report.rows_to_host, 0u);
  if (optimizer == OptimizerKind::kSgd) {
    EXPECT_GT(paged.report.splits, 0u);
  }
  EXPECT_EQ(paged.stats.words, resident.stats.words);
  EXPECT_EQ(paged.stats.trained, resident.stats.trained);
  expect_bits_equal(paged.input, resident.input, "input");
  expect_bits_equal(paged.output, resident.output, "output");
  ASSERT_EQ(paged.state.size(), resident.state.size());
  for (size_t k = 0; k < paged.state.size(); ++k)
    expect_bits_equal(paged.state[k], resident.state[k], "state");
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, PagedEqualsResident,
    ::testing::Values(std::make_tuple(ModelKind::kSkipGram, 32u, OptimizerKind::kSgd, 16384u),
                      std::make_tuple(ModelKind::kCbow, 32u, OptimizerKind::kSgd, 16384u),
                      std::make_tuple(ModelKind::kSkipGram, 7u, OptimizerKind::kSgd, 16384u),
                      std::make_tuple(ModelKind::kSkipGram, 128u, OptimizerKind::kSgd, 16384u),
                      std::make_tuple(ModelKind::kSkipGram, 32u, OptimizerKind::kSgd, 4096u),
                      std::make_tuple(ModelKind::kCbow, 32u, OptimizerKind::kSgd, 4096u),
                      std::make_tuple(ModelKind::kSkipGram, 32u, OptimizerKind::kAdam, 16384u),
                      std::make_tuple(ModelKind::kSkipGram, 32u, OptimizerKind::kAdam, 4096u),
                      std::make_tuple(ModelKind::kCbow, 16u, OptimizerKind::kAdagrad, 16384u)));

// Concurrent (racy, Hogwild) paged training still learns what resident training learns.
TEST(CudaPaged, ConcurrentRunIsCloseToResident) {
  REQUIRE_GPU();
  const TrainingSet set = make_set(3000, 200000);
  RunSetup s;
  s.epochs = 3;
  const RunResult resident = train(set, s, Placement::kResident, 0, 0, false);
  const RunResult paged = train(set, s, Placement::kPaged, 200, 2000, false);
  EXPECT_EQ(paged.stats.words, resident.stats.words);
  const double lr = resident.stats.loss / resident.stats.loss_terms;
  const double lp = paged.stats.loss / paged.stats.loss_terms;
  EXPECT_NEAR(lp, lr, 0.02 * lr);
  for (float x : paged.input) ASSERT_TRUE(std::isfinite(x));
}

// A budget too small for the staging buffers is one clear error naming the flag.
TEST(CudaPaged, TinyBudgetIsAClearError) {
  REQUIRE_GPU();
  const TrainingSet set = make_set(3000, 20000);
  Config c;
  c.corpus = "zipf";
  c.min_count = 1;
  c.dim = 64;
  TrainData data = set.train_data(c);
  data.params.negative_pool = 4096;
  Model m{HostTable(set.vocab.size(), c.dim, "in", ""),
          HostTable(set.vocab.size(), c.dim, "out", "")};
  CudaBackendOptions o;
  o.gpu.placement = Placement::kPaged;
  o.gpu.memory_budget = 1 << 20;
  try {
    make_cuda_backend(m, data, o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--gpu-memory"), std::string::npos) << e.what();
  }
  o.gpu.placement = Placement::kResident;
  try {
    make_cuda_backend(m, data, o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--placement paged"), std::string::npos) << e.what();
  }
  // Paged without a negative pool: the collect step cannot know the negatives.
  data.params.negative_pool = 0;
  o.gpu.placement = Placement::kPaged;
  o.gpu.memory_budget = 0;
  EXPECT_THROW(make_cuda_backend(m, data, o), UsageError);
}

}  // namespace
}  // namespace pagedw2v
