"""The seed catalogue's on-disk fixtures: files of generated proteins, one per size, in a cache directory.

Subjects that read real files declare these as their `build_cache`; asv builds them once per run.
A fixture is written under a temporary name and renamed, so a killed build never leaves half a file.
"""
from __future__ import annotations

import os
from pathlib import Path

from proofbench.declare import Size
from proofbench.subjects.workloads.fasta import write_fasta
from proofbench.subjects.workloads.lmdb_store import write_store
from proofbench.subjects.workloads.proteins import generate_proteins


def store_path(cache_dir: Path, n: int) -> Path:
    """Where the LMDB store of `n` synthetic proteins lives in the cache directory."""
    return Path(cache_dir) / f"proteins-{n}.lmdb"


def fasta_path(cache_dir: Path, n: int) -> Path:
    """Where the FASTA file of `n` synthetic proteins lives in the cache directory."""
    return Path(cache_dir) / f"proteins-{n}.fasta"


def build_protein_stores(cache_dir: Path, sizes: tuple[Size, ...]) -> None:
    """`build_cache` of subjects reading a store of `size["n"]` synthetic proteins per size."""
    for size in sizes:
        path = store_path(cache_dir, size["n"])
        if not path.exists():
            write_store(path, generate_proteins(size["n"]))


def build_fasta_files(cache_dir: Path, sizes: tuple[Size, ...]) -> None:
    """`build_cache` of subjects reading a FASTA file of `size["n"]` synthetic proteins per size."""
    for size in sizes:
        path = fasta_path(cache_dir, size["n"])
        if not path.exists():
            partial = path.with_name(f".{path.name}.partial-{os.getpid()}")
            write_fasta(generate_proteins(size["n"]), partial)
            os.replace(partial, path)  # never leave a half-written fixture behind
