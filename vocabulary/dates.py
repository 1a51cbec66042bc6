"""The dates the desk accepts from outside: not before its floor, not after today. Pure; no Django."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

__all__ = ["DATE_FLOOR", "DateWindow"]

# No market data the desk trades on predates 1990 (NSE opened in 1992, electronic trading in
# 1994; BSE's SENSEX history in common feeds starts in the late 1980s at best): an older date is a
# typo or a placeholder such as 0001-01-01, and would reach the date arithmetic of the features.
DATE_FLOOR = dt.date(1990, 1, 1)


@dataclass(frozen=True)
class DateWindow:
    """The dates a row may carry: from ``floor`` to ``today`` (the current session on the desk's
    clock, named by ``zone``). A bar dated after today would be taken as a session that has not
    happened, and the book pass would record it as done."""

    today: dt.date
    zone: str
    floor: dt.date = DATE_FLOOR

    def problem(self, value: dt.date, column: str) -> str | None:
        if value > self.today:
            return f"{column} {value} is after today, {self.today}, the current session ({self.zone})"
        if value < self.floor:
            return f"{column} {value} is before {self.floor}, the earliest date the desk accepts"
        return None
