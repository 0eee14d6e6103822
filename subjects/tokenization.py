"""Tokenization subjects: slow vs fast tokenizers, and padding every batch to 700 vs to its longest.

- `tokenization.batch_tokenize`: protein sequences through transformers' pure-Python
  `EsmTokenizer`, one sequence per call, vs a `tokenizers`-backed fast ESM tokenizer given
  the sequences in batches (seed 000: "~500 seq/s -> ~2,000 seq/s").
- `tokenization.batch_tokenize_text`: the same comparison on English text with MiniLM's own
  WordPiece tokenizer (slow `BertTokenizerLegacy` vs fast `BertTokenizer`).
- `tokenization.padding_strategy`: training batches padded to max_length 700 vs, as seed 000
  does, pre-filtered to sequences that fit 512 tokens and padded to the longest in each
  batch (and, a third variant, batched by length as `group_by_length` does).

The tokenizers are built offline (see `subjects.tokenizer`); inputs come from the
deterministic generators `subjects.proteins` and `subjects.sentences`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from transformers import BatchEncoding

from proofbench import Context, Equivalence, Measure, Metric, Size, Subject, Variant, Workload, register
from proofbench.subjects.workloads import tokenizer
from proofbench.subjects.workloads.proteins import generate_proteins
from proofbench.subjects.workloads.sentences import generate_sentences

MISMATCHED = Metric("mismatched_sequences", "sequences", higher_is_better=False)
TOKENS = Metric("tokens", "tokens", higher_is_better=True)
BATCH = 1000  # seed 000 tokenizes in batches of 1,000-2,000 sequences
LONG_LENGTH = 700  # seed 000's original max_length
SHORT_LENGTH = 512  # seed 000's optimized max_length


@dataclass
class Texts:
    """The texts to tokenize and the slow and fast tokenizers that share a vocabulary."""

    texts: list[str]
    slow: Any
    fast: Any
    batch: int = BATCH


def _one_by_one(work: Texts) -> list[list[int]]:
    return tokenizer.ids_one_by_one(work.slow, work.texts)


def _batched(work: Texts) -> list[list[int]]:
    return tokenizer.ids_batched(work.fast, work.texts, work.batch)


def mismatched(base: list[list[int]], other: list[list[int]]) -> float:
    """Sequences whose ids differ (a missing or extra sequence counts as differing)."""
    differing = sum(1 for a, b in zip(base, other) if a != b)
    return float(differing + abs(len(base) - len(other)))


def _token_count(work: Texts, out: list[list[int]]) -> float:
    return float(sum(len(ids) for ids in out))


def _text_bytes(work: Texts, out: list[list[int]]) -> float:
    # The UTF-8 text every variant reads; the ids it writes are Python ints, not a buffer.
    return float(sum(len(text.encode("utf-8")) for text in work.texts))


def _prepare_proteins(ctx: Context) -> Workload:
    texts = [p.sequence for p in generate_proteins(ctx.size["n"])]
    return Workload(inputs=Texts(texts, tokenizer.esm_slow(), tokenizer.esm_fast()), items=len(texts))


def _prepare_sentences(ctx: Context) -> Workload:
    texts = generate_sentences(ctx.size["n"])
    return Workload(inputs=Texts(texts, tokenizer.minilm_slow(), tokenizer.minilm_fast()), items=len(texts))


_SAME_IDS = Equivalence(MISMATCHED, 0.0, mismatched, "identical token ids for every sequence")

register(Subject(
    area="tokenization", name="batch_tokenize", item="sequence",
    description="protein sequences to ESM-2 token ids: slow EsmTokenizer one by one vs fast tokenizer in batches",
    prepare=_prepare_proteins,
    variants=(Variant("baseline", _one_by_one, "transformers EsmTokenizer (pure Python), one call per sequence"),
              Variant("optimized", _batched, f"tokenizers-backed fast tokenizer, batches of {BATCH}")),
    equivalence=_SAME_IDS,
    sizes=(Size.of("tiny", n=16), Size.of("small", n=256), Size.of("large", n=4096)),
    measures=(Measure(TOKENS, _token_count, rate=True),),
    bound="data", bytes_moved=_text_bytes,
))

register(Subject(
    area="tokenization", name="batch_tokenize_text", item="sentence",
    description="English text to MiniLM WordPiece ids: slow BertTokenizer one by one vs fast tokenizer in batches",
    prepare=_prepare_sentences,
    variants=(Variant("baseline", _one_by_one, "BertTokenizerLegacy (pure Python), one call per text"),
              Variant("optimized", _batched, f"BertTokenizer (Rust tokenizers), batches of {BATCH}")),
    equivalence=_SAME_IDS,
    sizes=(Size.of("tiny", n=16), Size.of("small", n=400), Size.of("large", n=8000)),
    measures=(Measure(TOKENS, _token_count, rate=True),),
    bound="data", bytes_moved=_text_bytes,
))


# -- padding_strategy --------------------------------------------------------------------

@dataclass
class PaddingWork:
    """Protein sequences cut into training batches of `batch`, and the fast ESM tokenizer."""

    sequences: list[str]
    fast: Any
    batch: int
    max_length: int = LONG_LENGTH
    short_length: int = SHORT_LENGTH


@dataclass(frozen=True)
class Padded:
    """Padded batches: for each, the indices of its sequences and its tensors."""

    indices: list[list[int]]
    encodings: list[BatchEncoding]


def _pad(work: PaddingWork, order: list[int], **padding: Any) -> Padded:
    batches = [order[i:i + work.batch] for i in range(0, len(order), work.batch)]
    encodings = [work.fast([work.sequences[i] for i in batch], truncation=True, return_tensors="pt", **padding)
                 for batch in batches]
    return Padded(batches, encodings)


def _fits(work: PaddingWork) -> list[int]:
    # Pre-filter: sequences whose residues plus <cls> and <eos> fit in short_length tokens.
    return tokenizer.fitting(work.sequences, work.short_length)


def _pad_max_length(work: PaddingWork) -> Padded:
    return _pad(work, list(range(len(work.sequences))), padding="max_length", max_length=work.max_length)


def _pad_longest(work: PaddingWork) -> Padded:
    return _pad(work, _fits(work), padding="longest", max_length=work.short_length)


def _pad_longest_grouped(work: PaddingWork) -> Padded:
    order = sorted(_fits(work), key=lambda i: len(work.sequences[i]))
    return _pad(work, order, padding="longest", max_length=work.short_length)


def unpadded_ids(padded: Padded) -> dict[int, list[int]]:
    """Each sequence's token ids with the padding removed, by sequence index."""
    ids = {}
    for indices, encoding in zip(padded.indices, padded.encodings):
        for row, index in enumerate(indices):
            keep = encoding["attention_mask"][row].bool()
            ids[index] = encoding["input_ids"][row][keep].tolist()
    return ids


def _padding_mismatches(base: Padded, other: Padded) -> float:
    # Each sequence the variant keeps must have the baseline's ids; each sequence the
    # baseline encodes in <= SHORT_LENGTH tokens must be kept.
    expected = unpadded_ids(base)
    got = unpadded_ids(other)
    wrong = sum(1 for i, ids in got.items() if expected.get(i) != ids)
    dropped = sum(1 for i, ids in expected.items() if len(ids) <= SHORT_LENGTH and i not in got)
    return float(wrong + dropped)


def _prepare_padding(ctx: Context) -> Workload:
    work = PaddingWork([p.sequence for p in generate_proteins(ctx.size["n"])], tokenizer.esm_fast(),
                       ctx.size["batch"])
    return Workload(inputs=work, items=len(work.sequences))


def _padded_tokens(work: PaddingWork, out: Padded) -> float:
    return float(sum(e["input_ids"].numel() for e in out.encodings))


def _tensor_bytes(work: PaddingWork, out: Padded) -> float:
    return float(sum(t.nbytes for e in out.encodings for t in e.values()))


def _padding_bytes(work: PaddingWork, out: Padded) -> float:
    # The sequences tokenized (ASCII residues) and the tensors written for them.
    read = sum(len(work.sequences[i]) for indices in out.indices for i in indices)
    return float(read + _tensor_bytes(work, out))


def _kept(work: PaddingWork, out: Padded) -> float:
    return float(sum(len(indices) for indices in out.indices))


register(Subject(
    area="tokenization", name="padding_strategy", item="sequence",
    description="protein training batches tokenized to tensors: padded to 700 vs filtered to 512 and padded to longest",
    prepare=_prepare_padding,
    variants=(Variant("baseline", _pad_max_length, "padding='max_length', max_length=700, truncation, file order"),
              Variant("optimized", _pad_longest,
                      "pre-filter to <= 512 tokens, padding='longest', max_length=512, file order"),
              Variant("length_grouped", _pad_longest_grouped,
                      "as optimized, batches formed from length-sorted sequences (group_by_length)")),
    equivalence=Equivalence(MISMATCHED, 0.0, _padding_mismatches,
                            "every sequence that fits 512 tokens is kept, with ids identical to the baseline's "
                            "once padding is removed; longer ones are dropped by design (see kept_sequences)"),
    sizes=(Size.of("tiny", n=32, batch=8), Size.of("small", n=512, batch=16), Size.of("large", n=8192, batch=16)),
    measures=(Measure(Metric("padded_tokens", "tokens", higher_is_better=False), _padded_tokens),
              Measure(Metric("tensor_bytes", "bytes", higher_is_better=False), _tensor_bytes),
              Measure(Metric("kept_sequences", "sequences", higher_is_better=True), _kept)),
    bound="data", bytes_moved=_padding_bytes,
    notes="The optimized variants do less work partly because they drop the sequences longer than 510 "
          "residues (about 16% of these proteins); kept_sequences shows it.",
))
