"""Critique rows made by hand for the page, API, evaluation and browser tests: a strategy, its
runs, a finished critique with its findings, evidence pack and actions, and the directive it issued
(the shapes of the critique contracts), without running the critic."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from reviews.models import Critique, CritiqueAction
from trading.models import Strategy, StrategyDirective, StrategyRun

DETECTORS = (
    ("narrative_as_quant", "Narrative dressed as quant"),
    ("single_signal_fixation", "Single-signal fixation"),
    ("memory_echo_chamber", "Memory echo chamber"),
    ("compliance_shield", "Compliance shield"),
    ("overconfidence", "Overconfidence"),
    ("frozen_parameters", "Frozen parameters"),
    ("paralysis_or_churn", "Paralysis or churn"),
)
START = dt.date(2026, 3, 2)


def strategy_named(name: str = "Momentum") -> Strategy:
    return Strategy.objects.create(name=name, philosophy="Ride medium-term trends in large caps.", run_count=0)


def runs_for(strategy: Strategy, count: int, *, is_replay: bool = False, start: dt.date = START) -> list[StrategyRun]:
    """``count`` strategy runs on consecutive days; the strategy's run count follows."""
    runs = [
        StrategyRun.objects.create(
            strategy=strategy, as_of=start + dt.timedelta(days=index), is_replay=is_replay, decision="hold"
        )
        for index in range(count)
    ]
    Strategy.objects.filter(pk=strategy.pk).update(run_count=count)
    return runs


def finding(detector: str, *, score: float = 0.0, fired: bool | None = None, **extra: Any) -> dict[str, Any]:
    number = next(index for index, (key, _) in enumerate(DETECTORS, start=1) if key == detector)
    return {
        "detector": detector,
        "loop": number,
        "title": DETECTORS[number - 1][1],
        "fired": score >= 0.5 if fired is None else fired,
        "score": score,
        "figures": extra.get("figures", {}),
        "ids": extra.get("ids", {}),
        "summary": extra.get("summary", f"{detector} scored {score}."),
    }


def findings(scores: Mapping[str, float] | None = None) -> list[dict[str, Any]]:
    """All seven findings; detectors not named score 0 (quiet)."""
    scores = scores or {}
    return [finding(key, score=scores.get(key, 0.0)) for key, _ in DETECTORS]


def pack(*, figures: Mapping[str, float] | None = None, ids: Mapping[str, Sequence[Any]] | None = None) -> dict:
    return {
        "strategy": {"name": "Momentum"},
        "figures": dict(figures or {}),
        "ids": {kind: list(values) for kind, values in (ids or {}).items()},
        "loops": [],
    }


def critique_for(
    strategy: Strategy,
    *,
    sequence: int = 1,
    run_count: int = 12,
    as_of: dt.date | None = None,
    status: str = Critique.Status.DONE,
    severity: str = Critique.Severity.DIRECTIVE,
    diagnosis: str = "Every thesis since run 11 rests on one signal family.",
    evidence: Iterable[str] = (),
    directive_extra: Mapping[str, Any] | None = None,
    scores: Mapping[str, float] | None = None,
    evidence_pack: Mapping[str, Any] | None = None,
    is_replay: bool = False,
    strategy_run: StrategyRun | None = None,
    actions: Iterable[tuple[str, str, Mapping[str, Any]]] = (),
    issue_directive: bool = True,
    **fields: Any,
) -> Critique:
    """A critique as the critique service stores it, with its actions and (for a finished one) the
    directive row it issued, blocking on its open actions when its severity is a directive."""
    directive = {
        "severity": severity,
        "diagnosis": diagnosis,
        "evidence": list(evidence),
        "required_actions": [{"kind": kind, "text": text, "params": dict(params)} for kind, text, params in actions],
        "prohibited_patterns": [],
        **(directive_extra or {}),
    }
    critique = Critique.objects.create(
        strategy=strategy,
        strategy_run=strategy_run,
        is_replay=is_replay,
        sequence=sequence,
        run_count=run_count,
        as_of=as_of or START + dt.timedelta(days=run_count - 1),
        status=status,
        severity=severity if status == Critique.Status.DONE else "",
        diagnosis=diagnosis if status == Critique.Status.DONE else "",
        directive=directive if status == Critique.Status.DONE else {},
        findings=findings(scores) if status == Critique.Status.DONE else [],
        evidence=dict(evidence_pack or pack()),
        **fields,
    )
    made = [
        CritiqueAction.objects.create(critique=critique, number=number, kind=kind, text=text, params=dict(params))
        for number, (kind, text, params) in enumerate(actions, start=1)
    ]
    if issue_directive and status == Critique.Status.DONE:
        StrategyDirective.objects.create(
            strategy=strategy,
            is_replay=is_replay,
            source_ref=critique.pk,
            sequence=sequence,
            severity=severity,
            text=diagnosis,
            blocking=[{"id": a.pk, "kind": a.kind, "text": a.text} for a in made]
            if severity == Critique.Severity.DIRECTIVE
            else [],
            opened_on=critique.as_of,
        )
    return critique


FREE_FORM = (CritiqueAction.Kind.FREE_FORM, "Write down which new signal family the analysts will read.", {})
REDUCE = (
    CritiqueAction.Kind.REDUCE_CONCENTRATION,
    "Bring the largest position below 20% of capital.",
    {"max_pct": 20.0},
)
