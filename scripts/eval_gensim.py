#!/usr/bin/env python3
"""Independent reference for `pagedw2v eval`: gensim's own analogy and word-pair evaluation.

usage: /usr/bin/python3 scripts/eval_gensim.py VECTORS.bin QUESTIONS WORDSIM [--restrict N] [--text]

Loads word2vec vectors with gensim (binary unless --text) and prints analogy accuracy
(KeyedVectors.evaluate_word_analogies, restrict_vocab=N, case_insensitive=True) per section and in
total, then Spearman and Pearson on the word pairs (KeyedVectors.evaluate_word_pairs, defaults).
`pagedw2v eval` must agree within 0.1 point of accuracy and 0.005 of Spearman.
"""
import argparse
import sys
import time

from gensim.models import KeyedVectors


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vectors", help="word2vec vectors (.bin; .txt with --text)")
    parser.add_argument("questions", help="analogy questions (questions-words.txt format)")
    parser.add_argument("wordsim", help="tab-separated word pairs with scores (WordSim-353)")
    parser.add_argument("--restrict", type=int, default=30000,
                        help="answer among the N most frequent words (default 30000)")
    parser.add_argument("--text", action="store_true", help="the vectors are word2vec text")
    args = parser.parse_args()

    kv = KeyedVectors.load_word2vec_format(args.vectors, binary=not args.text)
    print(f"vectors: {args.vectors} ({len(kv)} words, dim {kv.vector_size})")

    start = time.perf_counter()
    score, sections = kv.evaluate_word_analogies(args.questions, restrict_vocab=args.restrict,
                                                 case_insensitive=True)
    seconds = time.perf_counter() - start
    print(f"analogies: {args.questions} (3CosAdd over the {min(args.restrict, len(kv))} "
          f"most frequent words, case-insensitive)")
    for section in sections:
        correct, incorrect = len(section["correct"]), len(section["incorrect"])
        if correct + incorrect == 0:
            continue
        print(f"  {section['section']}: {100.0 * correct / (correct + incorrect):.2f}% "
              f"({correct}/{correct + incorrect})")
    print(f"  analogy accuracy: {100.0 * score:.2f}%  ({seconds:.1f} s)")

    pearson, spearman, oov_ratio = kv.evaluate_word_pairs(args.wordsim)
    print(f"similarity: {args.wordsim}")
    print(f"  Spearman {spearman[0]:.4f}  Pearson {pearson[0]:.4f}  "
          f"(out-of-vocabulary {oov_ratio:.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
