"""subjects/claims.toml: every claim quotes its seed exactly and names a real subject and variant."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.claim import CLAIMS_FILE, load_claims
from harness.registry import load

SEEDS = Path(__file__).resolve().parent.parent.parent / "shared" / "seeds"


def _normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def test_claims_file_parses_and_is_not_empty():
    assert len(load_claims()) >= 10


def test_every_claim_names_a_registered_subject_and_variant():
    registry = load()
    for claim in load_claims():
        subject = registry.get(claim.subject)
        assert claim.variant in [v.name for v in subject.variants], f"{CLAIMS_FILE}: {claim.id}"


@pytest.mark.skipif(not SEEDS.is_dir(), reason=f"seed documents not found at {SEEDS}")
def test_every_quote_appears_in_its_seed_document():
    for claim in load_claims():
        seed = SEEDS / claim.source
        assert seed.is_file(), f"{claim.id}: no seed {claim.source}"
        assert _normalise(claim.quote) in _normalise(seed.read_text(errors="replace")), claim.id
