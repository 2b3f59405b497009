"""Whether a cached answer would have served the request as the fresh one did: the
judgement the error bound learns from (`cache.error_bound`).

Two answers agree when they are the same text up to whitespace and case. A judge by meaning
would let the bound learn from sampled answers too, but a wrong "agree" loosens the bound:
`python -m bench.answer_agreement` measured the verifier's fact checks plus an embedding
threshold (all-MiniLM-L6-v2) on labelled answer pairs, and at every threshold 5-15% of
answers that differ in a fact (another name, a code bug) were judged to agree. So the judge
stays textual: with sampling, correct matches count as wrong and the bound serves less, which
is the safe side.
"""

from __future__ import annotations

from collections.abc import Sequence


def same_text(served: Sequence[str], fresh: Sequence[str]) -> bool:
    """The same answers up to whitespace and case, choice by choice."""
    return len(served) == len(fresh) and all(
        " ".join(a.split()).casefold() == " ".join(b.split()).casefold()
        for a, b in zip(served, fresh, strict=True)
    )
