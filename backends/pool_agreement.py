"""Whether a model's replicas serve the same thing: the same served model name, tokenizer and
chat template (`backends.served`). Replicas that disagree are still routed to (a strict match
would break aliases, and a pool mid-rollout differs for a while), but a request's answer then
depends on the replica it drew: the log says so once per disagreement, naming two replicas and
what each reports, and the metrics show it while it lasts. Contexts that differ are routed
around (`context_fit`), and only noted."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from backends.replica import Replica
from backends.served import Served, served_by

log = logging.getLogger("gateway.fleet")

FACTS = ("name", "tokenizer", "context")
_WORDS = {"name": "served model names", "tokenizer": "tokenizers or chat templates"}


class PoolAgreement:
    """The facts each model's replicas last disagreed on."""

    def __init__(self) -> None:
        self._disagreeing: dict[str, frozenset[str]] = {}

    def disagreements(self, model: str) -> frozenset[str]:
        """The facts of `FACTS` `model`'s replicas disagree on (as last checked)."""
        return self._disagreeing.get(model, frozenset())

    def check(self, model: str, replicas: Sequence[Replica]) -> None:
        """Compare what `model`'s replicas report (those that report it); say each new
        disagreement once."""
        known = [(r, s) for r in replicas if (s := served_by(r.backend)) is not None]
        found = frozenset(f for f in FACTS if len({getattr(s, f) for _, s in known}) > 1)
        before = self._disagreeing.get(model, frozenset())
        if found == before:
            return
        self._disagreeing[model] = found
        for fact in found - before:
            _say(model, fact, known)
        if before and not found:
            log.info("the replicas of %s agree again on what they serve", model)


def _say(model: str, fact: str, known: Sequence[tuple[Replica, Served]]) -> None:
    (first, one), (second, other) = _two_apart(fact, known)
    if fact == "context":
        log.info(
            "replicas of %s have different contexts: %s %d tokens, %s %d (a request goes to "
            "one whose context holds it)",
            model, first.url, one.context, second.url, other.context,
        )  # fmt: skip
        return
    log.warning(
        "replicas of %s serve different %s: %s %s, %s %s; answers depend on the replica",
        model, _WORDS[fact], first.url, _shown(fact, one), second.url, _shown(fact, other),
    )  # fmt: skip


def _two_apart(
    fact: str, known: Sequence[tuple[Replica, Served]]
) -> tuple[tuple[Replica, Served], tuple[Replica, Served]]:
    """The first replica, and the first that differs from it on `fact`."""
    first = known[0]
    value = getattr(first[1], fact)
    return first, next(k for k in known if getattr(k[1], fact) != value)


def _shown(fact: str, served: Served) -> str:
    return repr(served.name) if fact == "name" else f"tokenizer {served.tokenizer}"
