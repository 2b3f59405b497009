"""What a client and the log are told when an OpenAI-compatible upstream fails, through the
official client over a gateway on loopback."""

from __future__ import annotations

import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam

from backends.outliers import OutlierPolicy
from backends.settings import BackendSettings
from gateway.settings import Settings
from tests.support.scripted_upstream import gateway_over, json_answer

HI: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hi"}]
SLOW_DOWN = {"error": {"message": "slow down", "type": "rate_limit_error"}}


async def test_an_upstream_retry_after_is_relayed_no_longer_than_the_gateway_rests() -> None:
    """An upstream asking for a day's wait is relayed as GATEWAY_OUTLIER_MAX_EJECTION_S,
    the longest the gateway itself keeps work from that replica, in both headers."""
    settings = Settings(backends=BackendSettings(outliers=OutlierPolicy(max_ejection_s=60)))
    answer = json_answer(SLOW_DOWN, status=429, headers={"Retry-After": "86400"})
    async with gateway_over({"/v1/chat/completions": answer}, settings) as (base_url, _):
        client = openai.AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0)
        with pytest.raises(openai.RateLimitError) as info:
            await client.chat.completions.create(model="m", messages=HI)
    headers = info.value.response.headers
    assert (headers["retry-after"], headers["retry-after-ms"]) == ("60", "60000")
