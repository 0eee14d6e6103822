"""How long `detect` takes over many long histories: the report's load (1000 commits x 600 series).

Run: `.venv/bin/python -m tools.detect_timing [--series 300] [--commits 1000]`. A benchmark,
not a test: it prints the wall and CPU time of `detect` alone over synthetic histories (every
noise model of `tools.history_synth`, 0-3 steps each), in this one process.
"""
from __future__ import annotations

import argparse
import time

from proofbench.analysis.detect import detect
from tools import history_synth as synth


def main(argv: list[str] | None = None) -> None:
    """Generate the histories, then time `detect` over all of them."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--series", type=int, default=300)
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args(argv)
    per_model = -(-args.series // len(synth.NOISE_MODELS))
    histories = synth.generate(per_model, seed=args.seed, lengths=(args.commits, args.commits))
    histories = histories[:args.series]
    wall, cpu = time.perf_counter(), time.process_time()
    found = sum(len(detect(h.values)) for h in histories)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    points = sum(map(len, histories))
    print(f"detect over {len(histories)} series, {points} points: {wall:.2f} s wall, {cpu:.2f} s CPU "
          f"({1e6 * cpu / points:.1f} us CPU a point), {found} change points")


if __name__ == "__main__":
    main()
