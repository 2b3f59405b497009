"""An agent loop of the OpenAI Agents SDK through the gateway: over the Responses API (the
SDK's default) and over chat completions, the agent calls a function tool, reads its result
and finishes, over real gRPC to the stand-in."""

from __future__ import annotations

import openai
import pytest
from agents import Agent, ModelSettings, RunConfig, Runner, function_tool
from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel
from agents.models.openai_responses import OpenAIResponsesModel

from tests.e2e.stack import Stack

SETTINGS = {
    "plain": ModelSettings(),
    "effort_and_store": ModelSettings(
        reasoning={"effort": "low"},
        store=True,
        verbosity="low",
        extra_args={"prompt_cache_key": "weather", "safety_identifier": "u1"},
    ),
    "top_logprobs": ModelSettings(top_logprobs=2),
}


@pytest.mark.parametrize("settings", list(SETTINGS))
@pytest.mark.parametrize("api", ["responses", "chat_completions"])
async def test_an_agent_calls_its_tool_and_finishes(stack: Stack, api: str, settings: str) -> None:
    """The tool runs once with the arguments the model chose, and the run ends with text;
    the settings an agent may carry (effort, store, verbosity, hints, logprobs) work over
    both APIs."""
    seen: list[str] = []

    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        seen.append(city)
        return f"Sunny in {city}"

    client = openai.AsyncOpenAI(base_url=stack.api_url, api_key="k", max_retries=0)
    model = (
        OpenAIResponsesModel("sim", client)
        if api == "responses"
        else OpenAIChatCompletionsModel("sim", client)
    )
    agent = Agent(
        name="weather",
        instructions="Answer with the tool's help.",
        tools=[get_weather],
        model=model,
        model_settings=SETTINGS[settings],
    )
    result = await Runner.run(
        agent, "What is the weather in Paris?", run_config=RunConfig(tracing_disabled=True)
    )
    assert len(seen) == 1 and isinstance(seen[0], str)
    assert isinstance(result.final_output, str) and result.final_output
