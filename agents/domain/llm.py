"""The model layer's contract: what a call looks like (``ModelRequest``, ``ModelReply``), one protocol
every provider implements, and ``structured_call``, the only way a role asks a model for an answer.

``structured_call`` owns the rules that keep bad output from ever becoming a trade:
- the reply must parse as JSON and validate against the role's pydantic schema;
- an invalid reply gets exactly one repair attempt, shown the validation error;
- a second invalid reply fails the stage closed with the reason (``StageFailed``);
- transient provider errors (rate limit, overload, timeout, 5xx) retry with backoff, bounded;
- every attempt is handed to the recorder (prompt, reply, tokens, latency, error);
- a budget is consulted before every call and stops further calls when exhausted.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

T = TypeVar("T", bound=BaseModel)
Tier = Literal["default", "deep"]


class ModelRequest(BaseModel):
    """One call to a model. ``evidence`` is the structured data the prompt was built from: real
    providers see only the prompt text; the offline model reasons over the evidence directly."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    role: str
    symbol: str
    system: str
    prompt: str
    output_schema: type[BaseModel]
    tier: Tier = "default"
    evidence: dict[str, Any] = Field(default_factory=dict)


class ModelReply(BaseModel):
    text: str = Field(description="the raw reply: a JSON object as text")
    provider: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0


class ModelError(Exception):
    """A provider failed in a way retrying will not fix (bad credentials, bad request, no such model)."""


class TransientModelError(ModelError):
    """Rate limit, overload, timeout or a 5xx: worth retrying after a pause."""


class ReplayMiss(ModelError):
    """The replay provider has no recorded reply for this role and prompt. Never guessed."""


class BudgetExceeded(ModelError):
    """The run's or the day's token/cost budget is spent; no further calls are made."""


class StageFailed(Exception):
    """A stage could not produce a valid output; ``reason`` is stored and shown."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class LLMClient(Protocol):
    provider: str

    def complete(self, request: ModelRequest, *, model: str) -> ModelReply:
        """Return the model's raw reply (a JSON object as text) or raise a ``ModelError``."""
        ...


@dataclass(frozen=True)
class CallRecord:
    """One attempt, as the recorder stores it."""

    role: str
    symbol: str
    tier: str
    provider: str
    model: str
    system: str
    prompt: str
    reply: str
    input_tokens: int
    output_tokens: int
    latency_ms: float
    ok: bool
    error: str = ""
    attempt: int = 1


class Recorder(Protocol):
    def record(self, call: CallRecord) -> None: ...


class Budget(Protocol):
    def check(self) -> None:
        """Raise ``BudgetExceeded`` when no further call may be made."""
        ...


class NullRecorder:
    def __init__(self) -> None:
        self.calls: list[CallRecord] = []

    def record(self, call: CallRecord) -> None:
        self.calls.append(call)


class NoBudget:
    def check(self) -> None:
        return None


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 4
    first_delay_s: float = 0.5
    max_delay_s: float = 8.0
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)

    def delay(self, attempt: int) -> float:
        return min(self.max_delay_s, self.first_delay_s * (2 ** (attempt - 1)))


@dataclass(frozen=True)
class ModelChoice:
    """Which client and model answer a call, per tier."""

    client: LLMClient
    default_model: str
    deep_model: str

    def model_for(self, tier: str) -> str:
        return self.deep_model if tier == "deep" else self.default_model


def parse_reply(text: str, schema: type[T]) -> T:
    """Parse a reply into ``schema``. Accepts a bare JSON object or one wrapped in a ``` fence."""
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`")
        body = body.split("\n", 1)[1] if "\n" in body else body
        body = body.removesuffix("```").strip()
    try:
        data = json.loads(body)
    except RecursionError:
        raise ValueError("the reply nests too deeply to be a schema object") from None
    if not isinstance(data, dict):
        raise ValueError("the reply is not a JSON object")
    return schema.model_validate(data)


def _describe(error: Exception) -> str:
    if isinstance(error, ValidationError):
        problems = [f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in error.errors()[:8]]
        return "; ".join(problems)
    if isinstance(error, json.JSONDecodeError):
        return f"not valid JSON ({error.msg} at position {error.pos})"
    return str(error)


def _repair_request(request: ModelRequest, reply: str, problem: str) -> ModelRequest:
    prompt = (
        f"{request.prompt}\n\nYour previous reply was rejected: {problem}\n"
        f"Previous reply:\n{reply[:2000]}\n\n"
        "Reply again with one JSON object that satisfies the schema exactly. No prose outside the JSON."
    )
    return request.model_copy(update={"prompt": prompt})


def _complete_with_retries(
    choice: ModelChoice,
    request: ModelRequest,
    *,
    recorder: Recorder,
    budget: Budget,
    retry: RetryPolicy,
    attempt_label: int,
) -> ModelReply:
    model = choice.model_for(request.tier)
    for attempt in range(1, retry.attempts + 1):
        budget.check()
        started = time.perf_counter()
        try:
            return choice.client.complete(request, model=model)
        except TransientModelError as error:
            recorder.record(_failed(request, choice, model, started, f"transient: {error}", attempt_label))
            if attempt == retry.attempts:
                raise StageFailed(f"{request.role}: provider kept failing ({error})") from error
            retry.sleep(retry.delay(attempt))
        except ModelError as error:
            recorder.record(_failed(request, choice, model, started, str(error), attempt_label))
            if isinstance(error, BudgetExceeded):
                raise
            raise StageFailed(f"{request.role}: {type(error).__name__}: {error}") from error
    raise AssertionError("unreachable")


def _failed(
    request: ModelRequest, choice: ModelChoice, model: str, started: float, error: str, attempt: int
) -> CallRecord:
    return CallRecord(
        role=request.role,
        symbol=request.symbol,
        tier=request.tier,
        provider=choice.client.provider,
        model=model,
        system=request.system,
        prompt=request.prompt,
        reply="",
        input_tokens=0,
        output_tokens=0,
        latency_ms=(time.perf_counter() - started) * 1000,
        ok=False,
        error=error,
        attempt=attempt,
    )


def structured_call(
    choice: ModelChoice,
    request: ModelRequest,
    schema: type[T],
    *,
    recorder: Recorder | None = None,
    budget: Budget | None = None,
    retry: RetryPolicy | None = None,
    validate: Callable[[T], None] | None = None,
) -> T:
    """Ask for ``schema``; one repair on invalid output, then fail closed with ``StageFailed``.

    ``validate`` adds role checks beyond the schema (e.g. the ticker guard); a ``ValueError`` from
    it counts as invalid output and gets the same single repair."""
    recorder = recorder or NullRecorder()
    budget = budget or NoBudget()
    retry = retry or RetryPolicy()
    current = request
    problem = ""
    for attempt in (1, 2):
        reply = _complete_with_retries(
            choice, current, recorder=recorder, budget=budget, retry=retry, attempt_label=attempt
        )
        try:
            result = parse_reply(reply.text, schema)
            if validate is not None:
                validate(result)
        except (ValueError, ValidationError) as error:
            problem = _describe(error)
            recorder.record(
                _reply_record(current, reply, ok=False, error=f"invalid output: {problem}", attempt=attempt)
            )
            current = _repair_request(request, reply.text, problem)
            continue
        recorder.record(_reply_record(current, reply, ok=True, error="", attempt=attempt))
        return result
    raise StageFailed(f"{request.role}: invalid output after one repair ({problem})")


def _reply_record(request: ModelRequest, reply: ModelReply, *, ok: bool, error: str, attempt: int) -> CallRecord:
    return CallRecord(
        role=request.role,
        symbol=request.symbol,
        tier=request.tier,
        provider=reply.provider,
        model=reply.model,
        system=request.system,
        prompt=request.prompt,
        reply=reply.text,
        input_tokens=reply.input_tokens,
        output_tokens=reply.output_tokens,
        latency_ms=reply.latency_ms,
        ok=ok,
        error=error,
        attempt=attempt,
    )


class LatencyClient:
    """Wraps a client and waits ``latency_ms`` before each call: makes the offline model behave like
    a networked one, for benchmarks of the orchestration and for demos of the live run page."""

    def __init__(self, inner: LLMClient, latency_ms: float, *, sleep: Callable[[float], None] = time.sleep) -> None:
        self.inner = inner
        self.provider = inner.provider
        self.latency_ms = latency_ms
        self._sleep = sleep

    def complete(self, request: ModelRequest, *, model: str) -> ModelReply:
        self._sleep(self.latency_ms / 1000)
        reply = self.inner.complete(request, model=model)
        return reply.model_copy(update={"latency_ms": reply.latency_ms + self.latency_ms})
