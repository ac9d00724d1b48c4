#!/usr/bin/env python3
"""Scores node vectors trained on random walks against the graph the walks ran on.

The walks of scripts/make_walks.cpp have no analogy or similarity test; the graph is the truth
instead (`make_walks --edges FILE` writes it). Two scores, both on the graph's simple form (self-loops
dropped, repeated edges counted once, only nodes that have a vector):

  recall@k  for a seeded sample of nodes of degree >= 2, the share of each node's k nearest
            vectors by cosine (itself excluded) that are its graph neighbours, over min(k, degree),
            averaged over the sample;
  auc       link-prediction AUC by cosine: a seeded sample of the graph's edges against as many
            random node pairs that are not edges (ties count one half).

Vectors: word2vec's text or binary format (`pagedw2v train|export --format txt|bin`, word2vec C's
`-binary 0|1`), told apart by their first record unless --format says. Words that are not a node
number of the edge file (word2vec C's `</s>`) are left out. The nearest-neighbour search uses torch
(on the GPU when there is one) when it imports, numpy otherwise; both go through the vectors in
chunks, so memory stays near the size of the vectors themselves.

    scripts/walks_quality.py --vectors run/vectors.bin --edges edges.txt [--k 10] [--nodes 2000]
        [--pairs 100000] [--seed 1] [--random]

Prints one line on stdout: `walks_quality recall@10=X auc=Y nodes=N` (N: the nodes sampled for
recall); what it read goes to stderr. --random scores random Gaussian vectors of the same shape
instead (the floor: recall near 0, AUC near 0.5). Exit status 2 for bad arguments, 1 for a file
that cannot be read or parsed.
"""
import argparse
import mmap
import sys
import time

try:
    import numpy as np
except ImportError:
    sys.exit("walks_quality: numpy is required (pip install numpy, or apt-get install python3-numpy)")


class Failure(Exception):
    pass


def log(msg):
    print("walks_quality: " + msg, file=sys.stderr, flush=True)


def node_number(word, n_nodes):
    """The node that `word` names, or -1."""
    if not word.isdigit():
        return -1
    v = int(word)
    return v if v < n_nodes else -1


def read_header(data, path):
    nl = data.find(b"\n")
    if nl < 0:
        raise Failure(f"{path}: no header line")
    parts = data[:nl].split()
    if len(parts) != 2 or not parts[0].isdigit() or not parts[1].isdigit():
        raise Failure(f"{path}: header is not 'count dim'")
    count, dim = int(parts[0]), int(parts[1])
    if count < 1 or dim < 1:
        raise Failure(f"{path}: header says {count} words of {dim} dimensions")
    return count, dim, nl + 1


def looks_like_text(data, start, dim):
    nl = data.find(b"\n", start)
    line = data[start : nl if nl >= 0 else len(data)]
    try:
        parts = line.decode("ascii").split()
        [float(x) for x in parts[1:]]
    except (UnicodeDecodeError, ValueError):
        return False
    return len(parts) == dim + 1


def read_binary(data, start, count, dim, n_nodes, path):
    nodes = np.full(count, -1, dtype=np.int64)
    vecs = np.empty((count, dim), dtype=np.float32)
    width = 4 * dim
    pos, end = start, len(data)
    for i in range(count):
        while pos < end and data[pos] in (10, 13, 32):  # the newline after the previous row
            pos += 1
        sp = data.find(b" ", pos)
        if sp < 0 or sp + 1 + width > end:
            raise Failure(f"{path}: ends inside word {i + 1} of {count}")
        nodes[i] = node_number(data[pos:sp], n_nodes)
        vecs[i] = np.frombuffer(data, dtype=np.float32, count=dim, offset=sp + 1)
        pos = sp + 1 + width
    return nodes, vecs


def read_text(data, start, count, dim, n_nodes, path):
    nodes = np.full(count, -1, dtype=np.int64)
    vecs = np.empty((count, dim), dtype=np.float32)
    lines = data[start:].split(b"\n")
    i, chunk, words = 0, [], []

    def flush():
        nonlocal i
        try:
            flat = np.array(b" ".join(chunk).split(), dtype=np.float32)
        except ValueError:
            raise Failure(f"{path}: a row in lines {i + 2}..{i + 1 + len(chunk)} is not numbers")
        if flat.size != len(chunk) * dim:
            raise Failure(f"{path}: a row in lines {i + 2}..{i + 1 + len(chunk)} has not {dim} values")
        vecs[i : i + len(chunk)] = flat.reshape(len(chunk), dim)
        for j, w in enumerate(words):
            nodes[i + j] = node_number(w, n_nodes)
        i += len(chunk)
        chunk.clear()
        words.clear()

    for line in lines:
        if not line.strip():
            continue
        if i + len(chunk) >= count:
            raise Failure(f"{path}: more rows than the header's {count}")
        w, _, rest = line.strip().partition(b" ")
        words.append(w)
        chunk.append(rest)
        if len(chunk) == 65536:
            flush()
    if chunk:
        flush()
    if i != count:
        raise Failure(f"{path}: {i} rows, the header says {count}")
    return nodes, vecs


def read_vectors(path, fmt, n_nodes):
    try:
        with open(path, "rb") as f:
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as e:
        raise Failure(f"cannot read {path}: {e}")
    count, dim, start = read_header(data, path)
    if fmt == "auto":
        fmt = "txt" if looks_like_text(data, start, dim) else "bin"
    reader = read_text if fmt == "txt" else read_binary
    nodes, vecs = reader(data, start, count, dim, n_nodes, path)
    keep = nodes >= 0
    nodes, vecs = nodes[keep], vecs[keep]
    if nodes.size == 0:
        raise Failure(f"{path}: no word is a node of the edge file")
    if np.unique(nodes).size != nodes.size:
        raise Failure(f"{path}: a node has two vectors")
    return fmt, count, nodes, vecs


def read_edges(path):
    try:
        flat = np.fromfile(path, dtype=np.int64, sep=" ")
    except (OSError, ValueError) as e:
        raise Failure(f"cannot read {path}: {e}")
    if flat.size == 0 or flat.size % 2 or flat.min() < 0:
        raise Failure(f"{path}: not a list of 'u v' lines of node numbers")
    return flat.reshape(-1, 2)


def simple_edges(edges, has_vec):
    """Undirected edges once each (u < v), no self-loops, both ends with a vector."""
    u, v = edges[:, 0], edges[:, 1]
    keep = (u != v) & has_vec[u] & has_vec[v]
    lo, hi = np.minimum(u, v)[keep], np.maximum(u, v)[keep]
    n = has_vec.size
    keys = np.unique(lo * n + hi)
    return keys // n, keys % n, keys


def neighbours(lo, hi, n):
    """CSR of the simple undirected graph."""
    src = np.concatenate([lo, hi])
    dst = np.concatenate([hi, lo])
    order = np.argsort(src, kind="stable")
    offset = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=offset[1:])
    return offset, dst[order]


def normalised(vecs):
    norm = np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs / np.maximum(norm, 1e-12)


def top_k_torch(unit, query_rows, k, torch):
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    q = torch.from_numpy(unit[query_rows]).to(dev)
    nq, rows = q.shape[0], unit.shape[0]
    chunk = max(1024, (1 << (28 if dev.type == "cuda" else 24)) // nq)  # scores: 1 GiB, 64 MiB
    qr = torch.from_numpy(query_rows).to(dev)
    best_v = torch.full((nq, k), -float("inf"), device=dev)
    best_i = torch.zeros((nq, k), dtype=torch.int64, device=dev)
    for c0 in range(0, rows, chunk):
        c1 = min(rows, c0 + chunk)
        s = q @ torch.from_numpy(unit[c0:c1]).to(dev).T
        mine = (qr >= c0) & (qr < c1)
        s[mine.nonzero().squeeze(1), qr[mine] - c0] = -float("inf")
        kk = min(k, c1 - c0)
        v, i = torch.topk(s, kk, dim=1)
        allv = torch.cat([best_v, v], dim=1)
        alli = torch.cat([best_i, i + c0], dim=1)
        best_v, pick = torch.topk(allv, k, dim=1)
        best_i = torch.gather(alli, 1, pick)
    return best_i.cpu().numpy(), str(dev)


def top_k_numpy(unit, query_rows, k):
    q = unit[query_rows]
    nq, rows = q.shape[0], unit.shape[0]
    chunk = max(1024, (1 << 24) // nq)  # scores: 64 MiB
    best_v = np.full((nq, k), -np.inf, dtype=np.float32)
    best_i = np.zeros((nq, k), dtype=np.int64)
    ar = np.arange(nq)
    for c0 in range(0, rows, chunk):
        c1 = min(rows, c0 + chunk)
        s = q @ unit[c0:c1].T
        mine = (query_rows >= c0) & (query_rows < c1)
        s[ar[mine], query_rows[mine] - c0] = -np.inf
        kk = min(k, c1 - c0)
        i = np.argpartition(-s, kk - 1, axis=1)[:, :kk] if kk < c1 - c0 else np.tile(np.arange(kk), (nq, 1))
        v = np.take_along_axis(s, i, axis=1)
        allv = np.concatenate([best_v, v], axis=1)
        alli = np.concatenate([best_i, i + c0], axis=1)
        pick = np.argpartition(-allv, k - 1, axis=1)[:, :k]
        best_v = np.take_along_axis(allv, pick, axis=1)
        best_i = np.take_along_axis(alli, pick, axis=1)
    return best_i, "numpy"


def auc_of(pos, neg):
    """Mann-Whitney AUC, ties counted one half."""
    s = np.concatenate([pos, neg])
    order = np.argsort(s, kind="mergesort")
    sorted_s = s[order]
    _, first, counts = np.unique(sorted_s, return_index=True, return_counts=True)
    avg_rank = first + (counts + 1) / 2.0  # 1-based mean rank of each group of ties
    ranks = np.empty(s.size)
    ranks[order] = np.repeat(avg_rank, counts)
    p, n = pos.size, neg.size
    return (ranks[:p].sum() - p * (p + 1) / 2.0) / (p * n)


def main():
    ap = argparse.ArgumentParser(
        prog="walks_quality.py",
        description="Link recovery of node vectors trained on random walks (recall@k and AUC).",
    )
    ap.add_argument("--vectors", required=True, help="word2vec text or binary vectors file")
    ap.add_argument("--edges", required=True, help="edge list, 'u v' a line (make_walks --edges)")
    ap.add_argument("--format", choices=["auto", "txt", "bin"], default="auto")
    ap.add_argument("--k", type=int, default=10, help="neighbours per node (default 10)")
    ap.add_argument("--nodes", type=int, default=2000, help="nodes sampled for recall (default 2000)")
    ap.add_argument("--pairs", type=int, default=100000, help="edges, and as many non-edges, for AUC")
    ap.add_argument("--seed", type=int, default=1, help="seed of both samples (default 1)")
    ap.add_argument("--random", action="store_true", help="score random vectors of the same shape")
    ap.add_argument("--no-torch", action="store_true", help="search with numpy even if torch imports")
    a = ap.parse_args()
    if a.k < 1 or a.nodes < 1 or a.pairs < 1:
        ap.error("--k, --nodes and --pairs must be >= 1")

    t0 = time.time()
    edges = read_edges(a.edges)
    n_nodes = int(edges.max()) + 1
    fmt, count, nodes, vecs = read_vectors(a.vectors, a.format, n_nodes)
    if a.random:
        vecs = np.random.default_rng(a.seed + 1000003).standard_normal(vecs.shape).astype(np.float32)
    if not np.isfinite(vecs).all():
        raise Failure(f"{a.vectors}: holds NaN or Inf")
    log(f"{a.vectors}: {fmt}, {count} words of {vecs.shape[1]}, {nodes.size} of them nodes of "
        f"{n_nodes}; {edges.shape[0]} edges read in {time.time() - t0:.1f} s")

    has_vec = np.zeros(n_nodes, dtype=bool)
    has_vec[nodes] = True
    row_of = np.full(n_nodes, -1, dtype=np.int64)
    row_of[nodes] = np.arange(nodes.size)
    lo, hi, keys = simple_edges(edges, has_vec)
    if keys.size == 0:
        raise Failure("no edge joins two nodes that have vectors")
    offset, adj = neighbours(lo, hi, n_nodes)
    degree = np.diff(offset)
    unit = normalised(vecs)
    rng = np.random.default_rng(a.seed)

    # recall@k over a sample of nodes chosen by node number, the same for every vectors file that
    # covers the same nodes.
    candidates = np.flatnonzero(has_vec & (degree >= 2))
    if candidates.size == 0:
        raise Failure("no node of degree >= 2 has a vector")
    sample = np.sort(rng.choice(candidates, size=min(a.nodes, candidates.size), replace=False))
    k = min(a.k, nodes.size - 1)
    t1 = time.time()
    try:
        if a.no_torch:
            raise ImportError
        import torch

        top, how = top_k_torch(unit, row_of[sample], k, torch)
    except ImportError:
        top, how = top_k_numpy(unit, row_of[sample], k)
    top_nodes = nodes[top]
    recall = np.empty(sample.size)
    for j, v in enumerate(sample):
        nb = adj[offset[v] : offset[v + 1]]
        recall[j] = np.isin(top_nodes[j], nb).sum() / min(k, nb.size)
    log(f"top-{k} of {sample.size} nodes among {nodes.size} ({how}) in {time.time() - t1:.1f} s")

    # AUC: sampled edges against as many random pairs of distinct nodes that are not edges.
    p = min(a.pairs, keys.size)
    pick = rng.choice(keys.size, size=p, replace=False)
    pu, pv = lo[pick], hi[pick]
    nu = np.empty(0, dtype=np.int64)
    nv = np.empty(0, dtype=np.int64)
    for _ in range(100):
        if nu.size >= p:
            break
        u = nodes[rng.integers(0, nodes.size, size=2 * p)]
        v = nodes[rng.integers(0, nodes.size, size=2 * p)]
        ok = u != v
        u, v = u[ok], v[ok]
        ok = ~np.isin(np.minimum(u, v) * n_nodes + np.maximum(u, v), keys)
        nu, nv = np.concatenate([nu, u[ok]]), np.concatenate([nv, v[ok]])
    if nu.size < p:
        raise Failure("the graph is too dense to draw non-edges")
    nu, nv = nu[:p], nv[:p]

    def cosines(x, y):
        out = np.empty(x.size, dtype=np.float64)
        for c0 in range(0, x.size, 1 << 16):
            c1 = min(x.size, c0 + (1 << 16))
            out[c0:c1] = np.einsum("ij,ij->i", unit[row_of[x[c0:c1]]], unit[row_of[y[c0:c1]]])
        return out

    auc = auc_of(cosines(pu, pv), cosines(nu, nv))
    log(f"{keys.size} simple edges, mean degree {2 * keys.size / nodes.size:.2f}; "
        f"AUC over {p} edges and {p} non-edges; {time.time() - t0:.1f} s in all")
    print(f"walks_quality recall@{a.k}={recall.mean():.4f} auc={auc:.4f} nodes={sample.size}", flush=True)


if __name__ == "__main__":
    try:
        main()
    except Failure as e:
        print(f"walks_quality: {e}", file=sys.stderr)
        sys.exit(1)
    except MemoryError:
        print("walks_quality: out of memory", file=sys.stderr)
        sys.exit(1)
