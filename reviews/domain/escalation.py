"""What the critic remembers: this critique's findings held against the strategy's earlier critiques. Pure.

A critique reads its strategy's archive before it concludes. Each loop detector's finding now is
matched, by its detector key, with the same detector's findings in the earlier critiques (oldest
first, issued ones only: a failed critique flagged nothing):

- **new**: fired now, never flagged before;
- **persisting**: fired now and in the last critique: flagged before and not addressed. It
  escalates (an advisory becomes a directive), and its text says how many reviews ago its
  unbroken run of flags began ("first flagged 3 reviews ago");
- **recurring**: fired now, flagged in some earlier critique but clear in the last one: the
  problem came back. It escalates too, counted from the first time it was ever flagged;
- **resolved**: flagged in the last critique, quiet now: acknowledged, nothing escalates.

"Reviews ago" counts critiques: with earlier critiques #1, #2, #3 and a detector flagged by #2 and
#3 and again now, it was first flagged 2 reviews ago.

**The trajectory** across critiques reads the findings' scores (each in [0, 1], 1 = the loop is
plainly there): a critique's *burden* is the mean score of its seven detectors (a detector missing
from an older critique counts 0). Against the last critique's burden, a fall of more than
``TRAJECTORY_TOLERANCE`` is *improving*, a rise of more than it *deteriorating*, anything between
*stagnating*; the first critique of a strategy has no trajectory yet (*first*).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "ESCALATING",
    "TRAJECTORY_TOLERANCE",
    "Escalation",
    "EscalationResult",
    "PastCritique",
    "burden",
    "escalate",
    "past_critique",
    "trajectory",
]

Status = Literal["new", "persisting", "recurring", "resolved"]
Trajectory = Literal["first", "improving", "stagnating", "deteriorating"]
ESCALATING: frozenset[str] = frozenset({"persisting", "recurring"})
TRAJECTORY_TOLERANCE = 0.05
BURDEN_PLACES = 4


@dataclass(frozen=True)
class PastCritique:
    """What an earlier critique found: its sequence number, the detectors it flagged (fired) and
    each detector's score."""

    sequence: int
    fired: frozenset[str]
    scores: Mapping[str, float] = field(default_factory=dict)
    titles: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Escalation:
    """One detector held against the archive. ``first_flagged`` is the sequence of the critique that
    first flagged it (for a persisting finding, the start of its unbroken run of flags),
    ``reviews_ago`` how many critiques ago that was, ``times_flagged`` how many earlier critiques
    flagged it at all."""

    detector: str
    title: str
    status: Status
    first_flagged: int | None
    reviews_ago: int
    times_flagged: int
    text: str

    @property
    def escalates(self) -> bool:
        return self.status in ESCALATING

    def as_json(self) -> dict[str, Any]:
        return {
            "detector": self.detector,
            "title": self.title,
            "status": self.status,
            "first_flagged": self.first_flagged,
            "reviews_ago": self.reviews_ago,
            "times_flagged": self.times_flagged,
            "escalates": self.escalates,
            "text": self.text,
        }


@dataclass(frozen=True)
class EscalationResult:
    """Every detector that is new, persisting, recurring or resolved, and the trajectory."""

    escalations: tuple[Escalation, ...]
    trajectory: Trajectory
    burdens: tuple[float, ...]  # the earlier critiques' burdens, oldest first, then this one's

    @property
    def escalated(self) -> list[Escalation]:
        return [escalation for escalation in self.escalations if escalation.escalates]

    @property
    def resolved(self) -> list[Escalation]:
        return [escalation for escalation in self.escalations if escalation.status == "resolved"]

    @property
    def minimum_severity(self) -> Literal["advisory", "directive"]:
        """Escalation only ever raises a critique's severity: any escalated finding makes it a directive."""
        return "directive" if self.escalated else "advisory"

    def figures(self) -> dict[str, float]:
        """The numbers escalation adds to what a critique may quote (how many reviews ago, how many
        times, the burdens), by dotted name, for the grounding check."""
        numbers: dict[str, float] = {}
        for escalation in self.escalations:
            numbers[f"escalation.{escalation.detector}.reviews_ago"] = escalation.reviews_ago
            numbers[f"escalation.{escalation.detector}.times_flagged"] = escalation.times_flagged
            if escalation.first_flagged is not None:
                numbers[f"escalation.{escalation.detector}.first_flagged"] = escalation.first_flagged
        for index, value in enumerate(self.burdens):
            numbers[f"escalation.burden.{index}"] = value
        return numbers

    def as_json(self) -> list[dict[str, Any]]:
        return [escalation.as_json() for escalation in self.escalations]


def past_critique(sequence: int, findings: Sequence[Mapping[str, Any]]) -> PastCritique:
    """An earlier critique as escalation reads it, from its stored findings."""
    rows = [row for row in findings if isinstance(row, Mapping) and row.get("detector")]
    return PastCritique(
        sequence=sequence,
        fired=frozenset(str(row["detector"]) for row in rows if row.get("fired")),
        scores={str(row["detector"]): _score(row) for row in rows},
        titles={str(row["detector"]): str(row.get("title") or row["detector"]) for row in rows},
    )


def _score(row: Mapping[str, Any]) -> float:
    try:
        value = float(row.get("score") or 0.0)
    except (TypeError, ValueError):
        return 0.0
    return min(1.0, max(0.0, value))


def burden(critique: PastCritique, detectors: Sequence[str]) -> float:
    """The mean score over ``detectors`` (a detector the critique lacks counts 0)."""
    if not detectors:
        return 0.0
    return round(sum(critique.scores.get(key, 0.0) for key in detectors) / len(detectors), BURDEN_PLACES)


def trajectory(burdens: Sequence[float], tolerance: float = TRAJECTORY_TOLERANCE) -> Trajectory:
    """The direction from the last earlier burden to this one (see the module)."""
    if len(burdens) < 2:
        return "first"
    change = burdens[-1] - burdens[-2]
    if change < -tolerance:
        return "improving"
    if change > tolerance:
        return "deteriorating"
    return "stagnating"


def escalate(findings: Sequence[Mapping[str, Any]], earlier: Sequence[PastCritique]) -> EscalationResult:
    """This critique's findings against the earlier critiques (see the module)."""
    current = past_critique(0, findings)
    history = sorted(earlier, key=lambda critique: critique.sequence)
    detectors = [str(row["detector"]) for row in findings if isinstance(row, Mapping) and row.get("detector")]
    escalations = []
    for detector in _detectors_in_order(detectors, history):
        escalation = _escalation(detector, current, history)
        if escalation is not None:
            escalations.append(escalation)
    burdens = tuple(burden(critique, detectors) for critique in [*history, current])
    return EscalationResult(escalations=tuple(escalations), trajectory=trajectory(burdens), burdens=burdens)


def _detectors_in_order(detectors: Sequence[str], history: Sequence[PastCritique]) -> list[str]:
    """This critique's detectors in their order, then any only the last critique knew (so a
    detector that left the pack can still be seen resolved)."""
    seen = list(dict.fromkeys(detectors))
    if history:
        seen += sorted(history[-1].fired - set(seen))
    return seen


def _escalation(detector: str, current: PastCritique, history: Sequence[PastCritique]) -> Escalation | None:
    flagged = [index for index, critique in enumerate(history) if detector in critique.fired]
    now = detector in current.fired
    last = bool(history) and detector in history[-1].fired
    title = current.titles.get(detector) or _title_from(history, detector)
    if not now and not last:
        return None
    if now and not flagged:
        return Escalation(detector, title, "new", None, 0, 0, f"{title}: flagged for the first time.")
    start = _streak_start(flagged, len(history)) if last else flagged[0]
    reviews_ago = len(history) - start
    first = history[start].sequence
    return Escalation(
        detector=detector,
        title=title,
        status=_status(now=now, last=last),
        first_flagged=first,
        reviews_ago=reviews_ago,
        times_flagged=len(flagged),
        text=_text(title, _status(now=now, last=last), reviews_ago),
    )


def _status(*, now: bool, last: bool) -> Status:
    if now and last:
        return "persisting"
    return "recurring" if now else "resolved"


def _streak_start(flagged: Sequence[int], count: int) -> int:
    """The index where the unbroken run of flags ending at the last critique began."""
    start = count - 1
    flagged_set = set(flagged)
    while start - 1 in flagged_set:
        start -= 1
    return start


def _title_from(history: Sequence[PastCritique], detector: str) -> str:
    for critique in reversed(history):
        if detector in critique.titles:
            return critique.titles[detector]
    return detector


def _reviews(count: int) -> str:
    return f"{count} review ago" if count == 1 else f"{count} reviews ago"


def _text(title: str, status: Status, reviews_ago: int) -> str:
    if status == "persisting":
        return f"{title}: first flagged {_reviews(reviews_ago)} and still unresolved; escalated to a directive."
    if status == "recurring":
        return (
            f"{title}: first flagged {_reviews(reviews_ago)}, clear in the last review and back now; "
            "escalated to a directive."
        )
    return f"{title}: flagged in the last review and no longer present; the improvement is acknowledged."
