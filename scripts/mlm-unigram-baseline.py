#!/usr/bin/env python3
"""What a masked-language model that ignores the context scores: the unigram baseline of an evaluation corpus.

Reads two token caches that headroom wrote (data.task mlm: "<corpus>.<hash>.hrtok" beside the corpus or in
data.cache_dir) and the run's vocab.txt. Prints, over the evaluation corpus's tokens that masking can choose (all but
[PAD] [UNK] [CLS] [SEP] [MASK]), the top-1 accuracy of always guessing the training corpus's most frequent token and
the perplexity of its unigram distribution (add-one smoothed): the floor a run's masked_accuracy and perplexity are read
against. Standard library only.

Usage: scripts/mlm-unigram-baseline.py TRAIN.hrtok EVAL.hrtok VOCAB.txt
"""
import array
import collections
import math
import struct
import sys


def tokens(path):
    """The token ids of a cache (its header: train/data/token_cache.cpp)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"HRTOKCAC":
        sys.exit(f"{path}: not a headroom token cache")
    width, count = struct.unpack_from("<IQ", data, 12)
    offset = struct.unpack_from("<Q", data, 40)[0]
    ids = array.array("H" if width == 2 else "I")
    ids.frombytes(data[offset:offset + count * width])
    return ids


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    train, evaluation = tokens(sys.argv[1]), tokens(sys.argv[2])
    vocab = open(sys.argv[3], encoding="utf-8").read().split("\n")
    special = {i for i, t in enumerate(vocab) if t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")}
    V = len([t for t in vocab if t])
    count = collections.Counter(train)
    for s in special:
        count.pop(s, None)
    total = sum(count.values()) + V
    top, _ = count.most_common(1)[0]
    n = hits = 0
    nll = 0.0
    for t in evaluation:
        if t in special:
            continue
        n += 1
        hits += t == top
        nll -= math.log((count.get(t, 0) + 1) / total)
    print(f"evaluation tokens {n}; most frequent training token '{vocab[top]}'")
    print(f"unigram top-1 accuracy {100 * hits / n:.2f}%, unigram perplexity {math.exp(nll / n):.1f}")


if __name__ == "__main__":
    main()
