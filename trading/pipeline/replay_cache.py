"""What a history replay reads, read once: the universe's bars, news, fundamentals and macro
readings for the whole window, answered as of each day exactly as the selectors answer a live run.

A live run reads its inputs from the database as of its day (``trading.market.selectors``). A replay
asks the same questions hundreds of times over a window whose data do not change while it runs, so
``ReplayCache`` reads each table once, and answers each question by cutting what it holds at the
day, with the selectors' own order, limits, conversions and split adjustment (the same
``adjust_frame`` with the splits known on the reading day). It has the selectors' signatures, so
``services.feature_bundle_for(source=cache)`` builds the same bundle from it; the proof is the
replay sameness test, which compares every stored row of a fast and a plain replay.
"""

from __future__ import annotations

import bisect
import datetime as dt
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo

import pandas as pd
from django.conf import settings

from trading.market import selectors
from trading.market.domain.adjust import ShareChange, adjust_frame
from trading.market.domain.technical import technical_features_each
from trading.models import CorporateAction, DailyBar, FundamentalsSnapshot, Instrument, MacroIndicator, NewsItem
from vocabulary.features import FundamentalsInput, MacroReading, NewsInput, TechnicalFeatures

BAR_COLUMNS = selectors.BAR_COLUMNS


@dataclass
class _Bars:
    """One instrument's bars up to the window's end, as ``bars_frame`` builds them, unadjusted."""

    dates: list[dt.date]
    frame: pd.DataFrame
    changes: list[ShareChange] = field(default_factory=list)


@dataclass
class _Macro:
    dates: list[dt.date]
    rows: list[MacroIndicator]


class ReplayCache:
    """The inputs of a replay's runs for ``instruments`` up to ``end``, read once."""

    def __init__(self, instruments: Iterable[Instrument], *, start: dt.date, end: dt.date) -> None:
        self.instruments = list(instruments)
        self.start, self.end = start, end
        self.tz: ZoneInfo = selectors.desk_tz()
        ids = [instrument.pk for instrument in self.instruments]
        self._bars = self._read_bars(ids)
        self._news = self._read_news(ids)
        self._fundamentals = self._read_fundamentals(ids)
        self._macro = self._read_macro()
        self._others: list[Instrument] | None = None
        self._symbols: list[tuple[int, str]] | None = None
        # Every instrument's technical features over the window, in one pass each: part of reading
        # the window, before its first day (a later question with another lookback makes its own).
        self._technical: dict[tuple[int, int], dict[dt.date, TechnicalFeatures | None]] = {}
        lookback = int(settings.DESK["FEATURE_LOOKBACK_BARS"])
        for instrument in self.instruments:
            self._technical_pass(instrument, lookback)

    # --- reading once -------------------------------------------------------------------------

    def _read_bars(self, ids: list[int]) -> dict[int, _Bars]:
        rows: dict[int, list[tuple]] = defaultdict(list)
        bars = DailyBar.objects.filter(instrument_id__in=ids, date__lte=self.end).order_by("instrument_id", "date")
        for instrument_id, *values in bars.values_list("instrument_id", "date", *BAR_COLUMNS):
            rows[instrument_id].append(tuple(values))
        changes: dict[int, list[ShareChange]] = defaultdict(list)
        actions = CorporateAction.objects.filter(
            instrument_id__in=ids, kind__in=[CorporateAction.Kind.SPLIT, CorporateAction.Kind.BONUS]
        ).order_by("instrument_id", "ex_date")
        for instrument_id, ex_date, old, new in actions.values_list(
            "instrument_id", "ex_date", "ratio_old", "ratio_new"
        ):
            if old and new:
                changes[instrument_id].append(ShareChange(ex_date=ex_date, ratio_old=old, ratio_new=new))
        held = {}
        for instrument_id in ids:
            frame = pd.DataFrame(rows[instrument_id], columns=["date", *BAR_COLUMNS]).set_index("date").astype(float)
            held[instrument_id] = _Bars(
                dates=[row[0] for row in rows[instrument_id]], frame=frame, changes=changes[instrument_id]
            )
        return held

    def _read_news(self, ids: list[int]) -> dict[int | None, list[tuple]]:
        lookback = int(settings.DESK["NEWS_LOOKBACK_DAYS"])
        first = dt.datetime.combine(self.start, dt.time.min, tzinfo=self.tz) - dt.timedelta(days=lookback + 1)
        last = dt.datetime.combine(self.end + dt.timedelta(days=1), dt.time.min, tzinfo=self.tz)
        items = (
            NewsItem.objects.filter(instrument_id__in=ids) | NewsItem.objects.filter(instrument__isnull=True)
        ).filter(published_at__gte=first, published_at__lt=last)
        by_instrument: dict[int | None, list[tuple]] = defaultdict(list)
        for row in items.order_by("published_at", "id").values_list(
            "published_at", "id", "headline", "source", "instrument_id"
        ):
            by_instrument[row[4]].append(row)
        return by_instrument

    def _read_fundamentals(self, ids: list[int]) -> dict[int, list[FundamentalsSnapshot]]:
        held: dict[int, list[FundamentalsSnapshot]] = defaultdict(list)
        snapshots = FundamentalsSnapshot.objects.filter(instrument_id__in=ids, as_of__lte=self.end)
        for snapshot in snapshots.order_by("instrument_id", "as_of", "id"):
            held[snapshot.instrument_id].append(snapshot)
        return held

    def _read_macro(self) -> dict[str, _Macro]:
        held: dict[str, _Macro] = {}
        for row in MacroIndicator.objects.filter(date__lte=self.end).order_by("code", "date", "id"):
            series = held.setdefault(row.code, _Macro(dates=[], rows=[]))
            series.dates.append(row.date)
            series.rows.append(row)
        return held

    # --- answering as of a day, as the selectors do --------------------------------------------

    def has_bar(self, instrument: Instrument, day: dt.date) -> bool:
        dates = self._bars[instrument.pk].dates
        at = bisect.bisect_left(dates, day)
        return at < len(dates) and dates[at] == day

    def bars_frame(
        self, instrument: Instrument, *, as_of: dt.date | None = None, limit: int | None = None, adjusted: bool = True
    ) -> pd.DataFrame:
        held = self._bars.get(instrument.pk)
        if held is None or (as_of is not None and as_of > self.end) or as_of is None:
            return selectors.bars_frame(instrument, as_of=as_of, limit=limit, adjusted=adjusted)
        stop = bisect.bisect_right(held.dates, as_of)
        begin = 0 if limit is None else max(0, stop - limit)
        frame = held.frame.iloc[begin:stop]
        if not adjusted or frame.empty:
            return frame
        known = [change for change in held.changes if change.ex_date <= as_of]
        return adjust_frame(frame, known, as_of=as_of)

    def news_inputs(self, instrument: Instrument, *, as_of: dt.date, lookback_days: int) -> list[NewsInput]:
        end = dt.datetime.combine(as_of + dt.timedelta(days=1), dt.time.min, tzinfo=self.tz)
        start = end - dt.timedelta(days=lookback_days + 1)
        if as_of > self.end or as_of < self.start or lookback_days > int(settings.DESK["NEWS_LOOKBACK_DAYS"]):
            return selectors.news_inputs(instrument, as_of=as_of, lookback_days=lookback_days)
        rows = self._news.get(instrument.pk, []), self._news.get(None, [])
        picked = []
        for held in rows:
            times = [row[0] for row in held]
            picked.extend(held[bisect.bisect_left(times, start) : bisect.bisect_left(times, end)])
        picked.sort(key=lambda row: (row[0], row[1]))
        return [
            NewsInput(
                headline=headline,
                source=source,
                published_at=published_at.astimezone(self.tz),
                scope="market" if instrument_id is None else "instrument",
            )
            for published_at, _, headline, source, instrument_id in picked
        ]

    def fundamentals_input(self, instrument: Instrument, *, as_of: dt.date) -> FundamentalsInput | None:
        if as_of > self.end:
            return selectors.fundamentals_input(instrument, as_of=as_of)
        held = self._fundamentals.get(instrument.pk, [])
        known = [snapshot for snapshot in held if snapshot.as_of <= as_of]
        if not known:
            return None
        latest = max(snapshot.as_of for snapshot in known)
        # The selector's ``order_by("-as_of").first()``: the newest, the highest id among equals.
        snapshot = [snapshot for snapshot in known if snapshot.as_of == latest][-1]
        return FundamentalsInput(
            as_of=snapshot.as_of,
            source=snapshot.source,
            pe=_as_float(snapshot.pe),
            pb=_as_float(snapshot.pb),
            ev_ebitda=_as_float(snapshot.ev_ebitda),
            revenue_growth_pct=_as_float(snapshot.revenue_growth_pct),
            net_margin_pct=_as_float(snapshot.net_margin_pct),
        )

    def macro_readings(self, *, as_of: dt.date, limit: int = 5) -> list[MacroReading]:
        if as_of > self.end:
            return selectors.macro_readings(as_of=as_of, limit=limit)
        readings: list[MacroReading] = []
        for code in sorted(self._macro):
            if len(readings) >= limit:
                break
            series = self._macro[code]
            stop = bisect.bisect_right(series.dates, as_of)
            if stop == 0:
                continue
            readings.append(selectors.macro_reading(series.rows[stop - 1], series.rows[stop - 2] if stop > 1 else None))
        return readings

    def desk_tz(self) -> ZoneInfo:
        return self.tz

    def technical_features(self, instrument: Instrument, *, as_of: dt.date, limit: int) -> TechnicalFeatures | None:
        """``technical_features`` of ``bars_frame(instrument, as_of=as_of, limit=limit)``, from one
        pass over every day of the window with a bar (each day's frame still cut at that day);
        None when the pass did not hold the day, or its frame would be refused: the caller then
        computes them from the frame itself."""
        return self._technical_pass(instrument, limit).get(as_of)

    def _technical_pass(self, instrument: Instrument, limit: int) -> dict[dt.date, TechnicalFeatures | None]:
        key = (instrument.pk, limit)
        if key not in self._technical:
            held = self._bars.get(instrument.pk)
            days = [] if held is None else [day for day in held.dates if self.start <= day <= self.end]
            frames = [self.bars_frame(instrument, as_of=day, limit=limit) for day in days]
            self._technical[key] = dict(zip(days, technical_features_each(frames), strict=True))
        return self._technical[key]

    def active_others(self, instrument: Instrument) -> list[Instrument]:
        """The other active instruments (the pooled forecast residuals read their bars)."""
        if self._others is None:
            self._others = list(Instrument.objects.filter(is_active=True).order_by("symbol"))
        return [other for other in self._others if other.pk != instrument.pk]

    def other_symbols(self, instrument: Instrument) -> list[str]:
        """Every other instrument's symbol, active or not, in the table's order: what the trader
        is told its thesis must not name (read once; no instrument is added while a replay runs)."""
        if self._symbols is None:
            self._symbols = list(Instrument.objects.values_list("pk", "symbol"))
        return [symbol for pk, symbol in self._symbols if pk != instrument.pk]


def _as_float(value: object) -> float | None:
    return None if value is None else float(value)  # type: ignore[arg-type]
