"""Runs MongoDB's e-divisive in its own environment for the evaluation (see tools.anchors).

Reads a JSON list of {"values": [...], "seed": int} on stdin; writes a JSON list of change-point
index lists. Imports nothing of proofbench: it runs under .venv-edivisive's Python.
"""
from __future__ import annotations

import json
import sys

import numpy as np
from signal_processing_algorithms.energy_statistics.energy_statistics import e_divisive


def main() -> None:
    """One e-divisive run per history, at the package's defaults."""
    out = []
    for job in json.load(sys.stdin):
        np.random.seed(job["seed"])  # the permutation test draws from numpy's global generator
        out.append(sorted(int(i) for i in e_divisive(job["values"])))
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
