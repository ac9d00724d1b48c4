#!/usr/bin/env python3
"""Checks that the exported files of a pagedw2v run directory hold the same words and numbers.

    check_exports.py RUN_DIR

Loads vectors.npy + vocab.tsv with numpy, embeddings.h5 with h5py, vectors.bin and vectors.txt
with gensim, and compares each with the first one found (and context_vectors.npy with
/context_vectors). Prints one line per format. Exit status: 0 when all agree, 1 when any file
disagrees or cannot be read, 2 when there is nothing to compare.

Binary formats must match bit for bit. The text format may differ by one unit in the last place:
gensim parses it through Python's float (double) before rounding to float32.
"""
import argparse
import os
import sys

import numpy as np


def read_vocab_tsv(path):
    words, counts = [], []
    with open(path, 'rb') as f:
        for line in f:
            line = line.rstrip(b'\n').rstrip(b'\r')
            if not line:
                continue
            word, tab, count = line.rpartition(b'\t')
            if not tab:
                raise ValueError('%s: expected word<TAB>count, got %r' % (path, line))
            words.append(word.decode('utf-8'))
            counts.append(int(count))
    return words, np.array(counts, dtype=np.int64)


def load_npy(run_dir):
    vectors = np.load(os.path.join(run_dir, 'vectors.npy'))
    words, counts = read_vocab_tsv(os.path.join(run_dir, 'vocab.tsv'))
    context = None
    context_path = os.path.join(run_dir, 'context_vectors.npy')
    if os.path.exists(context_path):
        context = np.load(context_path)
    return words, vectors, counts, context


def load_h5(run_dir):
    import h5py

    def text(x):
        return x.decode('utf-8') if isinstance(x, bytes) else str(x)

    with h5py.File(os.path.join(run_dir, 'embeddings.h5'), 'r') as f:
        vectors = f['vectors'][()]
        words = [text(w) for w in f['vocab/words'][()]]
        counts = f['vocab/counts'][()].astype(np.int64) if 'vocab/counts' in f else None
        context = f['context_vectors'][()] if 'context_vectors' in f else None
    return words, vectors, counts, context


def load_gensim(run_dir, name, binary):
    from gensim.models import KeyedVectors

    kv = KeyedVectors.load_word2vec_format(os.path.join(run_dir, name), binary=binary)
    return list(kv.index_to_key), kv.vectors, None, None


FORMATS = [
    # (name, files that must exist, loader, module it needs, tolerance in float32 ulps)
    ('npy', ['vectors.npy', 'vocab.tsv'], load_npy, 'numpy', 0),
    ('h5', ['embeddings.h5'], load_h5, 'h5py', 0),
    ('bin', ['vectors.bin'], lambda d: load_gensim(d, 'vectors.bin', True), 'gensim', 0),
    ('txt', ['vectors.txt'], lambda d: load_gensim(d, 'vectors.txt', False), 'gensim', 1),
]


def ulp_distance(a, b):
    """Largest distance between a and b in float32 units in the last place (NaN-aware)."""
    a = np.ascontiguousarray(a, dtype=np.float32).view(np.int32).astype(np.int64)
    b = np.ascontiguousarray(b, dtype=np.float32).view(np.int32).astype(np.int64)
    # Map the sign-magnitude bit patterns onto a line where adjacent floats are adjacent integers.
    a = np.where(a < 0, -(a & 0x7FFFFFFF), a)
    b = np.where(b < 0, -(b & 0x7FFFFFFF), b)
    return int(np.abs(a - b).max()) if a.size else 0


def compare(name, ref_name, ref, got, tolerance):
    """Returns the problems found between two loaded formats (an empty list when they agree)."""
    problems = []
    ref_words, ref_vectors, ref_counts, _ = ref
    words, vectors, counts, _ = got
    if vectors.dtype != np.float32:
        problems.append('dtype %s, expected float32' % vectors.dtype)
    if vectors.shape != ref_vectors.shape:
        return problems + ['shape %s, %s has %s' % (vectors.shape, ref_name, ref_vectors.shape)]
    if words != ref_words:
        first = next(i for i, (a, b) in enumerate(zip(words, ref_words)) if a != b) \
            if len(words) == len(ref_words) else min(len(words), len(ref_words))
        problems.append('words differ from %s from row %d' % (ref_name, first))
    if counts is not None and ref_counts is not None and not np.array_equal(counts, ref_counts):
        problems.append('counts differ from %s' % ref_name)
    distance = ulp_distance(vectors, ref_vectors)
    if distance > tolerance:
        differing = int(np.count_nonzero(vectors.astype(np.float32) != ref_vectors.astype(np.float32)))
        problems.append('%d values differ from %s (up to %d ulp, allowed %d)' %
                        (differing, ref_name, distance, tolerance))
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('run_dir', help='directory written by pagedw2v (vocab.tsv, vectors.npy, ...)')
    args = parser.parse_args()
    if not os.path.isdir(args.run_dir):
        print('check_exports: %s is not a directory' % args.run_dir, file=sys.stderr)
        return 2

    reference = None
    reference_name = None
    failed = False
    contexts = []
    for name, files, loader, module, tolerance in FORMATS:
        if not all(os.path.exists(os.path.join(args.run_dir, f)) for f in files):
            print('%-4s absent' % name)
            continue
        try:
            __import__(module)
        except ImportError:
            print('%-4s skipped (python module %s is not installed)' % (name, module))
            continue
        try:
            loaded = loader(args.run_dir)
        except Exception as e:  # any reader's failure is a bad file
            print('%-4s FAILED to load: %s' % (name, e))
            failed = True
            continue
        shape = '%d x %d' % loaded[1].shape if loaded[1].ndim == 2 else str(loaded[1].shape)
        if loaded[3] is not None:
            contexts.append((name, loaded[3]))
        if reference is None:
            reference, reference_name = loaded, name
            print('%-4s ok   %s, %d words (reference)' % (name, shape, len(loaded[0])))
            continue
        problems = compare(name, reference_name, reference, loaded, tolerance)
        if problems:
            failed = True
            print('%-4s MISMATCH %s' % (name, '; '.join(problems)))
        else:
            print('%-4s ok   %s, same words and numbers as %s' % (name, shape, reference_name))

    if len(contexts) == 2:
        (a_name, a), (b_name, b) = contexts
        same = a.shape == b.shape and ulp_distance(a, b) == 0
        failed = failed or not same
        print('context %s context vectors of %s and %s' % ('ok  ' if same else 'MISMATCH', a_name,
                                                              b_name))

    if reference is None:
        print('check_exports: no readable export in %s' % args.run_dir, file=sys.stderr)
        return 2
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
