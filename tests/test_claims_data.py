"""subjects/claims.toml: every claim quotes its seed exactly and names a real subject, variant and metric."""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REPO, catalogue_registry

from proofbench.claim import load_claims

SEEDS = Path(__file__).resolve().parent.parent.parent / "shared" / "seeds"


def test_claims_file_parses_and_covers_every_area():
    claims = load_claims(REPO / "subjects" / "claims.toml")
    assert len(claims) >= 40
    assert {c.subject.split(".")[0] for c in claims} == {"loading", "tokenization", "training", "inference",
                                                         "quantization", "pipelines"}


def test_every_claim_names_a_registered_subject_variant_and_metric():
    registry = catalogue_registry()
    for claim in load_claims(REPO / "subjects" / "claims.toml"):
        subject = registry.get(claim.subject)
        assert claim.variant in [v.name for v in subject.variants], claim.id
        metrics = {"time", "items", "peak_memory", subject.equivalence.metric.name}
        metrics |= {m.metric.name for m in subject.measures}
        assert claim.metric in metrics, claim.id
        assert claim.id.startswith(claim.subject + "/"), claim.id


@pytest.mark.skipif(not SEEDS.is_dir(), reason=f"seed documents not found at {SEEDS}")
def test_every_quote_is_copied_exactly_from_its_seed_document():
    for claim in load_claims(REPO / "subjects" / "claims.toml"):
        seed = SEEDS / claim.source
        assert seed.is_file(), f"{claim.id}: no seed {claim.source}"
        assert claim.quote in seed.read_text(encoding="utf-8"), claim.id
