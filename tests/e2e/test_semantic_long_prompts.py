"""Long templated prompts through a real gateway whose semantic stage looks them up
(`GATEWAY_SEMANTIC_MAX_CHARS` raised): a reworded slot is served, another question is not."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench.semantic_sets import Pair, load_fresh
from cache.semantic_defaults import MAX_SEMANTIC_CHARS
from tests.e2e.semantic_requests import ask, stored
from tests.e2e.stack import semantic_gateway

LIMIT = 4000


@pytest.fixture(scope="module")
def gateway_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    env = {"GATEWAY_SEMANTIC_MAX_CHARS": str(LIMIT)}
    with semantic_gateway(tmp_path_factory.mktemp("semantic-long"), env) as port:
        yield f"http://127.0.0.1:{port}/v1"


def _long_pair(kind: str) -> Pair:
    """The fresh set's first support-template pair of `kind` whose prompts are both over the
    default limit and within the raised one."""
    return next(
        p
        for p in load_fresh()
        if p.family == "support"
        and p.kind == kind
        and min(len(p.a), len(p.b)) > MAX_SEMANTIC_CHARS
        and max(len(p.a), len(p.b)) <= LIMIT
    )


async def test_a_reworded_slot_in_a_long_template_is_served(gateway_url: str) -> None:
    """A paraphrased customer message inside a ~3,000-character support template is a hit."""
    pair = _long_pair("paraphrase")
    await stored(gateway_url, [{"role": "user", "content": pair.b}], "long-paraphrase")
    asked = [{"role": "user", "content": pair.a}]
    assert await ask(gateway_url, asked, "long-paraphrase") == "hit-semantic"


async def test_another_question_in_a_long_template_is_not_served(gateway_url: str) -> None:
    """Another customer question inside the same long template never gets the stored answer."""
    pair = _long_pair("different_question")
    await stored(gateway_url, [{"role": "user", "content": pair.b}], "long-other")
    asked = [{"role": "user", "content": pair.a}]
    assert await ask(gateway_url, asked, "long-other") == "miss"
