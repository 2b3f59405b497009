"""The labelled prompt pairs of the semantic-cache benchmark.

- tests/data/semantic_pairs.jsonl: short free-form questions (paraphrases and hard negatives:
  negation, numbers, entities, antonyms, language, topic), splits "dev" and "holdout".
- tests/data/semantic_templated.jsonl: prompts built from long shared templates whose short
  slots differ (support, RAG question and context, translation text and language, code, SQL,
  classification, extraction, summarization, multi-turn, email), splits "train" and "test".
  Each row names a template of tests/data/semantic_templates.json and its slot values; a
  value is text, or a document of that file (some paragraphs, in some order, with edits).
- tests/data/semantic_templated_holdout.jsonl: a third, independent set (split "holdout") in
  the same format over its own templates and documents (tests/data/semantic_holdout_templates.json),
  written before the verifier was tuned and not tuned on: the same families plus customer
  support with order records, a formal rewrite and JSON-schema extraction, some templates longer
  than the model's 256 word pieces before the slot.
- tests/data/semantic_templated_fresh.jsonl: a fourth set (split "fresh") over its own
  templates (tests/data/semantic_fresh_templates.json), written by someone who had not seen the
  verifier or the other sets, after the verifier was tuned: 13 families, new domains, heavier
  rewording. Reported, never tuned on, its pairs not looked at one by one.
- tests/data/semantic_templated_blind.jsonl: a fifth set (splits "dev" and "holdout", 323
  pairs over 16 templates of its own and 7 reworded versions, tests/data/
  semantic_blind_templates.json), written by someone who had seen neither the verifier nor the
  other sets: 12 families, heavy paraphrases, near-identical negatives, reworded templates.
  Its dev half was looked at once (its false hits and misses); its holdout half is reported.
- tests/data/semantic_probed.jsonl: short pairs asked of a running gateway by someone probing
  it for wrong answers who had seen neither the verifier nor the other sets: other languages
  and scripts, questions turned round, opposites, word forms, output constraints, code,
  quantities, templated prompts; the probe's kind as the family, splits "dev" (tuned on) and
  "holdout" (reported) by a hash of the probe's pair id.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
PAIRS_PATH = DATA / "semantic_pairs.jsonl"
TEMPLATED_PATH = DATA / "semantic_templated.jsonl"
TEMPLATES_PATH = DATA / "semantic_templates.json"
HOLDOUT_PATH = DATA / "semantic_templated_holdout.jsonl"
HOLDOUT_TEMPLATES_PATH = DATA / "semantic_holdout_templates.json"
FRESH_PATH = DATA / "semantic_templated_fresh.jsonl"
ADDITIONS_PATH = DATA / "semantic_additions.jsonl"
EDITS_PATH = DATA / "semantic_edits.jsonl"
SPELLINGS_PATH = DATA / "semantic_spellings.jsonl"
SYMBOLS_PATH = DATA / "semantic_symbols.jsonl"
NEARBY_PATH = DATA / "semantic_nearby.jsonl"
NEAR_BLIND_PATH = DATA / "semantic_near_blind.jsonl"
FRESH_TEMPLATES_PATH = DATA / "semantic_fresh_templates.json"
BLIND_PATH = DATA / "semantic_templated_blind.jsonl"
BLIND_TEMPLATES_PATH = DATA / "semantic_blind_templates.json"
PROBED_PATH = DATA / "semantic_probed.jsonl"
TRAIN_SPLITS = frozenset({"dev", "train"})


@dataclass(frozen=True, slots=True)
class Pair:
    """Two prompts and whether one's cached answer may serve the other."""

    a: str
    b: str
    same: bool
    kind: str
    split: str
    family: str = "short"
    siblings: tuple[str, ...] = ()
    """Other stored prompts the lookup found beside `b` (the verifier may read the candidate's
    slot from them)."""

    @property
    def half(self) -> str:
        """The half this pair belongs to: train (tuned on) or test (reported)."""
        return "train" if self.split in TRAIN_SPLITS else "test"


def load_additions(split: str = "all") -> list[Pair]:
    """Near-identical short pairs, one a few words longer (dev: looked at; holdout: not)."""
    return load_pairs(ADDITIONS_PATH, split)


def load_edits(split: str = "all") -> list[Pair]:
    """Near-identical short pairs over twelve kinds of small edit, the edit as the family (dev:
    looked at; holdout: not)."""
    return load_pairs(EDITS_PATH, split)


def load_spellings(split: str = "all") -> list[Pair]:
    """Short pairs that write one quantity or name two ways ("half an hour" / "30 minutes",
    "Node.js" / "NodeJS") beside hard negatives, the kind as the family (dev: tuned on;
    holdout: written before the rules it measures, measured once)."""
    return load_pairs(SPELLINGS_PATH, split)


def load_symbols(split: str = "all") -> list[Pair]:
    """Short pairs that differ in an operator, a symbol or a letter's case ("7 + 5" / "7 - 5",
    "ls -a" / "ls -A") beside paraphrases that write them otherwise, the kind as the family
    (dev: tuned on; holdout: written before the rules it measures, measured once)."""
    return load_pairs(SYMBOLS_PATH, split)


def load_nearby(split: str = "all") -> list[Pair]:
    """Near-identical short pairs over eight kinds of answer-changing edit and five kinds of
    rewording, the kind as the family, written by someone who had seen neither the verifier
    nor the other sets (dev: tuned on; holdout: measured, not looked at)."""
    return load_pairs(NEARBY_PATH, split)


def load_near_blind(split: str = "all") -> list[Pair]:
    """A second blind near-identical set: eight kinds of answer-changing edit and eight kinds
    of rewording (abbreviations, typed shorthand, question frames, heavy rewordings), the kind
    as the family, written by someone who had seen neither the verifier nor the other sets,
    less 15 pairs holding a sentence the clause judge was trained on (dev: tuned on; holdout:
    measured, not looked at)."""
    return load_pairs(NEAR_BLIND_PATH, split)


def load_probed(split: str = "all") -> list[Pair]:
    """The pairs a black-box probe asked of a running gateway, the probe's kind as the family
    (dev: tuned on; holdout: reported)."""
    return load_pairs(PROBED_PATH, split)


def load_pairs(path: Path = PAIRS_PATH, split: str = "all") -> list[Pair]:
    """The short pairs of one split ("dev", "holdout") or all of them."""
    pairs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            split_of = row.get("split", "dev")
            family = row.get("edit", "short")
            pair = Pair(row["a"], row["b"], row["same"], row["kind"], split_of, family)
            if split in ("all", pair.split):
                pairs.append(pair)
    return pairs


def _document(value: dict[str, Any], documents: dict[str, list[str]]) -> str:
    paragraphs = documents[value["doc"]]
    order = value.get("paragraphs", range(len(paragraphs)))
    text = "\n\n".join(paragraphs[i] for i in order)
    for old, new in value.get("replace", ()):
        if text.count(old) != 1:
            raise ValueError(f"edit {old!r} does not match {value['doc']!r} exactly once")
        text = text.replace(old, new)
    return text


def render(template: str, slots: dict[str, Any], documents: dict[str, list[str]]) -> str:
    """`template` with each {{name}} replaced by its slot value."""
    text = template
    for name, value in slots.items():
        marker = "{{" + name + "}}"
        if marker not in text:
            raise ValueError(f"no slot {name!r} in template")
        filled = value if isinstance(value, str) else _document(value, documents)
        text = text.replace(marker, filled)
    if "{{" in text:
        raise ValueError("a slot was left unfilled")
    return text


def load_templated(
    path: Path = TEMPLATED_PATH, templates: Path = TEMPLATES_PATH, half: str = "all"
) -> list[Pair]:
    """The templated pairs of one half ("train", "test") or all of them, rendered."""
    meta = json.loads(templates.read_text(encoding="utf-8"))
    pairs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        a = render(meta["templates"][row["template"]], row["a"], meta["documents"])
        b_template = meta["templates"][row.get("template_b", row["template"])]
        b = render(b_template, row["b"], meta["documents"])
        pair = Pair(a, b, row["same"], row["kind"], row["split"], row["family"])
        if half in ("all", pair.half):
            pairs.append(pair)
    return pairs


def load_reworded(
    path: Path = TEMPLATED_PATH, templates: Path = TEMPLATES_PATH, *, siblings: bool = True
) -> list[Pair]:
    """Pairs across two versions of a template: the query in the reworded version, the stored
    prompt in the first, with the slots of a row of the first version in the templated set (so
    a pair keeps that row's label, kind and half). With `siblings`, each pair carries another stored
    prompt of the first version, from a row of the same half, as a lookup would find beside
    the candidate.

    Built from the rows that pair a template with its reworded version ("template_b"), which
    in the set itself only ever keep the slot: a new version of a prompt with another slot
    value is what an app's traffic looks like right after its prompt was edited.
    """
    meta = json.loads(templates.read_text(encoding="utf-8"))
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    versions = {(r["template"], r["template_b"]) for r in rows if "template_b" in r}
    pairs = []
    for first, reworded in sorted(versions):
        slots = [r for r in rows if r["template"] == first and "template_b" not in r]
        for i, row in enumerate(slots):
            others = [r for r in slots[i + 1 :] + slots[:i] if r["split"] == row["split"]]
            sibling = (render(meta["templates"][first], others[0]["a"], meta["documents"]),)
            pairs.append(
                Pair(
                    render(meta["templates"][reworded], row["b"], meta["documents"]),
                    render(meta["templates"][first], row["a"], meta["documents"]),
                    row["same"],
                    row["kind"],
                    row["split"],
                    row["family"],
                    sibling if siblings else (),
                )
            )
    return pairs


def load_blind(path: Path = BLIND_PATH, templates: Path = BLIND_TEMPLATES_PATH) -> list[Pair]:
    """The blind templated set (dev: looked at once; holdout: not), rendered."""
    return load_templated(path, templates)


def load_holdout(path: Path = HOLDOUT_PATH, templates: Path = HOLDOUT_TEMPLATES_PATH) -> list[Pair]:
    """The independent templated holdout set (never tuned on), rendered."""
    return load_templated(path, templates)


def load_fresh(path: Path = FRESH_PATH, templates: Path = FRESH_TEMPLATES_PATH) -> list[Pair]:
    """The fresh templated set (written after tuning, by someone else), rendered."""
    return load_templated(path, templates)
