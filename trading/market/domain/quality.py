"""Data quality of daily bars, against the exchange's calendar: pure code, no Django.

Three checks, the same on an import's report and on the instrument page:

- **missing sessions**: sessions of the exchange between an instrument's first and last bar with
  no bar (a gap in the file, or a file that skipped a day);
- **stale**: the instrument's last bar is older than the exchange's last completed session (the
  feed stopped);
- **bars on closed days** (stored before imports checked the calendar): a bar dated on a holiday;
- **outlier moves**: a close-to-close move larger than the threshold (25% by default) on a day
  no corporate action (split, bonus, dividend) explains: a bad print, or a split nobody recorded.

An exchange without a calendar cannot be checked for sessions: ``SessionIndex`` is then None and
only the outlier check runs.
"""

from __future__ import annotations

import bisect
import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

MAX_LISTED = 20  # findings listed per check; the counts are always whole
_NEXT_DAY = dt.timedelta(days=1)


class SessionIndex:
    """An exchange's sessions over the calendar's range, for fast questions about days."""

    def __init__(self, sessions: Iterable[dt.date]) -> None:
        self.days = sorted(set(sessions))
        self._set = set(self.days)
        self.first = self.days[0] if self.days else None
        self.last = self.days[-1] if self.days else None

    def covers(self, day: dt.date) -> bool:
        """Whether the calendar knows this day at all (outside its range nothing can be said)."""
        return self.first is not None and self.last is not None and self.first <= day <= self.last

    def is_session(self, day: dt.date) -> bool:
        return day in self._set

    def between(self, after: dt.date, before: dt.date) -> list[dt.date]:
        """Sessions strictly between two days."""
        start = bisect.bisect_right(self.days, after)
        end = bisect.bisect_left(self.days, before)
        return self.days[start:end]

    def count_between(self, after: dt.date, before: dt.date) -> int:
        return max(0, bisect.bisect_left(self.days, before) - bisect.bisect_right(self.days, after))

    def last_on_or_before(self, day: dt.date) -> dt.date | None:
        index = bisect.bisect_right(self.days, day)
        return self.days[index - 1] if index else None


@dataclass(frozen=True)
class Move:
    day: dt.date
    previous_close: Decimal
    close: Decimal

    @property
    def pct(self) -> float:
        return float((self.close - self.previous_close) / self.previous_close * 100)


@dataclass
class InstrumentQuality:
    """One instrument's findings; lists are cut at ``MAX_LISTED``, counts are not."""

    symbol: str
    bars: int = 0
    first_bar: dt.date | None = None
    last_bar: dt.date | None = None
    calendar: bool = True
    missing_count: int = 0
    missing: list[dt.date] = field(default_factory=list)
    last_session: dt.date | None = None
    outlier_count: int = 0
    outliers: list[Move] = field(default_factory=list)
    off_session_count: int = 0
    off_session: list[dt.date] = field(default_factory=list)

    @property
    def stale(self) -> bool:
        return self.last_bar is not None and self.last_session is not None and self.last_bar < self.last_session

    @property
    def clean(self) -> bool:
        return not (self.missing_count or self.stale or self.outlier_count or self.off_session_count)

    def lines(self, threshold_pct: float) -> list[str]:
        """The findings as sentences, for a report."""
        found = []
        if not self.calendar:
            found.append(f"{self.symbol}: no exchange calendar, sessions not checked")
        if self.missing_count:
            shown = ", ".join(day.isoformat() for day in self.missing[:5])
            more = f" and {self.missing_count - 5} more" if self.missing_count > 5 else ""
            found.append(f"{self.symbol}: {self.missing_count} missing session(s): {shown}{more}")
        if self.off_session_count:
            shown = ", ".join(day.isoformat() for day in self.off_session[:5])
            found.append(f"{self.symbol}: {self.off_session_count} bar(s) on days the exchange was closed: {shown}")
        if self.stale and self.last_bar and self.last_session:
            found.append(f"{self.symbol}: stale, last bar {self.last_bar} but the last session was {self.last_session}")
        for move in self.outliers[:5]:
            found.append(
                f"{self.symbol}: {move.pct:+.1f}% close to close on {move.day} "
                f"({move.previous_close} → {move.close}), beyond ±{threshold_pct:g}%, no corporate action"
            )
        if self.outlier_count > 5:
            found.append(f"{self.symbol}: {self.outlier_count - 5} more outlier move(s)")
        return found


class QualityTracker:
    """Checks bars as they stream past, one instrument at a time or interleaved: only each
    instrument's first and last bar are kept, so memory grows with the instruments, never with
    the rows. At ``finish``, each instrument's last stored bar before its first one in the file
    (``before``) joins the two: the gap and the move across the join are checked too. Outliers
    are confirmed at ``finish`` against the days corporate actions explain."""

    def __init__(self, threshold_pct: float) -> None:
        self._threshold_float = threshold_pct / 100
        self.threshold_pct = threshold_pct
        self.found: dict[str, InstrumentQuality] = {}
        self._first: dict[str, tuple[dt.date, Decimal]] = {}
        self._last: dict[str, tuple[dt.date, Decimal]] = {}
        self._sessions: dict[str, SessionIndex | None] = {}
        self._pending: dict[str, list[Move]] = {}

    def start(self, symbol: str, sessions: SessionIndex | None) -> None:
        self.found[symbol] = InstrumentQuality(symbol=symbol, calendar=sessions is not None)
        self._sessions[symbol] = sessions
        self._pending[symbol] = []

    def started(self, symbol: str) -> bool:
        return symbol in self.found

    def first_bars(self) -> dict[str, dt.date]:
        """Each instrument's first bar in the stream (to look up the stored bar before it)."""
        return {symbol: first[0] for symbol, first in self._first.items()}

    def add(self, symbol: str, day: dt.date, close: Decimal) -> None:
        quality = self.found[symbol]
        quality.bars += 1
        if quality.first_bar is None:
            quality.first_bar = day
            self._first[symbol] = (day, close)
        if quality.last_bar is None or day > quality.last_bar:
            quality.last_bar = day
        sessions = self._sessions[symbol]
        if sessions is not None and not sessions.is_session(day) and sessions.covers(day):
            quality.off_session_count += 1
            if len(quality.off_session) < MAX_LISTED:
                quality.off_session.append(day)
        previous = self._last.get(symbol)
        if previous is not None:
            self._compare(symbol, previous, day, close)
        self._last[symbol] = (day, close)

    def _compare(self, symbol: str, previous: tuple[dt.date, Decimal], day: dt.date, close: Decimal) -> None:
        before, before_close = previous
        if before >= day:
            return
        quality = self.found[symbol]
        sessions = self._sessions[symbol]
        if sessions is not None and day - before > _NEXT_DAY and sessions.covers(before) and sessions.covers(day):
            gap = sessions.count_between(before, day)
            if gap:
                room = MAX_LISTED - len(quality.missing)
                if room > 0:
                    quality.missing.extend(sessions.between(before, day)[:room])
                    quality.missing.sort()
                quality.missing_count += gap
        # Compared in floats (cheap, and exact enough for a flag); the move keeps the Decimals.
        previous_value = float(before_close)
        if previous_value > 0 and abs(float(close) - previous_value) > self._threshold_float * previous_value:
            self._pending[symbol].append(Move(day, before_close, close))

    def finish(
        self,
        *,
        last_sessions: Mapping[str, dt.date | None],
        last_stored: Mapping[str, dt.date],
        explained: Mapping[str, set[dt.date]],
        before: Mapping[str, tuple[dt.date, Decimal]] | None = None,
    ) -> list[InstrumentQuality]:
        """Findings per instrument: the join with the stored bar ``before`` its first; stale when
        its last bar (the stream's, or the last stored when later) is older than the exchange's last
        completed session; outliers not on an explained day."""
        for symbol, quality in self.found.items():
            joined = (before or {}).get(symbol)
            first = self._first.get(symbol)
            if joined is not None and first is not None:
                self._compare(symbol, joined, *first)
            stored = last_stored.get(symbol)
            if stored is not None and (quality.last_bar is None or stored > quality.last_bar):
                quality.last_bar = stored
            quality.last_session = last_sessions.get(symbol)
            unexplained = explained.get(symbol, set())
            moves = sorted(
                (move for move in self._pending[symbol] if move.day not in unexplained), key=lambda move: move.day
            )
            quality.outlier_count = len(moves)
            quality.outliers = moves[:MAX_LISTED]
        return list(self.found.values())


def instrument_quality(
    symbol: str,
    bars: Sequence[tuple[dt.date, Decimal]],
    *,
    sessions: SessionIndex | None,
    explained: set[dt.date],
    last_session: dt.date | None,
    threshold_pct: float,
) -> InstrumentQuality:
    """The same checks over an instrument's stored bars (date, close), oldest first."""
    tracker = QualityTracker(threshold_pct)
    tracker.start(symbol, sessions)
    for day, close in bars:
        tracker.add(symbol, day, close)
    [quality] = tracker.finish(last_sessions={symbol: last_session}, last_stored={}, explained={symbol: explained})
    return quality
