"""The Ollama client over a scripted urllib opener: the real urllib machinery, no network."""

from __future__ import annotations

import http.client
import io
import json
import urllib.error
import urllib.request
import urllib.response
from typing import Any

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
from agents.providers.ollama_client import OllamaClient
from agents.roles import AnalystNote

MODEL = "llama3.1:8b"
BASE_URL = "http://ollama.test:11434"
VALID_NOTE: dict[str, Any] = {
    "role": "news",
    "symbol": "RELIANCE",
    "stance": 0.4,
    "confidence": 0.7,
    "summary": "Refining margins widened and two upgrades followed.",
}

Step = tuple[int, bytes] | BaseException


class ScriptedHTTP(urllib.request.HTTPHandler):
    """Replaces urllib's HTTP handler: serves canned (status, body) pairs or raises, in order."""

    def __init__(self, *steps: Step) -> None:
        super().__init__()
        self.steps = list(steps)
        self.requests: list[urllib.request.Request] = []
        self.timeouts: list[float | None] = []

    def http_open(self, req: urllib.request.Request) -> urllib.response.addinfourl:
        self.requests.append(req)
        self.timeouts.append(req.timeout)
        step = self.steps.pop(0)
        if isinstance(step, BaseException):
            raise step
        status, body = step
        response = urllib.response.addinfourl(io.BytesIO(body), http.client.HTTPMessage(), req.full_url, status)
        response.msg = http.client.responses.get(status, "")  # read by urllib's HTTPErrorProcessor
        return response

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(req.data) for req in self.requests]


def chat_reply(content: str, *, prompt_tokens: int | None = 210, output_tokens: int = 64) -> tuple[int, bytes]:
    body: dict[str, Any] = {
        "model": MODEL,
        "created_at": "2026-11-20T10:00:00Z",
        "message": {"role": "assistant", "content": content},
        "done": True,
        "done_reason": "stop",
        "eval_count": output_tokens,
    }
    if prompt_tokens is not None:
        body["prompt_eval_count"] = prompt_tokens
    return 200, json.dumps(body).encode()


def note_reply(note: dict[str, Any]) -> tuple[int, bytes]:
    return chat_reply(json.dumps(note))


def http_error(status: int, message: str = "failed") -> tuple[int, bytes]:
    return status, json.dumps({"error": message}).encode()


def client_for(handler: ScriptedHTTP) -> OllamaClient:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), handler)
    return OllamaClient(BASE_URL, timeout_s=7, opener=opener)


def request() -> ModelRequest:
    return ModelRequest(
        role="news",
        symbol="RELIANCE",
        system="You are the news analyst.",
        prompt="Headlines for RELIANCE: ...",
        output_schema=AnalystNote,
    )


def choice(client: OllamaClient) -> ModelChoice:
    return ModelChoice(client=client, default_model=MODEL, deep_model="llama3.1:70b")


# --- through structured_call ---------------------------------------------------------------------


def test_a_valid_reply_becomes_a_validated_note() -> None:
    handler = ScriptedHTTP(note_reply(VALID_NOTE))
    recorder = NullRecorder()

    note = structured_call(choice(client_for(handler)), request(), AnalystNote, recorder=recorder)

    assert note == AnalystNote.model_validate(VALID_NOTE)
    [call] = recorder.calls
    assert (call.ok, call.provider, call.model, call.input_tokens, call.output_tokens) == (
        True,
        "ollama",
        MODEL,
        210,
        64,
    )


def test_the_schema_goes_in_format_with_streaming_off() -> None:
    handler = ScriptedHTTP(note_reply(VALID_NOTE))

    structured_call(choice(client_for(handler)), request(), AnalystNote)

    [sent] = handler.requests
    assert sent.full_url == f"{BASE_URL}/api/chat"
    assert sent.get_method() == "POST"
    assert handler.timeouts == [7]
    [body] = handler.bodies()
    assert body == {
        "model": MODEL,
        "messages": [
            {"role": "system", "content": "You are the news analyst."},
            {"role": "user", "content": "Headlines for RELIANCE: ..."},
        ],
        "format": AnalystNote.model_json_schema(),
        "stream": False,
    }


def test_a_malformed_reply_is_repaired_and_the_repair_prompt_carries_the_error() -> None:
    handler = ScriptedHTTP(note_reply({**VALID_NOTE, "role": "macro"}), note_reply(VALID_NOTE))

    note = structured_call(choice(client_for(handler)), request(), AnalystNote)

    assert note.role == "news"
    repair_prompt = handler.bodies()[1]["messages"][1]["content"]
    assert "Your previous reply was rejected: role: Input should be 'news'" in repair_prompt


def test_malformed_twice_fails_the_stage() -> None:
    handler = ScriptedHTTP(chat_reply("Sure! Here is the note."), chat_reply('{"role": "news"'))

    with pytest.raises(StageFailed, match="news: invalid output after one repair"):
        structured_call(choice(client_for(handler)), request(), AnalystNote)

    assert len(handler.requests) == 2


def test_a_rate_limit_is_retried_by_our_backoff() -> None:
    handler = ScriptedHTTP(http_error(429, "too many requests"), note_reply(VALID_NOTE))
    recorder = NullRecorder()
    sleeps: list[float] = []

    note = structured_call(
        choice(client_for(handler)), request(), AnalystNote, recorder=recorder, retry=RetryPolicy(sleep=sleeps.append)
    )

    assert note.symbol == "RELIANCE"
    assert len(handler.requests) == 2
    assert sleeps == [0.5]
    transient = [call for call in recorder.calls if call.error.startswith("transient:")]
    assert len(transient) == 1
    assert "HTTP 429: too many requests" in transient[0].error


def test_a_reply_naming_the_wrong_ticker_is_repaired() -> None:
    handler = ScriptedHTTP(note_reply({**VALID_NOTE, "symbol": "HDFCBANK"}), note_reply(VALID_NOTE))

    note = structured_call(
        choice(client_for(handler)), request(), AnalystNote, validate=lambda note: ticker_guard("RELIANCE", note)
    )

    assert note.symbol == "RELIANCE"
    assert "symbol is 'HDFCBANK'" in handler.bodies()[1]["messages"][1]["content"]


def test_the_wrong_ticker_twice_fails_the_stage() -> None:
    handler = ScriptedHTTP(note_reply({**VALID_NOTE, "symbol": "HDFCBANK"}), note_reply({**VALID_NOTE, "symbol": "X"}))

    with pytest.raises(StageFailed, match="symbol is 'X'"):
        structured_call(
            choice(client_for(handler)), request(), AnalystNote, validate=lambda note: ticker_guard("RELIANCE", note)
        )


def test_a_missing_model_fails_the_stage_without_retry() -> None:
    handler = ScriptedHTTP(http_error(404, f"model '{MODEL}' not found, try pulling it first"))
    sleeps: list[float] = []

    with pytest.raises(StageFailed, match=r"ModelError: ollama: HTTP 404: model 'llama3\.1:8b' not found"):
        structured_call(choice(client_for(handler)), request(), AnalystNote, retry=RetryPolicy(sleep=sleeps.append))

    assert len(handler.requests) == 1
    assert sleeps == []


# --- the client on its own -----------------------------------------------------------------------


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503, 504])
def test_statuses_worth_a_retry_are_transient(status: int) -> None:
    with pytest.raises(TransientModelError, match=f"ollama: HTTP {status}"):
        client_for(ScriptedHTTP(http_error(status))).complete(request(), model=MODEL)


@pytest.mark.parametrize("status", [400, 401, 404, 501])
def test_statuses_no_wait_will_fix_are_plain_model_errors(status: int) -> None:
    with pytest.raises(ModelError) as raised:
        client_for(ScriptedHTTP(http_error(status, "bad request"))).complete(request(), model=MODEL)

    assert not isinstance(raised.value, TransientModelError)
    assert "bad request" in str(raised.value)


@pytest.mark.parametrize(
    "failure",
    [
        urllib.error.URLError(ConnectionRefusedError(111, "Connection refused")),
        urllib.error.URLError(TimeoutError("timed out")),
        TimeoutError("The read operation timed out"),
        ConnectionResetError(104, "Connection reset by peer"),
        http.client.RemoteDisconnected("Remote end closed connection without response"),
    ],
    ids=["refused", "connect-timeout", "read-timeout", "reset", "disconnected"],
)
def test_unreachable_or_slow_servers_are_transient(failure: BaseException) -> None:
    with pytest.raises(TransientModelError, match=f"ollama: cannot reach {BASE_URL}"):
        client_for(ScriptedHTTP(failure)).complete(request(), model=MODEL)


def test_a_broken_envelope_is_a_model_error_not_a_crash() -> None:
    for body in (b"<html>proxy error</html>", b"[]", b'{"error": "model runner crashed"}'):
        with pytest.raises(ModelError):
            client_for(ScriptedHTTP((200, body))).complete(request(), model=MODEL)


def test_a_cached_prompt_without_a_count_reports_zero_input_tokens() -> None:
    reply = client_for(ScriptedHTTP(chat_reply(json.dumps(VALID_NOTE), prompt_tokens=None))).complete(
        request(), model=MODEL
    )

    assert (reply.input_tokens, reply.output_tokens) == (0, 64)
    assert json.loads(reply.text) == VALID_NOTE
    assert reply.latency_ms >= 0


def test_an_empty_system_prompt_is_left_out() -> None:
    handler = ScriptedHTTP(note_reply(VALID_NOTE))

    client_for(handler).complete(request().model_copy(update={"system": ""}), model=MODEL)

    assert [message["role"] for message in handler.bodies()[0]["messages"]] == ["user"]
