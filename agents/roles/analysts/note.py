"""The analyst's note, and what every analyst builds it with: its prompt's shared sections, the
deterministic abstention, and the offline model's scored factors.

Four analysts (news, sentiment, technical, fundamental) return the same ``AnalystNote``; each has
its own module for what it reads. A note's stance and confidence are a vote in calibration, so an
analyst with nothing real to read abstains (decided by code, here) instead of voting 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from agents.domain.hygiene import neutralise
from agents.domain.playbook import PlaybookRule
from agents.roles._base import (
    OFFLINE_MODEL,
    Point,
    RoleOutput,
    ShortText,
    Stance,
    Unit,
    clamp,
    fmt,
    lean,
    short,
    signed,
)
from agents.roles._playbook import codes_cited, note_drivers, with_codes
from vocabulary.features import FeatureBundle

AnalystRole = Literal["news", "sentiment", "technical", "fundamental"]
ANALYST_ROLES: tuple[str, ...] = ("news", "sentiment", "technical", "fundamental")
ABSTAIN_CONFIDENCE = 0.15
ABSTAIN_MODEL = "deterministic-abstain"
MAX_MACRO = 5
SUMMARY_LIMIT = 1000  # the schema's limit on a summary
Playbook = Sequence[PlaybookRule]


class AnalystNote(RoleOutput):
    role: AnalystRole
    symbol: str = Field(min_length=1, max_length=32)
    stance: Stance = Field(description="-1 bearish … +1 bullish")
    confidence: Unit
    summary: ShortText = Field(description="one-sentence conclusion")
    key_points: list[Point] = Field(default_factory=list, max_length=8)
    subscores: dict[str, Stance] = Field(default_factory=dict, description="per-factor scores that fed the stance")
    evidence: list[Point] = Field(default_factory=list, max_length=12, description="the exact values cited")
    expectation_gap: float | None = None
    time_horizon: str = Field(default="", max_length=100)
    model_used: str = Field(default="", max_length=100)
    abstained: bool = False


# --- code's decisions about a note ---------------------------------------------------------------


def abstain(role: str, symbol: str, summary: str, evidence: list[str]) -> AnalystNote:
    """The note code writes for an analyst with nothing real to read; no model is asked."""
    return AnalystNote(
        role=role,  # type: ignore[arg-type]
        symbol=symbol,
        stance=0.0,
        confidence=ABSTAIN_CONFIDENCE,
        summary=summary,
        key_points=[summary],
        evidence=evidence,
        model_used=ABSTAIN_MODEL,
        abstained=True,
    )


def model_vote(note: AnalystNote, model: str) -> AnalystNote:
    """A note a model wrote is a vote: code did not abstain, so the model's ``abstained`` is ignored."""
    return note.model_copy(update={"model_used": model, "abstained": False})


# --- prompt sections the analysts share ----------------------------------------------------------


def macro_evidence(bundle: FeatureBundle) -> list[dict[str, Any]]:
    return [reading.model_dump(mode="json") for reading in bundle.macro[:MAX_MACRO]]


def macro_section(macro: Sequence[Mapping[str, Any]]) -> str:
    if not macro:
        return "macro: (none)"
    lines = [
        f"- {neutralise(str(reading['code']))} ({neutralise(str(reading['name']))}) {reading['date']} "
        f"value={fmt(reading['value'])} unit={neutralise(str(reading['unit']))} change={signed(reading['change'])}"
        for reading in macro
    ]
    return "macro:\n" + "\n".join(lines)


def task_line(role: str, symbol: str, what: str) -> str:
    return f"Task: {what} Set role to {role} and symbol to {symbol}."


# --- the offline model's scored factors ----------------------------------------------------------


@dataclass(frozen=True)
class Factor:
    """One scored reading: its score in [-1, 1], its weight in the stance, and what it cites."""

    name: str
    score: float
    weight: float
    point: str
    evidence: tuple[str, ...]


def blend(factors: Sequence[Factor]) -> tuple[float, float]:
    """Weighted stance, and agreement: 1 when every factor points the same way, near 0 when they cancel."""
    total_weight = sum(factor.weight for factor in factors)
    if total_weight <= 0:
        return 0.0, 0.0
    weighted = sum(factor.weight * factor.score for factor in factors)
    magnitude = sum(factor.weight * abs(factor.score) for factor in factors)
    agreement = abs(weighted) / magnitude if magnitude > 0 else 0.0
    return weighted / total_weight, agreement


def _confidence(agreement: float, coverage: float, stance: float, *, cap: float = 0.85) -> float:
    # Agreement between factors earns most of the confidence; a clear lean earns the rest.
    raw = 0.15 + 0.5 * agreement * coverage + 0.2 * min(1.0, abs(stance) / 0.5)
    return round(clamp(raw, 0.1, cap), 2)


def ranked(factors: Sequence[Factor]) -> list[Factor]:
    """Strongest first (weight × |score|); the name breaks ties, so the order never varies."""
    return sorted(factors, key=lambda factor: (-factor.weight * abs(factor.score), factor.name))


def offline_note(
    role: str,
    symbol: str,
    *,
    stance: float,
    confidence: float,
    summary: str,
    key_points: Sequence[str],
    subscores: Mapping[str, float],
    evidence: Sequence[str],
    time_horizon: str,
) -> AnalystNote:
    """A note the offline model writes: every number clamped and every text cut to its field."""
    return AnalystNote(
        role=role,  # type: ignore[arg-type]
        symbol=symbol,
        stance=round(clamp(stance), 2),
        confidence=confidence,
        summary=short(summary, 1000),
        key_points=[short(point) for point in key_points][:8],
        subscores={name: round(clamp(score), 2) for name, score in subscores.items()},
        evidence=[short(item) for item in evidence][:12],
        time_horizon=time_horizon,
        model_used=OFFLINE_MODEL,
    )


def note_from_factors(
    role: str,
    symbol: str,
    factors: Sequence[Factor],
    weights: Mapping[str, float],
    *,
    label: str,
    time_horizon: str,
    cap: float = 0.85,
) -> AnalystNote:
    """The offline note of an analyst that reads weighted factors (technical, fundamental)."""
    stance, agreement = blend(factors)
    coverage = sum(factor.weight for factor in factors) / sum(weights.values())
    order = ranked(factors)
    leaders = "; ".join(factor.point for factor in order[:2])
    return offline_note(
        role,
        symbol,
        stance=stance,
        confidence=_confidence(agreement, coverage, stance, cap=cap),
        summary=f"{label} stance {signed(round(stance, 2))} ({lean(stance)}): {leaders}.",
        key_points=[factor.point for factor in order],
        subscores={factor.name: factor.score for factor in factors},
        evidence=[item for factor in order for item in factor.evidence],
        time_horizon=time_horizon,
    )


def empty_note(role: str, symbol: str, summary: str, evidence: Sequence[str]) -> AnalystNote:
    """The offline model's neutral note when the evidence it was handed holds nothing to score."""
    return offline_note(
        role,
        symbol,
        stance=0.0,
        confidence=ABSTAIN_CONFIDENCE,
        summary=summary,
        key_points=[summary],
        subscores={},
        evidence=evidence,
        time_horizon="",
    )


def cite_playbook(note: AnalystNote, evidence: Mapping[str, Any]) -> AnalystNote:
    """The offline note citing, at the end of its summary, the playbook's rules tied to what drove
    its stance (its analyst's domain, and each sub-score pointing the way of the stance)."""
    codes = codes_cited(evidence, note_drivers(note.model_dump()))
    if not codes:
        return note
    return note.model_copy(update={"summary": with_codes(note.summary, codes, SUMMARY_LIMIT)})


def macro_citations(macro: Sequence[Mapping[str, Any]], limit: int = 2) -> list[str]:
    return [
        f"{reading['code']}={fmt(reading['value'])} (change {signed(reading['change'])})" for reading in macro[:limit]
    ]
