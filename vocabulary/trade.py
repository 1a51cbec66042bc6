"""The words every layer shares about a trade: its direction and how it ended. Pure; no Django."""

from __future__ import annotations

from typing import Literal

__all__ = ["SIGNAL_STATES", "Direction", "Outcome", "SignalEvolution"]

Direction = Literal["LONG", "SHORT"]
Outcome = Literal["win", "loss", "scratch"]
# The full set a thesis's signal can be in. A closed trade maps to Realized, Falsified or
# Weakened; Strengthened and Unknown are for signals judged before or without a close.
SignalEvolution = Literal["Strengthened", "Weakened", "Falsified", "Realized", "Unknown"]
SIGNAL_STATES: tuple[SignalEvolution, ...] = ("Strengthened", "Weakened", "Falsified", "Realized", "Unknown")
