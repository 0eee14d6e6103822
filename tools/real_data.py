"""The detector on real histories: the Turing Change Point Dataset and django's asv results.

TCPD (`shared/data/tcpd`: one JSON a series, the annotators' change points in
annotations.json) is scored as its benchmark (TCPDBench, analysis/scripts/metrics.py)
defines it, rewritten here: F1 with a margin of 5 points, where precision counts a
prediction against the union of all annotators' points and recall averages over
annotators, index 0 added to every set; and the segmentation covering averaged over
annotators. Only univariate series are scored (the detector takes one value per commit).

django (`shared/data/django_series_conda-py3.10.json.xz`) has no truth: reported is how many
change points the detector reports per 100 commits, and in how many of the histories.
"""
from __future__ import annotations

import json
import lzma
import math
import os
from pathlib import Path
from typing import Callable, Sequence

MARGIN = 5


def shared_data() -> Path | None:
    """The other projects' data: $PROOFBENCH_SHARED_DATA where set, else ../shared/data beside
    the checkout (what CI has); None where that is not a directory."""
    named = os.environ.get("PROOFBENCH_SHARED_DATA")
    base = Path(named) if named else Path(__file__).resolve().parent.parent.parent / "shared" / "data"
    return base if base.is_dir() else None


def _matched(truth: set[int], found: set[int], margin: int) -> int:
    """Truth points with a prediction within `margin`, each prediction used once (closest first)."""
    left, hits = set(found), 0
    for tau in sorted(truth):
        near = sorted((abs(tau - x), x) for x in left if abs(tau - x) <= margin)
        if near:
            left.discard(near[0][1])
            hits += 1
    return hits


def f1(annotations: dict[str, list[int]], predictions: Sequence[int], margin: int = MARGIN) -> float:
    """TCPD's F1: precision against the union of the annotators, recall averaged over them."""
    sets = [set(a) | {0} for a in annotations.values()]
    found = set(predictions) | {0}
    precision = _matched(set().union(*sets), found, margin) / len(found)
    recall = sum(_matched(t, found, margin) / len(t) for t in sets) / len(sets)
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def _segments(points: Sequence[int], n: int) -> list[range]:
    edges = [0, *sorted(p for p in set(points) if 0 < p < n), n]
    return [range(a, b) for a, b in zip(edges, edges[1:])]


def cover(annotations: dict[str, list[int]], predictions: Sequence[int], n: int) -> float:
    """Segmentation covering of each annotator's segments by the predicted ones, averaged."""
    predicted = _segments(predictions, n)
    scores = []
    for points in annotations.values():
        total = 0.0
        for seg in _segments(points, n):
            best = max(_jaccard(seg, p) for p in predicted)
            total += len(seg) * best
        scores.append(total / n)
    return sum(scores) / len(scores)


def _jaccard(a: range, b: range) -> float:
    inter = max(0, min(a.stop, b.stop) - max(a.start, b.start))
    return inter / (len(a) + len(b) - inter)


def tcpd(detector: Callable[[list[float | None]], list[int]], root: Path) -> dict:
    """Mean F1 and cover of `detector` over TCPD's univariate series."""
    annotations = json.loads((root / "annotations.json").read_text())
    rows, skipped = [], []
    for path in sorted(root.glob("*.json")):
        if path.name == "annotations.json":
            continue
        data = json.loads(path.read_text())
        if data["n_dim"] != 1:
            skipped.append(data["name"])
            continue
        raw = data["series"][0]["raw"]
        values = [None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v) for v in raw]
        found = detector(values)
        truth = annotations[data["name"]]
        rows.append({"name": data["name"], "n": len(values), "found": found,
                     "f1": f1(truth, found), "cover": cover(truth, found, len(values))})
    return {"series": len(rows), "skipped_multivariate": skipped,
            "f1": sum(r["f1"] for r in rows) / len(rows), "cover": sum(r["cover"] for r in rows) / len(rows),
            "rows": rows}


def django(detector: Callable[[list[float | None]], list[int]], path: Path) -> dict:
    """Change points per 100 commits over django's histories."""
    data = json.loads(lzma.open(path).read())
    found = commits = with_any = 0
    for series in data["series"].values():
        values = series["values"]
        n = sum(v is not None for v in values)
        hits = detector(values)
        found, commits, with_any = found + len(hits), commits + n, with_any + bool(hits)
    return {"histories": len(data["series"]), "commits": commits, "change_points": found,
            "per_100_commits": 100 * found / commits if commits else math.nan, "histories_with_any": with_any}
