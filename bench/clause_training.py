"""Trains the clause judge's adapter (`cache/clause_adapter.npz`, see `cache.clause_adapter`).

A low-rank update (LoRA) of every linear layer in all-MiniLM-L6-v2's six encoder blocks, trained
on triplets of a request, the same request reworded, and a different request that shares its
words, written for this from scratch (none of their sentences is in an evaluation set). The
loss ranks, for each request, its rewording above the other requests' rewordings and every hard
negative in the batch, and the other way round. The base weights stay frozen, so the adapter is
small (about 0.7 MB in float16) and ships in the repo.

    python -m bench.clause_training [--data FILE ...] [--out FILE] [--epochs N] [--seed S]

The shipped adapter is trained on `SHIPPED_DATA` (the default `--data`),
`tests/data/clause_triplets.jsonl`, where the different request is a small edit of the request
and its rewording a large one (in 96% of them the different request shares more words with it).

Three more files are kept, under the same checks, but not trained on by the shipped adapter
(`ALL_DATA`; see the README for what adapters trained with them did):
- `clause_triplets_extra.jsonl`: 2,933 more triplets like the first file's;
- `clause_triplets_reworded.jsonl` (778, code and support) and
  `clause_triplets_reworded_extra.jsonl` (784, documents and everyday requests), which take
  the word-overlap cue away: half their triplets pair a light edit (the same request) with a
  heavily reworded different one, half reword both.

CPU training of the shipped adapter takes about 7 minutes on 2 cores (seeded: a retraining on
this machine reproduced an adapter bit for bit). After retraining, re-run
`python -m bench.semantic_quality`: `SLOT_SIMILARITY` is chosen for this adapter.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from cache.clause_adapter import ADAPTER_FILE, BASE_KEY, WEIGHTS_FILE
from cache.embedder_store import file_sha256

if TYPE_CHECKING:
    import torch

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
TRIPLETS_PATH = DATA / "clause_triplets.jsonl"
EXTRA_TRIPLETS_PATH = DATA / "clause_triplets_extra.jsonl"
REWORDED_TRIPLETS_PATH = DATA / "clause_triplets_reworded.jsonl"
REWORDED_EXTRA_PATH = DATA / "clause_triplets_reworded_extra.jsonl"
SHIPPED_DATA = (TRIPLETS_PATH,)
"""The files the shipped adapter was trained on."""
ALL_DATA = (TRIPLETS_PATH, EXTRA_TRIPLETS_PATH, REWORDED_TRIPLETS_PATH, REWORDED_EXTRA_PATH)
TARGETS = ("query", "key", "value", "attention.output.dense", "intermediate.dense", "output.dense")


@dataclass(frozen=True, slots=True)
class Triplet:
    """A request, the same request reworded, and a different request sharing its words."""

    anchor: str
    positive: str
    negative: str


@dataclass(frozen=True, slots=True)
class Recipe:
    epochs: int = 2
    rank: int = 8
    alpha: float = 16.0
    learning_rate: float = 5e-4
    batch: int = 32
    scale: float = 20.0
    seed: int = 0


def load_triplets(path: Path = TRIPLETS_PATH, split: str = "train") -> list[Triplet]:
    """The triplets of one split: "train" (trained on) or "holdout" (one in ten, reported)."""
    rows = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line)
    return [Triplet(r["anchor"], r["positive"], r["negative"]) for r in rows if r["split"] == split]


def _low_rank(base: Any, rank: int, alpha: float) -> Any:
    import torch

    class LowRank(torch.nn.Module):
        """`base(x) + x A^T B^T * scale`, with B starting at zero (the base model at step 0)."""

        def __init__(self) -> None:
            super().__init__()
            self.base = base
            self.scale = alpha / rank
            self.down = torch.nn.Parameter(
                torch.randn(rank, base.in_features) / base.in_features**0.5
            )
            self.up = torch.nn.Parameter(torch.zeros(base.out_features, rank))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            updated: torch.Tensor = self.base(x) + (x @ self.down.T @ self.up.T) * self.scale
            return updated

    return LowRank()


def attach(model: Any, rank: int, alpha: float) -> dict[str, Any]:
    """Replaces the encoder's target linear layers with low-rank-updated ones, by name."""
    import torch

    attached: dict[str, Any] = {}
    for parent_name, parent in list(model.named_modules()):
        for name, child in list(parent.named_children()):
            full = f"{parent_name}.{name}" if parent_name else name
            targeted = any(full.endswith(t) for t in TARGETS)
            if isinstance(child, torch.nn.Linear) and "encoder.layer." in full and targeted:
                attached[full] = _low_rank(child, rank, alpha)
                setattr(parent, name, attached[full])
    return attached


def _encode(model: Any, tokenizer: Any, texts: Sequence[str]) -> torch.Tensor:
    import torch

    batch = tokenizer(
        list(texts), padding=True, truncation=True, max_length=128, return_tensors="pt"
    )
    tokens = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    pooled = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(pooled, dim=-1)


def train(
    triplets: Sequence[Triplet], model_dir: Path, recipe: Recipe = Recipe()
) -> dict[str, np.ndarray]:
    """The adapter's arrays: `<layer>.a` (rank x in) and `<layer>.b` (out x rank, scale
    included), float32."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    random.seed(recipe.seed)
    torch.manual_seed(recipe.seed)
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModel.from_pretrained(str(model_dir))
    model.requires_grad_(False)
    layers = attach(model, recipe.rank, recipe.alpha)
    params = [p for layer in layers.values() for p in (layer.down, layer.up)]
    optimizer = torch.optim.AdamW(params, lr=recipe.learning_rate, weight_decay=0.01)
    steps = recipe.epochs * -(-len(triplets) // recipe.batch)
    warmup = max(1, steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / warmup) * max(0.0, 1 - s / steps)
    )
    order = list(triplets)
    model.train()
    for _ in range(recipe.epochs):
        random.shuffle(order)
        for start in range(0, len(order), recipe.batch):
            chunk = order[start : start + recipe.batch]
            anchors = _encode(model, tokenizer, [t.anchor for t in chunk])
            others = _encode(
                model, tokenizer, [t.positive for t in chunk] + [t.negative for t in chunk]
            )
            target = torch.arange(len(chunk))
            forward = torch.nn.functional.cross_entropy(recipe.scale * anchors @ others.T, target)
            positives = others[: len(chunk)]
            backward = torch.nn.functional.cross_entropy(
                recipe.scale * positives @ anchors.T, target
            )
            optimizer.zero_grad()
            torch.autograd.backward(forward + backward)
            optimizer.step()
            schedule.step()
    arrays: dict[str, np.ndarray] = {}
    with torch.no_grad():
        for name, layer in layers.items():
            arrays[f"{name}.a"] = layer.down.numpy().astype(np.float32)
            arrays[f"{name}.b"] = (layer.up * layer.scale).numpy().astype(np.float32)
    return arrays


def save(arrays: dict[str, np.ndarray], path: Path, model_dir: Path) -> None:
    """Writes the adapter in float16 (its updates are small next to the weights they change),
    with the SHA-256 of the weights it was trained on, so that it is never merged into others."""
    parts: dict[str, Any] = {k: v.astype(np.float16) for k, v in sorted(arrays.items())}
    parts[BASE_KEY] = np.array(file_sha256(model_dir / WEIGHTS_FILE))
    with path.open("wb") as f:
        np.savez(f, **parts)


def main(argv: Sequence[str] | None = None) -> int:
    from cache.embedder_base import default_model_path

    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--data", type=Path, nargs="+", default=list(SHIPPED_DATA))
    parser.add_argument("--out", type=Path, default=ADAPTER_FILE)
    parser.add_argument("--epochs", type=int, default=Recipe().epochs)
    parser.add_argument("--seed", type=int, default=Recipe().seed)
    args = parser.parse_args(argv)
    triplets = [t for path in args.data for t in load_triplets(path)]
    recipe = Recipe(epochs=args.epochs, seed=args.seed)
    save(train(triplets, default_model_path(), recipe), args.out, default_model_path())
    print(f"{args.out}: trained on {len(triplets)} triplets, {recipe}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
