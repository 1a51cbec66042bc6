"""Knock the manager's proposed conviction down when the analyst panel disagrees with the winner.

A model left alone reports a confident number even when its own panel is split; this makes the
number it reports reflect the disagreement that is actually on the record.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agents.roles import AnalystNote
from vocabulary.trade import Direction

__all__ = ["ConvictionHaircut", "haircut_conviction"]

CONVICTION_DECIMALS = 4


@dataclass(frozen=True)
class ConvictionHaircut:
    """The conviction to show, and the counts that produced it (kept for the audit trail)."""

    conviction: float
    proposed: float
    opposing: int
    side_taking: int
    haircut: float


def _clamp_unit(value: float) -> float:
    return min(1.0, max(0.0, value))


def _takes_a_side(note: AnalystNote, neutral_band: float) -> bool:
    # An abstaining note carries no view even if a stance number slipped through, and a stance
    # inside the band is noise; counting either would dilute (or invent) disagreement.
    return not note.abstained and abs(note.stance) > neutral_band


def _opposes(note: AnalystNote, winner: Direction) -> bool:
    return note.stance < 0 if winner == "LONG" else note.stance > 0


def haircut_conviction(
    proposed: float,
    winner: Direction,
    notes: Sequence[AnalystNote],
    *,
    max_haircut: float = 0.6,
    neutral_band: float = 0.05,
) -> ConvictionHaircut:
    """Scale ``proposed`` by ``1 - max_haircut * opposing / side_taking``.

    Only analysts that took a side count in the denominator, so one dissenter among otherwise
    abstaining analysts is full opposition. With no opposition the proposed number stands (only
    clamped into [0, 1]); otherwise the result is clamped and rounded to 4 decimals.
    """
    if not 0.0 <= max_haircut <= 1.0:
        raise ValueError(f"max_haircut must be within [0, 1], got {max_haircut}")
    if neutral_band < 0.0:
        raise ValueError(f"neutral_band must not be negative, got {neutral_band}")

    side_taking = [note for note in notes if _takes_a_side(note, neutral_band)]
    opposing = sum(1 for note in side_taking if _opposes(note, winner))
    if opposing == 0:
        return ConvictionHaircut(
            conviction=_clamp_unit(proposed), proposed=proposed, opposing=0, side_taking=len(side_taking), haircut=0.0
        )

    haircut = max_haircut * opposing / len(side_taking)
    conviction = round(_clamp_unit(proposed * (1.0 - haircut)), CONVICTION_DECIMALS)
    return ConvictionHaircut(
        conviction=conviction,
        proposed=proposed,
        opposing=opposing,
        side_taking=len(side_taking),
        haircut=round(haircut, CONVICTION_DECIMALS),
    )
