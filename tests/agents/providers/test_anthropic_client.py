"""The real Anthropic SDK over canned HTTP responses (httpx2.MockTransport): no network, ever."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx2
import pytest

from agents.domain.hygiene import ticker_guard
from agents.domain.llm import (
    ModelChoice,
    ModelError,
    ModelRequest,
    NullRecorder,
    RetryPolicy,
    StageFailed,
    TransientModelError,
    structured_call,
)
from agents.providers.anthropic_client import AnthropicClient
from agents.roles import AnalystNote

MODEL = "claude-sonnet-4-6"
VALID_NOTE: dict[str, Any] = {
    "role": "news",
    "symbol": "RELIANCE",
    "stance": 0.4,
    "confidence": 0.7,
    "summary": "Refining margins widened and two upgrades followed.",
}

Step = httpx2.Response | Callable[[httpx2.Request], httpx2.Response]


class Script:
    """Serves canned responses in order and keeps every request for the assertions."""

    def __init__(self, *steps: Step) -> None:
        self.steps = list(steps)
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        step = self.steps.pop(0)
        return step(request) if callable(step) else step

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(request.content) for request in self.requests]


def tool_reply(tool_input: dict[str, Any], *, input_tokens: int = 120, output_tokens: int = 40) -> httpx2.Response:
    return _message(
        [{"type": "tool_use", "id": "toolu_01", "name": "AnalystNote", "input": tool_input}],
        input_tokens=input_tokens,
        output_tokens=output_tokens,
    )


def text_reply(text: str) -> httpx2.Response:
    return _message([{"type": "text", "text": text}], input_tokens=100, output_tokens=20)


def _message(content: list[dict[str, Any]], *, input_tokens: int, output_tokens: int) -> httpx2.Response:
    return httpx2.Response(
        200,
        json={
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": content,
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
        },
    )


def api_error(status: int, error_type: str = "api_error", message: str = "failed") -> httpx2.Response:
    return httpx2.Response(status, json={"type": "error", "error": {"type": error_type, "message": message}})


def read_timeout(request: httpx2.Request) -> httpx2.Response:
    raise httpx2.ReadTimeout("timed out", request=request)


def connection_refused(request: httpx2.Request) -> httpx2.Response:
    raise httpx2.ConnectError("[Errno 111] Connection refused", request=request)


def client_for(script: Script) -> AnthropicClient:
    http_client = httpx2.Client(transport=httpx2.MockTransport(script))
    return AnthropicClient("sk-test", base_url="https://anthropic.test", timeout_s=5, http_client=http_client)


def request() -> ModelRequest:
    return ModelRequest(
        role="news",
        symbol="RELIANCE",
        system="You are the news analyst.",
        prompt="Headlines for RELIANCE: ...",
        output_schema=AnalystNote,
    )


def choice(client: AnthropicClient) -> ModelChoice:
    return ModelChoice(client=client, default_model=MODEL, deep_model="claude-opus-4-6")


def no_sleep_policy(sleeps: list[float]) -> RetryPolicy:
    return RetryPolicy(sleep=sleeps.append)


# --- through structured_call ---------------------------------------------------------------------


def test_a_valid_tool_reply_becomes_a_validated_note() -> None:
    script = Script(tool_reply(VALID_NOTE))
    recorder = NullRecorder()

    note = structured_call(choice(client_for(script)), request(), AnalystNote, recorder=recorder)

    assert note == AnalystNote.model_validate(VALID_NOTE)
    [call] = recorder.calls
    assert (call.ok, call.provider, call.model) == (True, "anthropic", MODEL)
    assert (call.input_tokens, call.output_tokens) == (120, 40)
    assert call.latency_ms >= 0


def test_the_schema_is_asked_for_as_one_forced_tool() -> None:
    script = Script(tool_reply(VALID_NOTE))

    structured_call(choice(client_for(script)), request(), AnalystNote)

    [body] = script.bodies()
    assert body["model"] == MODEL
    assert body["system"] == "You are the news analyst."
    assert body["messages"] == [{"role": "user", "content": "Headlines for RELIANCE: ..."}]
    [tool] = body["tools"]
    assert tool["name"] == "AnalystNote"
    assert tool["input_schema"] == AnalystNote.model_json_schema()
    assert body["tool_choice"] == {"type": "tool", "name": "AnalystNote"}


def test_the_deep_tier_asks_for_the_deep_model() -> None:
    script = Script(tool_reply(VALID_NOTE))

    structured_call(choice(client_for(script)), request().model_copy(update={"tier": "deep"}), AnalystNote)

    assert script.bodies()[0]["model"] == "claude-opus-4-6"


def test_a_malformed_reply_is_repaired_and_the_repair_prompt_carries_the_error() -> None:
    script = Script(tool_reply({**VALID_NOTE, "stance": 3.0}), tool_reply(VALID_NOTE))
    recorder = NullRecorder()

    note = structured_call(choice(client_for(script)), request(), AnalystNote, recorder=recorder)

    assert note.stance == 0.4
    repair_prompt = script.bodies()[1]["messages"][0]["content"]
    assert "Your previous reply was rejected: stance: Input should be less than or equal to 1" in repair_prompt
    assert [call.ok for call in recorder.calls] == [False, True]
    assert recorder.calls[0].error.startswith("invalid output: stance")


def test_a_prose_answer_is_passed_on_and_repaired() -> None:
    script = Script(text_reply("I think RELIANCE looks fine."), tool_reply(VALID_NOTE))

    note = structured_call(choice(client_for(script)), request(), AnalystNote)

    assert note.symbol == "RELIANCE"
    assert "not valid JSON" in script.bodies()[1]["messages"][0]["content"]


def test_malformed_twice_fails_the_stage() -> None:
    script = Script(tool_reply({**VALID_NOTE, "stance": 3.0}), tool_reply({"role": "news"}))

    with pytest.raises(StageFailed, match="news: invalid output after one repair"):
        structured_call(choice(client_for(script)), request(), AnalystNote)

    assert len(script.requests) == 2


def test_a_rate_limit_is_retried_by_our_backoff_only() -> None:
    script = Script(api_error(429, "rate_limit_error", "slow down"), tool_reply(VALID_NOTE))
    recorder = NullRecorder()
    sleeps: list[float] = []

    note = structured_call(
        choice(client_for(script)), request(), AnalystNote, recorder=recorder, retry=no_sleep_policy(sleeps)
    )

    assert note.symbol == "RELIANCE"
    assert len(script.requests) == 2
    assert sleeps == [0.5]
    transient = [call for call in recorder.calls if call.error.startswith("transient:")]
    assert len(transient) == 1
    assert "RateLimitError" in transient[0].error


def test_a_reply_naming_the_wrong_ticker_is_repaired() -> None:
    script = Script(tool_reply({**VALID_NOTE, "symbol": "TCS"}), tool_reply(VALID_NOTE))

    note = structured_call(
        choice(client_for(script)), request(), AnalystNote, validate=lambda note: ticker_guard("RELIANCE", note)
    )

    assert note.symbol == "RELIANCE"
    assert "symbol is 'TCS' but this call is about 'RELIANCE'" in script.bodies()[1]["messages"][0]["content"]


def test_the_wrong_ticker_twice_fails_the_stage() -> None:
    script = Script(tool_reply({**VALID_NOTE, "symbol": "TCS"}), tool_reply({**VALID_NOTE, "symbol": "NSE:TCS"}))

    with pytest.raises(StageFailed, match="symbol is 'NSE:TCS'"):
        structured_call(
            choice(client_for(script)), request(), AnalystNote, validate=lambda note: ticker_guard("RELIANCE", note)
        )


def test_an_auth_error_fails_the_stage_without_retry() -> None:
    script = Script(api_error(401, "authentication_error", "invalid x-api-key"))
    sleeps: list[float] = []

    with pytest.raises(StageFailed, match="news: ModelError: anthropic: AuthenticationError"):
        structured_call(choice(client_for(script)), request(), AnalystNote, retry=no_sleep_policy(sleeps))

    assert len(script.requests) == 1
    assert sleeps == []


def test_an_outage_that_outlasts_the_retries_fails_the_stage() -> None:
    script = Script(*(api_error(529, "overloaded_error", "Overloaded") for _ in range(4)))
    sleeps: list[float] = []

    with pytest.raises(StageFailed, match="provider kept failing"):
        structured_call(choice(client_for(script)), request(), AnalystNote, retry=no_sleep_policy(sleeps))

    assert len(script.requests) == 4
    assert sleeps == [0.5, 1.0, 2.0]


# --- the client on its own -----------------------------------------------------------------------


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504, 529])
def test_statuses_worth_a_retry_are_transient(status: int) -> None:
    script = Script(api_error(status))

    with pytest.raises(TransientModelError):
        client_for(script).complete(request(), model=MODEL)

    assert len(script.requests) == 1, "the SDK must not retry on its own"


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 422, 501])
def test_statuses_no_wait_will_fix_are_plain_model_errors(status: int) -> None:
    script = Script(api_error(status, message="no such model"))

    with pytest.raises(ModelError) as raised:
        client_for(script).complete(request(), model=MODEL)

    assert not isinstance(raised.value, TransientModelError)
    assert str(raised.value).startswith("anthropic: ")


@pytest.mark.parametrize("failure", [read_timeout, connection_refused])
def test_timeouts_and_refused_connections_are_transient(failure: Step) -> None:
    script = Script(failure)

    with pytest.raises(TransientModelError, match=r"anthropic: API(Timeout|Connection)Error"):
        client_for(script).complete(request(), model=MODEL)

    assert len(script.requests) == 1


def test_the_reply_is_the_tool_input_as_json_with_usage_and_latency() -> None:
    reply = client_for(Script(tool_reply(VALID_NOTE, input_tokens=321, output_tokens=54))).complete(
        request(), model=MODEL
    )

    assert json.loads(reply.text) == VALID_NOTE
    assert (reply.provider, reply.model, reply.input_tokens, reply.output_tokens) == ("anthropic", MODEL, 321, 54)
    assert reply.latency_ms >= 0


def test_cached_prompt_tokens_count_as_input() -> None:
    response = tool_reply(VALID_NOTE)
    payload = json.loads(response.content)
    payload["usage"].update({"cache_creation_input_tokens": 30, "cache_read_input_tokens": 500})

    reply = client_for(Script(httpx2.Response(200, json=payload))).complete(request(), model=MODEL)

    assert reply.input_tokens == 120 + 30 + 500


def test_an_empty_system_prompt_is_left_out() -> None:
    script = Script(tool_reply(VALID_NOTE))

    client_for(script).complete(request().model_copy(update={"system": ""}), model=MODEL)

    assert "system" not in script.bodies()[0]


def test_the_key_is_sent_and_an_empty_key_is_refused() -> None:
    script = Script(tool_reply(VALID_NOTE))
    client_for(script).complete(request(), model=MODEL)
    headers = script.requests[0].headers
    assert "sk-test" in (headers.get("x-api-key", "") + headers.get("authorization", ""))

    with pytest.raises(ModelError, match="API key is empty"):
        AnthropicClient("")
