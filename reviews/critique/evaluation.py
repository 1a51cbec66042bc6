"""The critique's evaluation harness: was a critique grounded, and did behaviour change after it?

Two scores per critique, both computed by code from stored rows, never taken from the critic:

- **Quality** re-reads what the critic wrote (diagnosis, evidence, actions, prohibitions) and looks
  up every figure and every id it cites in the evidence pack the critique was given: the share
  found, and the ids it invented (an id the pack does not hold is a claim about rows the critic
  never saw). The reading is the grounding check's own (``reviews.domain.critique_grounding``), so
  the harness and the gate agree on what a citation is; the check decided whether a critique was
  accepted (one repair, then fail closed), the harness measures what was accepted, over time.
- **Impact** takes each detector that fired and compares its score (0 = no sign of the loop,
  1 = the loop in full) when the critique fired with the score over the following runs: from the
  latest later critique within that window, or else recomputed by the evidence functions as of
  the last of those runs (as of that date, nothing later). Lower is better.

The pure part (quality, one detector's verdict) takes plain data; ``critique_evaluate`` and
``strategy_evaluate`` are the glue that reads the rows.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from reviews.domain.critique_grounding import GroundingCheck, check_grounding
from reviews.models import Critique
from trading.models import Strategy, StrategyRun

__all__ = [
    "DEFAULT_HORIZON_RUNS",
    "DetectorImpact",
    "Evaluation",
    "Impact",
    "Quality",
    "critique_evaluate",
    "critique_impact",
    "critique_quality",
    "detector_impact",
    "strategy_evaluate",
]

DEFAULT_HORIZON_RUNS = 10
# A score that moved by less than this did not move: detectors round their figures.
SCORE_TOLERANCE = 0.005


@dataclass(frozen=True)
class Quality:
    """What a critique cites against what its evidence pack holds."""

    figures_cited: int
    figures_found: int
    ids_cited: int
    ids_found: int
    unfound_figures: tuple[str, ...] = ()
    invented_ids: tuple[str, ...] = ()

    @property
    def cited(self) -> int:
        return self.figures_cited + self.ids_cited

    @property
    def score(self) -> float | None:
        """Share of the cited figures and ids found in the pack; None when it cites nothing (a
        critique that says nothing checkable is not a perfectly grounded one)."""
        if not self.cited:
            return None
        return (self.figures_found + self.ids_found) / self.cited

    @classmethod
    def of(cls, check: GroundingCheck) -> Quality:
        return cls(
            figures_cited=check.figures_cited,
            figures_found=check.figures_found,
            ids_cited=check.ids_cited,
            ids_found=check.ids_found,
            unfound_figures=tuple(dict.fromkeys(number for number, _ in check.ungrounded_figures)),
            invented_ids=tuple(dict.fromkeys(label for label, _ in check.invented_ids)),
        )


LOOP_NUMBERS = tuple(range(1, 8))


def critique_quality(
    directive: Mapping[str, Any],
    pack: Mapping[str, Any],
    *,
    escalations: Sequence[Any] = (),
    earlier: Sequence[int] = (),
) -> Quality:
    """Each figure and id the directive cites, looked up by the same reading the critic's grounding
    check uses (``reviews.domain.critique_grounding``) in what the critic was given: the pack's
    ``figures`` and ``ids``, the escalation's counts (how many reviews ago, how many times), the
    earlier critiques' sequence numbers and the seven loops' numbers."""
    figures = pack.get("figures")
    ids = pack.get("ids")
    known: dict[str, list[object]] = {
        str(kind): list(values) for kind, values in (ids.items() if isinstance(ids, Mapping) else ())
    }
    known["critiques"] = list(earlier)
    known["loops"] = list(LOOP_NUMBERS)
    reference = [figures if isinstance(figures, Mapping) else {}, list(escalations)]
    return Quality.of(check_grounding(directive, figures=reference, ids=known))


@dataclass(frozen=True)
class DetectorImpact:
    """One fired detector: its score when the critique fired and over the following runs."""

    detector: str
    title: str
    before: float
    after: float | None
    source: str

    @property
    def verdict(self) -> str:
        if self.after is None:
            return "no later data"
        if self.after < self.before - SCORE_TOLERANCE:
            return "improved"
        if self.after > self.before + SCORE_TOLERANCE:
            return "worse"
        return "unchanged"

    @property
    def delta(self) -> float | None:
        return None if self.after is None else self.after - self.before


@dataclass(frozen=True)
class Impact:
    detectors: tuple[DetectorImpact, ...] = ()

    @property
    def measured(self) -> tuple[DetectorImpact, ...]:
        return tuple(item for item in self.detectors if item.after is not None)

    @property
    def score(self) -> float | None:
        """Share of the fired detectors (with later data) whose score fell; None when none can be measured."""
        if not self.measured:
            return None
        return sum(item.verdict == "improved" for item in self.measured) / len(self.measured)


def _score(finding: Mapping[str, Any]) -> float:
    value = finding.get("score")
    return float(value) if isinstance(value, int | float | Decimal) and not isinstance(value, bool) else 0.0


def detector_impact(before: Mapping[str, Any], after: Mapping[str, Any] | None, source: str) -> DetectorImpact:
    return DetectorImpact(
        detector=str(before.get("detector", "")),
        title=str(before.get("title", "")),
        before=_score(before),
        after=None if after is None else _score(after),
        source=source if after is not None else "",
    )


def critique_impact(
    findings: Sequence[Mapping[str, Any]], later: Sequence[Mapping[str, Any]] | None, source: str
) -> Impact:
    """Each fired finding of ``findings`` against the same detector in ``later`` (None: nothing later)."""
    by_detector = {str(item.get("detector")): item for item in later or () if isinstance(item, Mapping)}
    return Impact(
        tuple(
            detector_impact(finding, by_detector.get(str(finding.get("detector"))), source)
            for finding in findings
            if isinstance(finding, Mapping) and finding.get("fired")
        )
    )


# --- glue: the rows ---------------------------------------------------------------------------

FindingsAt = Callable[[Strategy, dt.date, bool], Sequence[Mapping[str, Any]]]


def findings_recomputed(strategy: Strategy, as_of: dt.date, is_replay: bool) -> Sequence[Mapping[str, Any]]:
    """The seven detectors as of ``as_of``, by the same evidence functions the critique used."""
    from reviews.critique.evidence import evidence_pack

    loops = evidence_pack(strategy, as_of=as_of, is_replay=is_replay).get("loops") or []
    return [finding for finding in loops if isinstance(finding, Mapping)]


@dataclass(frozen=True)
class Evaluation:
    critique_id: int
    sequence: int
    as_of: dt.date
    run_count: int
    status: str
    severity: str
    quality: Quality
    impact: Impact
    notes: tuple[str, ...] = field(default_factory=tuple)


def _later_findings(
    critique: Critique, horizon_runs: int, findings_at: FindingsAt
) -> tuple[Sequence[Mapping[str, Any]] | None, str]:
    """The detectors' findings over the ``horizon_runs`` runs after the critique, and where from."""
    later = (
        Critique.objects.filter(
            strategy_id=critique.strategy_id,
            is_replay=critique.is_replay,
            status=Critique.Status.DONE,
            run_count__gt=critique.run_count,
            run_count__lte=critique.run_count + horizon_runs,
        )
        .order_by("-run_count", "-sequence")
        .first()
    )
    if later is not None and isinstance(later.findings, list):
        return later.findings, f"critique #{later.sequence} ({later.run_count - critique.run_count} runs later)"
    runs = list(
        StrategyRun.objects.filter(
            strategy_id=critique.strategy_id, is_replay=critique.is_replay, as_of__gt=critique.as_of
        )
        .order_by("as_of")
        .values_list("as_of", flat=True)[:horizon_runs]
    )
    if not runs:
        return None, ""
    return findings_at(
        critique.strategy, runs[-1], critique.is_replay
    ), f"recomputed as of {runs[-1]} ({len(runs)} runs later)"


def critique_evaluate(
    critique: Critique, *, horizon_runs: int = DEFAULT_HORIZON_RUNS, findings_at: FindingsAt | None = None
) -> Evaluation:
    """Both scores of one critique (see the module). A critique that is not DONE has neither."""
    directive = dict(critique.directive) if isinstance(critique.directive, Mapping) else {}
    directive.setdefault("diagnosis", critique.diagnosis)
    pack = critique.evidence if isinstance(critique.evidence, Mapping) else {}
    findings = critique.findings if isinstance(critique.findings, list) else []
    if critique.status != Critique.Status.DONE:
        return Evaluation(
            critique.pk, critique.sequence, critique.as_of, critique.run_count, critique.status,
            critique.severity, Quality(0, 0, 0, 0), Impact(), (f"not evaluated: {critique.status}",),
        )  # fmt: skip
    later, source = _later_findings(critique, horizon_runs, findings_at or findings_recomputed)
    return Evaluation(
        critique_id=critique.pk,
        sequence=critique.sequence,
        as_of=critique.as_of,
        run_count=critique.run_count,
        status=critique.status,
        severity=critique.severity,
        quality=critique_quality(
            directive,
            pack,
            escalations=critique.escalations if isinstance(critique.escalations, list) else [],
            earlier=list(range(1, critique.sequence)),
        ),
        impact=critique_impact(findings, later, source),
    )


def strategy_evaluate(
    strategy: Strategy,
    *,
    is_replay: bool,
    horizon_runs: int = DEFAULT_HORIZON_RUNS,
    findings_at: FindingsAt | None = None,
) -> list[Evaluation]:
    """Every critique of the strategy (live or replay), first first."""
    return [
        critique_evaluate(critique, horizon_runs=horizon_runs, findings_at=findings_at)
        for critique in _critiques(strategy, is_replay)
    ]


def _critiques(strategy: Strategy, is_replay: bool) -> Iterable[Critique]:
    return (
        Critique.objects.filter(strategy=strategy, is_replay=is_replay).select_related("strategy").order_by("sequence")
    )
