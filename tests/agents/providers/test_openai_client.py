"""The real OpenAI SDK over canned HTTP responses (httpx2.MockTransport): no network, ever."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
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
from agents.providers.openai_client import OpenAIClient
from agents.roles import AnalystNote

MODEL = "gpt-5-mini"
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


def completion(
    content: str | None, *, refusal: str | None = None, usage: dict[str, int] | None = None
) -> httpx2.Response:
    return httpx2.Response(
        200,
        json={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1_760_000_000,
            "model": MODEL,
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": content, "refusal": refusal},
                }
            ],
            "usage": usage
            if usage is not None
            else {"prompt_tokens": 150, "completion_tokens": 45, "total_tokens": 195},
        },
    )


def note_reply(note: dict[str, Any]) -> httpx2.Response:
    return completion(json.dumps(note))


def api_error(status: int, message: str = "failed") -> httpx2.Response:
    return httpx2.Response(status, json={"error": {"message": message, "type": "error", "code": None}})


def read_timeout(request: httpx2.Request) -> httpx2.Response:
    raise httpx2.ReadTimeout("timed out", request=request)


def connection_refused(request: httpx2.Request) -> httpx2.Response:
    raise httpx2.ConnectError("[Errno 111] Connection refused", request=request)


def client_for(script: Script, *, base_url: str = "https://openai.test/v1") -> OpenAIClient:
    http_client = httpx2.Client(transport=httpx2.MockTransport(script))
    return OpenAIClient("sk-test", base_url=base_url, timeout_s=5, http_client=http_client)


def request() -> ModelRequest:
    return ModelRequest(
        role="news",
        symbol="RELIANCE",
        system="You are the news analyst.",
        prompt="Headlines for RELIANCE: ...",
        output_schema=AnalystNote,
    )


def choice(client: OpenAIClient) -> ModelChoice:
    return ModelChoice(client=client, default_model=MODEL, deep_model="gpt-5")


# --- through structured_call ---------------------------------------------------------------------


def test_a_valid_reply_becomes_a_validated_note() -> None:
    script = Script(note_reply(VALID_NOTE))
    recorder = NullRecorder()

    note = structured_call(choice(client_for(script)), request(), AnalystNote, recorder=recorder)

    assert note == AnalystNote.model_validate(VALID_NOTE)
    [call] = recorder.calls
    assert (call.ok, call.provider, call.model, call.input_tokens, call.output_tokens) == (
        True,
        "openai",
        MODEL,
        150,
        45,
    )


def test_the_schema_is_asked_for_as_a_non_strict_json_schema_response_format() -> None:
    script = Script(note_reply(VALID_NOTE))

    structured_call(choice(client_for(script)), request(), AnalystNote)

    [body] = script.bodies()
    assert str(script.requests[0].url) == "https://openai.test/v1/chat/completions"
    assert body["model"] == MODEL
    assert body["messages"] == [
        {"role": "system", "content": "You are the news analyst."},
        {"role": "user", "content": "Headlines for RELIANCE: ..."},
    ]
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "AnalystNote", "schema": AnalystNote.model_json_schema(), "strict": False},
    }


def test_a_malformed_reply_is_repaired_and_the_repair_prompt_carries_the_error() -> None:
    script = Script(completion('{"role": "news", "symbol": "RELIANCE", "stance": 0.4'), note_reply(VALID_NOTE))
    recorder = NullRecorder()

    note = structured_call(choice(client_for(script)), request(), AnalystNote, recorder=recorder)

    assert note.symbol == "RELIANCE"
    repair_prompt = script.bodies()[1]["messages"][1]["content"]
    assert "Your previous reply was rejected: not valid JSON" in repair_prompt
    assert [call.ok for call in recorder.calls] == [False, True]


def test_malformed_twice_fails_the_stage() -> None:
    script = Script(note_reply({**VALID_NOTE, "confidence": 1.7}), completion("[]"))

    with pytest.raises(StageFailed, match="news: invalid output after one repair"):
        structured_call(choice(client_for(script)), request(), AnalystNote)

    assert len(script.requests) == 2


def test_a_rate_limit_is_retried_by_our_backoff_only() -> None:
    script = Script(api_error(429, "Rate limit reached"), note_reply(VALID_NOTE))
    recorder = NullRecorder()
    sleeps: list[float] = []

    note = structured_call(
        choice(client_for(script)), request(), AnalystNote, recorder=recorder, retry=RetryPolicy(sleep=sleeps.append)
    )

    assert note.symbol == "RELIANCE"
    assert len(script.requests) == 2
    assert sleeps == [0.5]
    transient = [call for call in recorder.calls if call.error.startswith("transient:")]
    assert len(transient) == 1
    assert "RateLimitError" in transient[0].error


def test_a_reply_naming_the_wrong_ticker_is_repaired() -> None:
    script = Script(note_reply({**VALID_NOTE, "symbol": "INFY"}), note_reply(VALID_NOTE))

    note = structured_call(
        choice(client_for(script)), request(), AnalystNote, validate=lambda note: ticker_guard("RELIANCE", note)
    )

    assert note.symbol == "RELIANCE"
    assert "symbol is 'INFY'" in script.bodies()[1]["messages"][1]["content"]


def test_the_wrong_ticker_twice_fails_the_stage() -> None:
    script = Script(note_reply({**VALID_NOTE, "symbol": "INFY"}), note_reply({**VALID_NOTE, "symbol": "INFY"}))

    with pytest.raises(StageFailed, match="symbol is 'INFY'"):
        structured_call(
            choice(client_for(script)), request(), AnalystNote, validate=lambda note: ticker_guard("RELIANCE", note)
        )


def test_an_auth_error_fails_the_stage_without_retry() -> None:
    script = Script(api_error(401, "Incorrect API key provided"))
    sleeps: list[float] = []

    with pytest.raises(StageFailed, match="news: ModelError: openai: AuthenticationError"):
        structured_call(choice(client_for(script)), request(), AnalystNote, retry=RetryPolicy(sleep=sleeps.append))

    assert len(script.requests) == 1
    assert sleeps == []


# --- the client on its own -----------------------------------------------------------------------


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504])
def test_statuses_worth_a_retry_are_transient(status: int) -> None:
    script = Script(api_error(status))

    with pytest.raises(TransientModelError):
        client_for(script).complete(request(), model=MODEL)

    assert len(script.requests) == 1, "the SDK must not retry on its own"


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422, 501])
def test_statuses_no_wait_will_fix_are_plain_model_errors(status: int) -> None:
    script = Script(api_error(status, "The model `gpt-x` does not exist"))

    with pytest.raises(ModelError) as raised:
        client_for(script).complete(request(), model=MODEL)

    assert not isinstance(raised.value, TransientModelError)
    assert str(raised.value).startswith("openai: ")


@pytest.mark.parametrize("failure", [read_timeout, connection_refused])
def test_timeouts_and_refused_connections_are_transient(failure: Step) -> None:
    script = Script(failure)

    with pytest.raises(TransientModelError, match=r"openai: API(Timeout|Connection)Error"):
        client_for(script).complete(request(), model=MODEL)

    assert len(script.requests) == 1


def test_a_refusal_is_passed_on_for_validation_to_reject() -> None:
    reply = client_for(Script(completion(None, refusal="I can't help with that."))).complete(request(), model=MODEL)

    assert reply.text == "I can't help with that."


def test_a_compatible_server_without_usage_reports_zero_tokens() -> None:
    response = note_reply(VALID_NOTE)
    payload = json.loads(response.content)
    del payload["usage"]
    script = Script(httpx2.Response(200, json=payload))

    reply = client_for(script, base_url="http://127.0.0.1:8000/v1").complete(request(), model="local-model")

    assert (reply.input_tokens, reply.output_tokens) == (0, 0)
    assert str(script.requests[0].url) == "http://127.0.0.1:8000/v1/chat/completions"


def test_an_empty_system_prompt_is_left_out() -> None:
    script = Script(note_reply(VALID_NOTE))

    client_for(script).complete(request().model_copy(update={"system": ""}), model=MODEL)

    assert [message["role"] for message in script.bodies()[0]["messages"]] == ["user"]


def test_the_key_is_sent_and_an_empty_key_is_refused() -> None:
    script = Script(note_reply(VALID_NOTE))
    client_for(script).complete(request(), model=MODEL)
    assert script.requests[0].headers["authorization"] == "Bearer sk-test"

    with pytest.raises(ModelError, match="API key is empty"):
        OpenAIClient("")


def test_a_legacy_httpx_client_is_accepted_too() -> None:
    # The OpenAI SDK still takes an httpx.Client (the Anthropic SDK only takes httpx2).
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, content=note_reply(VALID_NOTE).content)

    client = OpenAIClient(
        "sk-test", base_url="https://openai.test/v1", http_client=httpx.Client(transport=httpx.MockTransport(handler))
    )

    assert json.loads(client.complete(request(), model=MODEL).text) == VALID_NOTE
    assert len(seen) == 1
