"""Replay answers from recorded calls only; a miss is an error, never a guess."""

from __future__ import annotations

import hashlib
import json

import pytest

from agents.domain.llm import (
    ModelChoice,
    ModelReply,
    ModelRequest,
    NullRecorder,
    ReplayMiss,
    StageFailed,
    structured_call,
)
from agents.providers.recorded import RecordedCallsClient, prompt_key
from agents.roles import AnalystNote

NOTE = {"role": "news", "symbol": "RELIANCE", "stance": 0.4, "confidence": 0.7, "summary": "Margins widened."}


def request() -> ModelRequest:
    return ModelRequest(
        role="news",
        symbol="RELIANCE",
        system="You are the news analyst.",
        prompt="Headlines: ...",
        output_schema=AnalystNote,
    )


def recorded() -> ModelReply:
    return ModelReply(
        text=json.dumps(NOTE), provider="anthropic", model="claude-sonnet-4-6", input_tokens=900, output_tokens=80
    )


def test_the_key_is_sha256_of_the_three_texts_as_a_json_list() -> None:
    # Pinned: keys are stored with every recorded call, so changing the recipe orphans them all.
    expected = hashlib.sha256(json.dumps(["news", "sys", "prompt"]).encode()).hexdigest()

    assert prompt_key("news", "sys", "prompt") == expected
    assert len(expected) == 64


def test_the_key_keeps_the_boundaries_between_the_texts() -> None:
    assert prompt_key("news", "ab", "c") != prompt_key("news", "a", "bc")
    assert prompt_key("news", "", "x") != prompt_key("", "news", "x")


def test_a_hit_returns_the_recorded_text_at_no_cost() -> None:
    asked: list[str] = []
    replies = {prompt_key("news", "You are the news analyst.", "Headlines: ..."): recorded()}

    def lookup(key: str) -> ModelReply | None:
        asked.append(key)
        return replies.get(key)

    reply = RecordedCallsClient(lookup).complete(request(), model="whatever")

    assert asked == [prompt_key("news", "You are the news analyst.", "Headlines: ...")]
    assert reply.text == json.dumps(NOTE)
    assert (reply.provider, reply.model) == ("replay", "claude-sonnet-4-6")
    assert (reply.input_tokens, reply.output_tokens) == (0, 0)


def test_a_hit_validates_through_structured_call() -> None:
    replies = {prompt_key("news", "You are the news analyst.", "Headlines: ..."): recorded()}
    client = RecordedCallsClient(replies.get)
    recorder = NullRecorder()

    note = structured_call(ModelChoice(client, "m", "m"), request(), AnalystNote, recorder=recorder)

    assert note.symbol == "RELIANCE"
    assert recorder.calls[0].provider == "replay"


def test_a_miss_names_the_role_and_never_guesses() -> None:
    client = RecordedCallsClient(lambda key: None)

    with pytest.raises(ReplayMiss, match="role 'news' on 'RELIANCE'"):
        client.complete(request(), model="m")


def test_a_changed_prompt_is_a_miss() -> None:
    replies = {prompt_key("news", "You are the news analyst.", "Headlines: ..."): recorded()}
    changed = request().model_copy(update={"prompt": "Headlines: ... (one more)"})

    with pytest.raises(ReplayMiss):
        RecordedCallsClient(replies.get).complete(changed, model="m")


def test_structured_call_turns_a_miss_into_a_failed_stage_without_retry() -> None:
    calls: list[str] = []

    def lookup(key: str) -> ModelReply | None:
        calls.append(key)
        return None

    with pytest.raises(StageFailed, match="news: ReplayMiss: replay: no recorded reply for role 'news'"):
        structured_call(ModelChoice(RecordedCallsClient(lookup), "m", "m"), request(), AnalystNote)

    assert len(calls) == 1
