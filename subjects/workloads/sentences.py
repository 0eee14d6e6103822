"""Synthetic English sentences: a deterministic stand-in for a text corpus.

The English tokenization subject needs sentences with the traits a real corpus gives a
WordPiece tokenizer (capitals, punctuation, numbers, rare words that split into pieces,
varied lengths) without fetching a data set. `generate_sentences(n)` builds them from a
small grammar and a fixed seed: the same `n` and seed always give the same sentences.
"""
from __future__ import annotations

import numpy as np

from proofbench.errors import DeclarationError

SEED = 6
SUBJECTS = ("The researcher", "A small team", "Our pipeline", "The new tokenizer", "Every benchmark",
            "The protein model", "The lab's night shift", "This experiment", "The nightly job", "A reviewer")
VERBS = ("measured", "reported", "compared", "reproduced", "questioned", "summarised", "doubled",
         "re-ran", "annotated", "published")
OBJECTS = ("the throughput", "its memory footprint", "the attention kernels", "a 3x speedup",
           "the embedding cache", "twelve sequence alignments", "the learning-rate schedule",
           "the quantized checkpoint", "their validation loss", "the longest batch")
ADVERBIALS = ("on Tuesday", "after 2,048 steps", "without warm-up", "in bfloat16", "twice",
              "despite the noisy neighbours", "under heavy load", "for the third time",
              "with persistent workers", "on a laptop")
# Rare and compound words: WordPiece splits these into several sub-word pieces.
RARE = ("hyperparameterisation", "photosynthetically", "unreproducibility", "electroencephalography",
        "thermostability", "deduplication", "overparameterised", "immunoprecipitation")
CLAUSES = ("because the cache was cold", "although nobody expected it", "which surprised everyone",
           "so the claim needs a second look", "and the numbers held up", "but only on one machine")
ENDINGS = (".", ".", ".", "!", "?", "...")


def _sentence(rng: np.random.Generator) -> str:
    # subject verb object [adverbial] [rare-word remark] [clause] ending
    words = [rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(OBJECTS)]
    if rng.random() < 0.7:
        words.append(rng.choice(ADVERBIALS))
    if rng.random() < 0.4:
        words.append(f"(see the {rng.choice(RARE)} notes, item {int(rng.integers(1, 500))})")
    if rng.random() < 0.5:
        words[-1] += ","
        words.append(rng.choice(CLAUSES))
    return " ".join(str(w) for w in words) + str(rng.choice(ENDINGS))


def generate_sentences(n: int, seed: int = SEED) -> list[str]:
    """`n` English sentences of one to three sentences each, identical for the same `n` and `seed`."""
    if n < 0:
        raise DeclarationError(f"generate_sentences: n must be >= 0, got {n}")
    rng = np.random.default_rng(seed)
    texts = []
    for _ in range(n):
        parts = int(rng.integers(1, 4))
        texts.append(" ".join(_sentence(rng) for _ in range(parts)))
    return texts
