"""The words every layer shares about a trade: its direction and how it ended. Pure; no Django."""

from __future__ import annotations

from typing import Literal

__all__ = ["SIGNAL_STATES", "Direction", "Outcome", "SignalEvolution", "as_direction"]

Direction = Literal["LONG", "SHORT"]
Outcome = Literal["win", "loss", "scratch"]
# The full set a thesis's signal can be in. A closed trade maps to Realized, Falsified or
# Weakened; Strengthened and Unknown are for signals judged before or without a close.
SignalEvolution = Literal["Strengthened", "Weakened", "Falsified", "Realized", "Unknown"]
SIGNAL_STATES: tuple[SignalEvolution, ...] = ("Strengthened", "Weakened", "Falsified", "Realized", "Unknown")


def as_direction(value: str) -> Direction:
    """A stored direction (a text column) as the word the pure code takes. The database cannot
    promise LONG or SHORT, so anything else is refused here rather than deep in a calculation."""
    if value == "LONG":
        return "LONG"
    if value == "SHORT":
        return "SHORT"
    raise ValueError(f"direction must be LONG or SHORT, got {value!r}")
