"""Training the clause adapter: its data is clean and split, and a short run on a few triplets
learns to rank a rewording above a hard negative it could not before."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from bench.clause_training import (
    ALL_DATA,
    REWORDED_EXTRA_PATH,
    REWORDED_TRIPLETS_PATH,
    Recipe,
    Triplet,
    load_triplets,
    save,
    train,
)
from bench.semantic_sets import (
    load_additions,
    load_blind,
    load_edits,
    load_fresh,
    load_holdout,
    load_near_blind,
    load_nearby,
    load_pairs,
    load_probed,
    load_spellings,
    load_symbols,
    load_templated,
)
from cache.clause_adapter import adapter_deltas, merge, trained_on
from cache.embedder_base import default_model_path
from cache.embedder_store import file_sha256


def _words(text: str) -> str:
    return " " + " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split()) + " "


def _overlap(a: str, b: str) -> float:
    x, y = set(_words(a).split()), set(_words(b).split())
    return len(x & y) / len(x | y)


def test_triplets_are_many_split_and_share_no_sentence_with_an_evaluation_set() -> None:
    """Hundreds to thousands of triplets per file (the shipped adapter's and the extra ones),
    one in ten held out, no anchor repeated across files, and none of their sentences inside
    any prompt of an evaluation set, up to case and punctuation (a slot inside a template
    counts), so the quality figures stay held out."""
    files = ALL_DATA
    anchors = []
    for path in files:
        train_rows, holdout = load_triplets(path), load_triplets(path, split="holdout")
        assert len(train_rows) >= 600 and 0.05 <= len(holdout) / len(train_rows) <= 0.15
        anchors += [t.anchor.lower() for t in train_rows + holdout]
    assert len(set(anchors)) == len(anchors)
    evaluated = "\n".join(
        _words(text)
        for pairs in (
            load_pairs(),
            load_templated(),
            load_holdout(),
            load_fresh(),
            load_blind(),
            load_additions(),
            load_edits(),
            load_spellings(),
            load_symbols(),
            load_nearby(),
            load_near_blind(),
            load_probed(),
        )
        for p in pairs
        for text in (p.a, p.b)
    )
    rows = [
        json.loads(line) for path in files for line in path.read_text(encoding="utf-8").splitlines()
    ]
    sentences = {r[k] for r in rows for k in ("anchor", "positive", "negative")}
    assert [s for s in sentences if _words(s) in evaluated] == []


def test_reworded_triplets_take_away_the_word_overlap_cue() -> None:
    """In the reworded files a light edit is the same request and a heavy rewording can be a
    different one, so shared words do not tell which is which: their different request
    shares more words with the request in a minority of triplets (in the first file, nearly
    all), and never where the same request is a light edit."""
    for path in (REWORDED_TRIPLETS_PATH, REWORDED_EXTRA_PATH):
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        assert {r["kind"] for r in rows} == {"small_positive", "reworded_negative"}

        def closer(r: dict[str, str]) -> bool:
            return _overlap(r["anchor"], r["negative"]) > _overlap(r["anchor"], r["positive"])

        light = [r for r in rows if r["kind"] == "small_positive"]
        both = [r for r in rows if r["kind"] == "reworded_negative"]
        assert 0.4 <= len(light) / len(rows) <= 0.6 and not any(closer(r) for r in light)
        assert 0.25 <= sum(closer(r) for r in both) / len(both) <= 0.6


def _similarities(
    weights_dir: Path, deltas: dict[str, np.ndarray], triplet: Triplet
) -> tuple[float, float]:
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(weights_dir))
    model = AutoModel.from_pretrained(str(weights_dir)).eval()
    state = {k: v.numpy() for k, v in model.state_dict().items()}
    model.load_state_dict({k: torch.from_numpy(v) for k, v in merge(state, deltas).items()})
    texts = [triplet.anchor, triplet.positive, triplet.negative]
    with torch.no_grad():
        batch = tokenizer(texts, padding=True, return_tensors="pt")
        tokens = model(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).float()
        pooled = torch.nn.functional.normalize((tokens * mask).sum(1) / mask.sum(1), dim=-1)
    return float(pooled[0] @ pooled[1]), float(pooled[0] @ pooled[2])


def test_a_short_run_learns_to_rank_rewordings_first(tmp_path: Path) -> None:
    """Eight triplets the plain model ranks wrong (the hard negative closer than the rewording)
    are ranked right after ten steps; the saved adapter reloads with one update per linear
    layer of the encoder."""
    model_dir = default_model_path()
    chosen = [
        Triplet("Do you sell gift cards?", "Can I buy a gift card from your store?",
                "Can I pay with a gift card?"),
        Triplet("How do I export my contacts to a CSV file?",
                "What's the way to save my address book as a CSV?",
                "How do I import my contacts from a CSV file?"),
        Triplet("Who owes whom after Ann paid the dinner for Ben?",
                "Ann covered Ben's dinner: which of them owes the other?",
                "Who owes whom after Ben paid the dinner for Ann?"),
        Triplet("What is the maximum weight this ladder can hold?",
                "How much load is this ladder rated for?",
                "What is the maximum height this ladder can reach?"),
    ]  # fmt: skip
    arrays = train(chosen * 2, model_dir, Recipe(epochs=10, batch=8, learning_rate=5e-3))
    path = tmp_path / "adapter.npz"
    save(arrays, path, model_dir)
    deltas = adapter_deltas(path)
    assert len(deltas) == 36
    assert trained_on(path) == file_sha256(model_dir / "model.safetensors")
    before = [_similarities(model_dir, {}, t) for t in chosen]
    after = [_similarities(model_dir, deltas, t) for t in chosen]
    assert sum(pos > neg for pos, neg in before) < len(chosen)
    assert all(pos > neg for pos, neg in after)
