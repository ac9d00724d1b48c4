// The training kernel's random decisions run on the device (kernels/device_draws.cuh through the
// probe launchers): each must equal the CPU's draw for the same counter, and their frequencies
// must follow the distributions they implement (chi-square with fixed seeds).

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "base/philox.hpp"
#include "cuda_test_util.hpp"
#include "gpu/cuda_backend.hpp"
#include "gpu/device_buffer.hpp"
#include "gpu/stream.hpp"
#include "model/negative_pool.hpp"
#include "model/sampler.hpp"
#include "philox_probe.hpp"
#include "sampler_probe.hpp"
#include "test_util.hpp"

namespace pagedw2v {
namespace {

using testing_util::download;
using testing_util::upload;

/// A chi-square statistic with `df` degrees of freedom passes below mean + 6 standard deviations
/// (a false alarm far below one in a million for these sizes).
double chi_square_limit(double df) { return df + 6.0 * std::sqrt(2.0 * df); }

TEST(CudaSampler, SubsamplingMatchesCpuDrawsAndRates) {
  PAGEDW2V_REQUIRE_GPU();
  const uint32_t vocab = 64, window = 5;
  const uint64_t n = 1 << 20, pos0 = (uint64_t{1} << 33) + 12345, seed = 0x1234567890ull;
  const uint32_t epoch = 3;
  std::mt19937 rng(1);
  std::vector<float> keep(vocab);
  for (uint32_t w = 0; w < vocab; ++w) keep[w] = w == 0 ? 1.0f : 0.02f + 0.96f * w / vocab;
  std::vector<uint32_t> tokens(n);
  std::uniform_int_distribution<uint32_t> word_u(0, vocab - 1);
  for (auto& t : tokens) t = word_u(rng);

  Stream stream;
  DeviceBuffer<uint32_t> d_tokens = upload(tokens, "tokens");
  DeviceBuffer<float> d_keep = upload(keep, "keep");
  DeviceBuffer<uint32_t> d_out(n, "decisions");
  // Poison, on the kernel's stream (it does not wait for the legacy default stream).
  PAGEDW2V_CUDA_TRY(cudaMemsetAsync(d_out.data(), 0x5A, d_out.bytes(), stream.get()));
  launch_subsample_probe(d_tokens.data(), n, pos0, d_keep.data(), seed, epoch, window, d_out.data(),
                         stream.get());
  stream.synchronize();
  const std::vector<uint32_t> out = download(d_out);

  std::vector<double> kept(vocab, 0), seen(vocab, 0), shrink(window, 0);
  for (uint64_t p = 0; p < n; ++p) {
    const Philox4 r = draw(seed, pos0 + p, epoch, DrawKind::kSubsample);
    const float kp = keep[tokens[p]];
    const bool want_keep = !(kp < 1.0f && to_unit_float(r.v[0]) >= kp);
    const uint32_t want = (want_keep ? 0x80000000u : 0u) | (r.v[1] % window);
    ASSERT_EQ(out[p], want) << "token " << p;
    seen[tokens[p]] += 1;
    kept[tokens[p]] += want_keep ? 1 : 0;
    shrink[out[p] & 0xFFFF] += 1;
  }
  double chi = 0;
  int df = 0;
  for (uint32_t w = 1; w < vocab; ++w) {
    const double mean = seen[w] * keep[w], var = mean * (1.0 - keep[w]);
    chi += (kept[w] - mean) * (kept[w] - mean) / var;
    ++df;
  }
  EXPECT_EQ(kept[0], seen[0]);  // keep probability 1 keeps every token
  EXPECT_LT(chi, chi_square_limit(df)) << "kept counts do not follow the keep probabilities";
  double chi_shrink = 0;
  for (uint32_t b = 0; b < window; ++b) {
    const double e = static_cast<double>(n) / window;
    chi_shrink += (shrink[b] - e) * (shrink[b] - e) / e;
  }
  EXPECT_LT(chi_shrink, chi_square_limit(window - 1)) << "window shrink is not uniform";
}

TEST(CudaSampler, NegativesMatchCpuDrawsAndNoiseDistribution) {
  PAGEDW2V_REQUIRE_GPU();
  const uint32_t vocab = 500;
  const uint64_t calls = 1 << 20, seed = 99;
  const uint32_t epoch = 1, centre = 7;
  std::vector<uint64_t> counts(vocab);
  std::mt19937 rng(2);
  std::uniform_int_distribution<uint64_t> count_u(1, 100000);
  for (auto& c : counts) c = count_u(rng);
  const std::vector<double> weights = unigram_weights(counts);
  const NoiseTable noise(weights);

  Stream stream;
  DeviceBuffer<NoiseColumn> d_noise = upload(noise.columns(), "noise");
  DeviceBuffer<uint32_t> d_out(2 * calls, "negatives");
  // Poison, on the kernel's stream (it does not wait for the legacy default stream).
  PAGEDW2V_CUDA_TRY(cudaMemsetAsync(d_out.data(), 0x5A, d_out.bytes(), stream.get()));
  launch_negative_probe(calls, seed, epoch, centre, d_noise.data(), noise.column_count(),
                        d_out.data(), stream.get());
  stream.synchronize();
  const std::vector<uint32_t> out = download(d_out);

  std::vector<double> hist(vocab, 0);
  uint64_t skipped = 0;
  for (uint64_t d = 0; d < calls; ++d) {
    const Philox4 r = draw(seed, d / 8, epoch, DrawKind::kNegative, ((d % 8) << 8) | 0u);
    const uint32_t a = noise.sample(r.v[0], r.v[1]), b = noise.sample(r.v[2], r.v[3]);
    ASSERT_EQ(out[2 * d], a == centre ? 0xFFFFFFFFu : a) << d;
    ASSERT_EQ(out[2 * d + 1], b == centre ? 0xFFFFFFFFu : b) << d;
    hist[a] += 1;
    hist[b] += 1;
    skipped += (a == centre) + (b == centre);
  }
  EXPECT_EQ(static_cast<double>(skipped), hist[centre]);
  double total_w = 0;
  for (double w : weights) total_w += w;
  double chi = 0;
  for (uint32_t w = 0; w < vocab; ++w) {
    const double e = 2.0 * calls * weights[w] / total_w;
    chi += (hist[w] - e) * (hist[w] - e) / e;
  }
  EXPECT_LT(chi, chi_square_limit(vocab - 1)) << "negatives do not follow unigram^0.75";
}

TEST(CudaMemory, OutOfGpuMemoryIsAClearError) {
  PAGEDW2V_REQUIRE_GPU();
  try {
    DeviceBuffer<float> huge(size_t{1} << 42, "a test table");
    FAIL() << "a 16 TiB allocation succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of GPU memory: a test table"), std::string::npos)
        << e.what();
  }
}

// The kernels draw with cuRAND's Philox4x32-10 (kernels/device_draws.cuh), the CPU with
// src/base/philox.hpp: for random counters and keys, and for the counters and keys the training
// draws use, every bit agrees.
TEST(CudaSampler, CurandPhiloxGivesTheBitsOfPhiloxHpp) {
  PAGEDW2V_REQUIRE_GPU();
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const size_t n = 1 << 16;
  std::vector<uint32_t> ctr(4 * n), key(2 * n);
  for (auto& c : ctr) c = static_cast<uint32_t>(rng());
  for (auto& k : key) k = static_cast<uint32_t>(rng());
  // Counters and keys at the edges of their words, where a carry or a sign would show.
  const uint32_t edges[] = {0u, 1u, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFEu, 0xFFFFFFFFu};
  for (size_t i = 0; i < 6 * 6; ++i) {
    for (int k = 0; k < 4; ++k) ctr[4 * i + k] = edges[(i + k) % 6];
    key[2 * i] = edges[i % 6];
    key[2 * i + 1] = edges[i / 6];
  }
  // Random123's known-answer case: counter and key all ones.
  const size_t kat_at = 36;
  for (int k = 0; k < 4; ++k) ctr[4 * kat_at + k] = ~0u;
  key[2 * kat_at] = key[2 * kat_at + 1] = ~0u;
  const DeviceBuffer<uint32_t> d_ctr = upload(ctr, "counters");
  const DeviceBuffer<uint32_t> d_key = upload(key, "keys");
  DeviceBuffer<uint32_t> d_out(4 * n, "draws");
  PAGEDW2V_CUDA_TRY(cudaMemset(d_out.data(), 0xA5, d_out.bytes()));  // poison
  curand_philox_probe(d_ctr.data(), d_key.data(), n, d_out.data());
  const std::vector<uint32_t> out = download(d_out);
  size_t mismatches = 0;
  for (size_t i = 0; i < n; ++i) {
    const Philox4 c{{ctr[4 * i], ctr[4 * i + 1], ctr[4 * i + 2], ctr[4 * i + 3]}};
    const Philox4 want = philox4x32(c, key[2 * i], key[2 * i + 1]);
    for (int k = 0; k < 4; ++k) mismatches += out[4 * i + k] != want.v[k];
  }
  EXPECT_EQ(mismatches, 0u) << "of " << 4 * n << " words";
  // The known-answer vector of Random123 (philox4x32_10, counter and key all ones bits), from
  // both.
  const Philox4 kat = philox4x32(Philox4{{~0u, ~0u, ~0u, ~0u}}, ~0u, ~0u);
  EXPECT_EQ(kat.v[0], 0x408f276du);
  EXPECT_EQ(kat.v[1], 0x41c83b0eu);
  EXPECT_EQ(kat.v[2], 0xa20bc7c6u);
  EXPECT_EQ(kat.v[3], 0x6d5451fdu);
  for (int k = 0; k < 4; ++k) EXPECT_EQ(out[4 * kat_at + k], kat.v[k]);
}

// Every kind of draw the kernels make (device_draw: philox.hpp's counter and key, cuRAND's
// generator) is the CPU's draw() for the same (seed, position, epoch, kind, sub).
TEST(CudaSampler, DeviceDrawsAreTheCpuDraws) {
  PAGEDW2V_REQUIRE_GPU();
  const uint64_t seed = testing_util::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const size_t n = 1 << 16;
  std::vector<DrawProbe> draws(n);
  for (size_t i = 0; i < n; ++i) {
    DrawProbe& d = draws[i];
    d.seed = i % 3 == 0 ? rng() % 100 : rng();
    d.kind = static_cast<uint32_t>(i % 4);  // kSubsample, kNegative, kInit, kPool
    // Corpus positions past 2^32, and pool positions (super-batch << 32 | entry).
    d.pos = d.kind == static_cast<uint32_t>(DrawKind::kPool)
                ? pool_position(rng() % (uint64_t{1} << 32), static_cast<uint32_t>(rng()))
                : rng() % (uint64_t{1} << 40);
    d.epoch = static_cast<uint32_t>(rng() % 64);
    d.sub =
        d.kind == static_cast<uint32_t>(DrawKind::kNegative)
            ? static_cast<uint32_t>((rng() % 2001) << 8 | rng() % 256)
            : (d.kind == static_cast<uint32_t>(DrawKind::kInit) ? static_cast<uint32_t>(rng() % 256)
                                                                : 0u);
  }
  const DeviceBuffer<DrawProbe> d_draws = upload(draws, "draws");
  DeviceBuffer<uint32_t> d_out(4 * n, "bits");
  PAGEDW2V_CUDA_TRY(cudaMemset(d_out.data(), 0xA5, d_out.bytes()));  // poison
  device_draw_probe(d_draws.data(), n, d_out.data());
  const std::vector<uint32_t> out = download(d_out);
  size_t mismatches = 0;
  for (size_t i = 0; i < n; ++i) {
    const DrawProbe& d = draws[i];
    const Philox4 want = draw(d.seed, d.pos, d.epoch, static_cast<DrawKind>(d.kind), d.sub);
    for (int k = 0; k < 4; ++k) mismatches += out[4 * i + k] != want.v[k];
  }
  EXPECT_EQ(mismatches, 0u) << "of " << 4 * n << " words";
}

}  // namespace
}  // namespace pagedw2v
