"""Synthetic protein records: a deterministic stand-in for a UniProt FASTA download.

The loading subjects need protein sequences that look like the real thing (residue mix,
length spread) without fetching a data set at run time. `generate_proteins(n)` draws them
from a fixed seed: residues from the UniProtKB/Swiss-Prot background composition, lengths
from a lognormal with mean about 350 residues, clipped to 30..1000.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from proofbench.errors import DeclarationError

# The 20 standard amino acids, in the one-letter order most tools print them.
AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"
# Background residue frequencies (percent) of UniProtKB/Swiss-Prot; normalised below
# (they sum to 99.89 because the rare letters B, Z, U, O, X are left out).
UNIPROT_FREQUENCIES = {
    "A": 8.25, "C": 1.37, "D": 5.45, "E": 6.75, "F": 3.86, "G": 7.07, "H": 2.27,
    "I": 5.96, "K": 5.84, "L": 9.66, "M": 2.42, "N": 4.06, "P": 4.70, "Q": 3.93,
    "R": 5.53, "S": 6.56, "T": 5.34, "V": 6.87, "W": 1.08, "Y": 2.92,
}
SEED = 745
MIN_LENGTH = 30
MAX_LENGTH = 1000
MEAN_LENGTH = 350.0
# Spread of log-length; with the clip at 1000 the drawn mean lands near 348.
LENGTH_SIGMA = 0.5


@dataclass(frozen=True)
class ProteinRecord:
    """One protein: its accession-like `id` ("P000001"), a short `description`, and
    its `sequence` of one-letter amino-acid codes."""

    id: str
    description: str
    sequence: str


def record_id(index: int) -> str:
    """The id of the record at 1-based `index`: "P" and six digits ("P000001")."""
    return f"P{index:06d}"


def draw_lengths(n: int, seed: int = SEED) -> np.ndarray:
    """`n` sequence lengths: lognormal with mean ~350, rounded and clipped to 30..1000."""
    rng = np.random.default_rng([seed, 0])
    mu = math.log(MEAN_LENGTH) - LENGTH_SIGMA**2 / 2  # lognormal mean = exp(mu + sigma^2/2)
    lengths = np.rint(rng.lognormal(mu, LENGTH_SIGMA, size=n))
    return np.clip(lengths, MIN_LENGTH, MAX_LENGTH).astype(np.int64)


_TABLE_SIZE = 1 << 16


def _residue_table() -> np.ndarray:
    # Letters laid out by their frequency over 65,536 slots, so one uniform integer draw per
    # residue picks a letter (within 1/65,536 of the target frequency; far faster than
    # inverting the distribution for every one of millions of residues).
    letters = np.frombuffer(AMINO_ACIDS.encode("ascii"), dtype=np.uint8)
    weights = np.array([UNIPROT_FREQUENCIES[a] for a in AMINO_ACIDS])
    cdf = np.cumsum(weights) / weights.sum()
    quantiles = (np.arange(_TABLE_SIZE) + 0.5) / _TABLE_SIZE
    return letters[np.minimum(cdf.searchsorted(quantiles, side="right"), len(letters) - 1)]


def generate_proteins(n: int, seed: int = SEED) -> list[ProteinRecord]:
    """`n` synthetic protein records, identical for the same `n` and `seed`.

    Residues are drawn independently from `UNIPROT_FREQUENCIES`; ids run P000001,
    P000002, ... so that their sorted order is the order they were generated in. The first
    k records of `generate_proteins(n)` are `generate_proteins(k)`: sizes share a prefix.
    """
    if n < 0 or n > 999_999:
        raise DeclarationError(f"generate_proteins: n must be in 0..999999 (six-digit ids), got {n}")
    lengths = draw_lengths(n, seed)
    rng = np.random.default_rng([seed, 1])
    residues = _residue_table()[rng.integers(0, _TABLE_SIZE, size=int(lengths.sum()))]
    text = residues.tobytes().decode("ascii")
    records = []
    start = 0
    for index, length in enumerate(lengths.tolist(), start=1):
        records.append(ProteinRecord(
            id=record_id(index),
            description=f"synthetic protein {index} length={length}",
            sequence=text[start:start + length],
        ))
        start += length
    return records
