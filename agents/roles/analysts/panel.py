"""Stage 2, the analyst panel: the four analysts at once, a self-critique for a doubtful note, and
the quorum the orchestrator applies.

An analyst with nothing real to read abstains by code before any model is asked; the others call
the model in threads (they wait on the network, not on the CPU). A failed analyst comes back as its
``StageFailed`` so the quorum can count it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from concurrent.futures import Future, wait

from agents.domain.llm import Budget, ModelChoice, ModelRequest, NullRecorder, Recorder, RetryPolicy, StageFailed
from agents.roles._base import OFFLINE_PROVIDER, ask, guard, run_here, submit
from agents.roles.analysts.fundamental import fundamental_abstention, fundamental_request
from agents.roles.analysts.news import news_abstention, news_request
from agents.roles.analysts.note import ANALYST_ROLES, AnalystNote, Playbook, model_vote
from agents.roles.analysts.self_critique import critique_once
from agents.roles.analysts.sentiment import sentiment_abstention, sentiment_request
from agents.roles.analysts.technical import ResearchSignals, technical_abstention, technical_request
from vocabulary.features import FeatureBundle

AnalystResult = AnalystNote | StageFailed

CONFIDENCE_FLOOR = 0.40
QUORUM = 3

_REQUESTS: dict[str, Callable[..., ModelRequest]] = {
    "news": news_request,
    "sentiment": sentiment_request,
    "technical": technical_request,
    "fundamental": fundamental_request,
}

_ABSTENTIONS: dict[str, Callable[[FeatureBundle], AnalystNote | None]] = {
    "news": news_abstention,
    "sentiment": sentiment_abstention,
    "technical": technical_abstention,
    "fundamental": fundamental_abstention,
}


def analyst_request(
    role: str,
    bundle: FeatureBundle,
    *,
    memory_block: str = "",
    playbook: Playbook = (),
    research_signals: ResearchSignals = (),
) -> ModelRequest:
    """The role's request; the research signals a person attached to the strategy go to the
    technical analyst, the one who reads price-based signals."""
    if role == "technical":
        return technical_request(
            bundle, memory_block=memory_block, playbook=playbook, research_signals=research_signals
        )
    return _REQUESTS[role](bundle, memory_block=memory_block, playbook=playbook)


def abstention(role: str, bundle: FeatureBundle) -> AnalystNote | None:
    """The deterministic note for an analyst with nothing real to read, or None when it has data.

    ``abstained`` is decided here and only here: a model is asked only when this returns None, and
    whatever it then says about abstaining is overwritten (``model_vote``). An analyst with
    nothing to read abstains rather than voting a stance of 0, because calibration counts votes."""
    reader = _ABSTENTIONS.get(role)
    return reader(bundle) if reader is not None else None


def _analyst(
    choice: ModelChoice,
    role: str,
    bundle: FeatureBundle,
    *,
    memory_block: str,
    playbook: Playbook,
    research_signals: ResearchSignals,
    recorder: Recorder,
    budget: Budget | None,
    retry: RetryPolicy | None,
) -> AnalystResult:
    request = analyst_request(
        role, bundle, memory_block=memory_block, playbook=playbook, research_signals=research_signals
    )
    validate = guard(bundle.symbol, role=role)
    try:
        note, model = ask(
            choice, request, AnalystNote, recorder=recorder, budget=budget, retry=retry, validate=validate
        )
        note = model_vote(note, model)
        if note.confidence < CONFIDENCE_FLOOR and choice.client.provider != OFFLINE_PROVIDER:
            note = critique_once(choice, request, note, recorder=recorder, budget=budget, retry=retry)
    except StageFailed as failure:
        return failure
    return note


def run_analysts(
    choice: ModelChoice,
    bundle: FeatureBundle,
    *,
    memory_block: str = "",
    playbook: Playbook = (),
    research_signals: ResearchSignals = (),
    recorder: Recorder | None = None,
    budget: Budget | None = None,
    max_workers: int = 4,
    retry: RetryPolicy | None = None,
) -> dict[str, AnalystResult]:
    """The four analysts, concurrently (``max_workers`` 1: one after another). A failed analyst
    comes back as its ``StageFailed`` so the caller can apply the quorum; abstentions are notes made
    without a model call. ``playbook`` is the active playbook every analyst may cite."""
    recorder = recorder or NullRecorder()
    results: dict[str, AnalystResult] = {}
    calling: list[str] = []
    for role in ANALYST_ROLES:
        note = abstention(role, bundle)
        if note is None:
            calling.append(role)
        else:
            results[role] = note
    if calling:
        futures: dict[str, Future[AnalystResult]] = {}
        for role in calling:
            call = functools.partial(
                _analyst,
                choice,
                role,
                bundle,
                memory_block=memory_block,
                playbook=playbook,
                research_signals=research_signals,
                recorder=recorder,
                budget=budget,
                retry=retry,
            )
            # ``max_workers`` 1: one after another, in this thread (same calls, same order).
            futures[role] = submit(call) if max_workers > 1 else run_here(call)
        wait(futures.values())  # all finish before any error is raised, as with a pool of its own
        results.update({role: future.result() for role, future in futures.items()})
    return {role: results[role] for role in ANALYST_ROLES}


def quorum_met(results: Mapping[str, AnalystResult]) -> bool:
    """At least three of four analysts returned a note; an abstention is a note."""
    return len(successful_notes(results)) >= QUORUM


def successful_notes(results: Mapping[str, AnalystResult]) -> list[AnalystNote]:
    return [result for result in results.values() if isinstance(result, AnalystNote)]
