// make_walks: writes a corpus of random walks over a random power-law graph, the shape of the
// node- and item-embedding corpora (DeepWalk, node2vec with p = q = 1) that word2vec trains on
// beside text. Every node starts `walks` walks, so every node is a word of the corpus.
//
// The graph is a configuration model: node degrees drawn from a discrete power law
// P(k) ~ k^-exponent for k >= min_degree (capped at max_degree), the stubs shuffled and paired.
// Self-loops and repeated edges are kept; they change nothing that matters here. Node i is written
// as the decimal number i, one walk per line. The output depends only on the arguments.
//
// With --edges FILE it also writes the graph the walks run on, one edge `u v` per line in the order
// the stubs were paired (self-loops and repeated edges included), so that an embedding of the walks
// can be scored against the graph (scripts/walks_quality.py). Writing it draws no random numbers:
// the walks are the same with or without it.
//
// Build and run (scripts/make_walks.sh does both):
//   g++ -O2 -std=c++17 -o make_walks scripts/make_walks.cpp
//   ./make_walks --nodes 2000000 --walks 1 --length 40 --exponent 2.5 --seed 1 > walks.txt
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

// splitmix64: a small, fast, well-mixed generator; enough for a synthetic corpus.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return (next() >> 11) * 0x1.0p-53; }
  uint64_t below(uint64_t n) { return static_cast<uint64_t>(uniform() * static_cast<double>(n)); }
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "make_walks: %s\nusage: make_walks [--nodes N] [--walks W] [--length L] "
               "[--exponent A] [--min-degree K] [--max-degree K] [--seed S] [--output FILE] "
               "[--edges FILE]\n",
               why);
  std::exit(2);
}

uint64_t parse_u64(const char* s, const char* flag) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (end == s || *end != '\0') usage((std::string("bad value for ") + flag).c_str());
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t nodes = 2000000, walks = 1, length = 40, min_degree = 2, max_degree = 0, seed = 1;
  double exponent = 2.5;
  const char* output = nullptr;
  const char* edges = nullptr;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (i + 1 >= argc) usage((std::string("missing value for ") + a).c_str());
    const char* v = argv[++i];
    if (!std::strcmp(a, "--nodes"))
      nodes = parse_u64(v, a);
    else if (!std::strcmp(a, "--walks"))
      walks = parse_u64(v, a);
    else if (!std::strcmp(a, "--length"))
      length = parse_u64(v, a);
    else if (!std::strcmp(a, "--min-degree"))
      min_degree = parse_u64(v, a);
    else if (!std::strcmp(a, "--max-degree"))
      max_degree = parse_u64(v, a);
    else if (!std::strcmp(a, "--seed"))
      seed = parse_u64(v, a);
    else if (!std::strcmp(a, "--exponent"))
      exponent = std::atof(v);
    else if (!std::strcmp(a, "--output"))
      output = v;
    else if (!std::strcmp(a, "--edges"))
      edges = v;
    else
      usage((std::string("unknown flag ") + a).c_str());
  }
  if (nodes < 2 || nodes > 0xFFFFFFFFull) usage("--nodes must be in [2, 2^32)");
  if (length < 1 || walks < 1 || min_degree < 1)
    usage("--walks, --length, --min-degree must be >= 1");
  if (!(exponent > 1.0)) usage("--exponent must be > 1");
  if (max_degree == 0)
    max_degree = static_cast<uint64_t>(std::sqrt(static_cast<double>(nodes))) * 4;
  if (max_degree < min_degree) usage("--max-degree below --min-degree");

  Rng rng{seed};
  // Degrees by inverse transform of the continuous Pareto law, floored.
  std::vector<uint32_t> degree(nodes);
  uint64_t stubs = 0;
  for (uint64_t i = 0; i < nodes; ++i) {
    const double u = 1.0 - rng.uniform();  // (0, 1]
    double k = static_cast<double>(min_degree) * std::pow(u, -1.0 / (exponent - 1.0));
    uint64_t d = static_cast<uint64_t>(k);
    if (d > max_degree) d = max_degree;
    degree[i] = static_cast<uint32_t>(d);
    stubs += d;
  }
  if (stubs % 2) {
    ++degree[0];
    ++stubs;
  }
  std::vector<uint32_t> stub(stubs);
  for (uint64_t i = 0, p = 0; i < nodes; ++i)
    for (uint32_t j = 0; j < degree[i]; ++j) stub[p++] = static_cast<uint32_t>(i);
  for (uint64_t i = stubs - 1; i > 0; --i) std::swap(stub[i], stub[rng.below(i + 1)]);
  // CSR adjacency: stubs 2e and 2e+1 form edge e, both directions.
  std::vector<uint64_t> offset(nodes + 1, 0);
  for (uint64_t i = 0; i < nodes; ++i) offset[i + 1] = offset[i] + degree[i];
  std::vector<uint64_t> fill(offset.begin(), offset.end() - 1);
  std::vector<uint32_t> adj(stubs);
  for (uint64_t e = 0; e + 1 < stubs; e += 2) {
    adj[fill[stub[e]]++] = stub[e + 1];
    adj[fill[stub[e + 1]]++] = stub[e];
  }

  FILE* out = output ? std::fopen(output, "wb") : stdout;
  if (!out) usage((std::string("cannot open ") + output).c_str());
  std::vector<char> buf;
  buf.reserve(1 << 20);
  char num[32];
  if (edges) {
    FILE* ef = std::fopen(edges, "wb");
    if (!ef) usage((std::string("cannot open ") + edges).c_str());
    for (uint64_t e = 0; e + 1 < stubs; e += 2) {
      const int n = std::snprintf(num, sizeof num, "%u %u\n", stub[e], stub[e + 1]);
      buf.insert(buf.end(), num, num + n);
      if (buf.size() > (1u << 20) - 512) {
        if (std::fwrite(buf.data(), 1, buf.size(), ef) != buf.size()) usage("write failed");
        buf.clear();
      }
    }
    if (std::fwrite(buf.data(), 1, buf.size(), ef) != buf.size() || std::fclose(ef) != 0)
      usage("write failed");
    buf.clear();
  }
  std::vector<uint32_t>().swap(stub);

  for (uint64_t w = 0; w < walks; ++w) {
    for (uint64_t start = 0; start < nodes; ++start) {
      uint64_t v = start;
      for (uint64_t s = 0; s < length; ++s) {
        const int n = std::snprintf(num, sizeof num, s ? " %llu" : "%llu",
                                    static_cast<unsigned long long>(v));
        buf.insert(buf.end(), num, num + n);
        const uint64_t d = offset[v + 1] - offset[v];
        v = adj[offset[v] + rng.below(d)];
      }
      buf.push_back('\n');
      if (buf.size() > (1u << 20) - 512) {
        if (std::fwrite(buf.data(), 1, buf.size(), out) != buf.size()) usage("write failed");
        buf.clear();
      }
    }
  }
  if (std::fwrite(buf.data(), 1, buf.size(), out) != buf.size() || std::fflush(out) != 0)
    usage("write failed");
  if (output && std::fclose(out) != 0) usage("write failed");
  return 0;
}
