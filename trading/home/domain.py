"""The home page's arithmetic on plain values: the book's profit today and in total, and how stale
the market data is. No Django: the selectors hand it rows as values."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

ZERO = Decimal("0")


@dataclass(frozen=True)
class PositionPnl:
    """One live position as the book stored it: when it opened and closed, its realised profit
    once closed (net of both legs' costs), and its daily marks (unrealised, before exit costs)."""

    opened_on: dt.date
    closed_on: dt.date | None = None
    realised: Decimal | None = None
    marks: Mapping[dt.date, Decimal] = field(default_factory=dict)

    def on(self, day: dt.date) -> Decimal:
        """Its profit at the end of ``day``: realised once closed by then, else the latest mark on
        or before ``day`` (a session without a bar for it keeps the last mark), else nothing."""
        if self.closed_on is not None and self.closed_on <= day:
            return self.realised if self.realised is not None else ZERO
        if self.opened_on > day:
            return ZERO
        marked = [mark_day for mark_day in self.marks if mark_day <= day]
        return self.marks[max(marked)] if marked else ZERO


@dataclass(frozen=True)
class DayChange:
    """The book's profit change from the end of ``previous`` to the end of ``day``."""

    day: dt.date
    previous: dt.date | None
    change: Decimal


def book_day_change(positions: Iterable[PositionPnl], sessions: Sequence[dt.date]) -> DayChange | None:
    """Today's profit: the book's profit at the last marked session less its profit at the session
    before, position by position (a position closed that day counts its realised profit less its
    last mark; one filled that day counts its first mark). None when nothing was ever marked."""
    days = sorted(set(sessions))
    if not days:
        return None
    day = days[-1]
    previous = days[-2] if len(days) > 1 else None
    change = ZERO
    for position in positions:
        before = position.on(previous) if previous is not None else ZERO
        change += position.on(day) - before
    return DayChange(day=day, previous=previous, change=change)
