"""The rank-IC log: each signal of a strategy's universe against the returns that followed it.

``signal_ics_log`` computes, as of a date, every signal's Spearman rank IC against forward returns
over the thesis horizon (``reviews.domain.signal_ic``) and upserts one ``SignalIC`` row per signal
for the strategy, the day and the replay flag: running it twice on a day rewrites the day's rows,
never adds to them. A ``log_signal_ics`` action of a critique is checked against these rows.

Only stored rows dated on or before ``as_of`` are read: the feature snapshots the runs were shown
and the daily bars (a forward return whose end bar is after ``as_of`` does not exist yet). The
window is the latest ``LOOKBACK_RUNS`` + horizon sessions of the universe's bars, so the log
reads a bounded number of rows however long the strategy has lived.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction

from agents.roles.trader import HORIZON_SESSIONS
from reviews.critique.kept import KeptPerStrategy
from reviews.domain.signal_ic import (
    READ_BLOCKS,
    READ_FIELDS,
    SignalICResult,
    forward_returns,
    observations,
    rank_ics,
    research_ics,
)
from reviews.models import SignalIC
from trading.audit import audit_record
from trading.models import DailyBar, FeatureSnapshot, StageRun, Strategy, Thesis

__all__ = [
    "ICWindow",
    "bundles_forget",
    "critique_number",
    "ic_windows_kept",
    "ics_from_rows",
    "signal_ics_log",
    "strategy_horizon",
    "strategy_rank_ics",
]


def critique_number(name: str) -> float:
    """A number of ``settings.CRITIQUE`` (typed there as objects), refused loudly when it is not one."""
    value = settings.CRITIQUE[name]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ImproperlyConfigured(f"CRITIQUE[{name!r}] must be a number, got {value!r}")
    return value


def _lookback() -> int:
    return int(critique_number("LOOKBACK_RUNS"))


def strategy_horizon(strategy: Strategy, *, as_of: dt.date, is_replay: bool) -> int:
    """The thesis horizon: the most common ``horizon_sessions`` of the strategy's latest theses
    (as of the date), or the trader's default when it has none."""
    horizons = (
        Thesis.objects.filter(
            run__strategy_run__strategy=strategy,
            run__strategy_run__is_replay=is_replay,
            run__as_of__lte=as_of,
        )
        .order_by("-run__as_of", "-id")
        .values_list("horizon_sessions", flat=True)[: _lookback()]
    )
    counts = Counter(horizons)
    if not counts:
        return HORIZON_SESSIONS
    top = max(counts.values())
    return min(horizon for horizon, count in counts.items() if count == top)


@dataclass(frozen=True)
class ICWindow:
    """What one IC computation read: its horizon, its first day, and the results per signal."""

    horizon: int
    start: dt.date | None
    results: tuple[SignalICResult, ...]


def _window_start(instrument_ids: list[int], *, as_of: dt.date, sessions: int) -> dt.date | None:
    days = (
        DailyBar.objects.filter(instrument_id__in=instrument_ids, date__lte=as_of)
        .order_by("-date")
        .values_list("date", flat=True)
        .distinct()[:sessions]
    )
    return min(days, default=None)


def _closes(instrument_ids: list[int], start: dt.date, as_of: dt.date) -> dict[str, list[tuple[dt.date, float]]]:
    closes: dict[str, list[tuple[dt.date, float]]] = {}
    rows = DailyBar.objects.filter(instrument_id__in=instrument_ids, date__gte=start, date__lte=as_of).values_list(
        "instrument__symbol", "date", "close"
    )
    for symbol, day, close in rows:
        closes.setdefault(symbol, []).append((day, float(close)))
    return closes


# The signal blocks of each stored bundle a strategy's last IC window read, under the snapshot's id
# and digest: a bundle never changes (a recomputation is a new row with its own digest), so a
# block kept under both is the one the database would return. For the four strategies read most
# recently.
_kept_bundles: KeptPerStrategy[int, dict[tuple[int, str], dict[str, Any]]] = KeptPerStrategy(4)


def _bundle_parts(snapshot_ids: list[int]) -> dict[int, dict[str, Any]]:
    """As much of each snapshot's bundle as the signals read (``READ_BLOCKS``, ``READ_FIELDS``), cut
    out by the database."""
    parts = [f"bundle__{block}" for block in READ_BLOCKS] + [f"bundle__{block}__{name}" for block, name in READ_FIELDS]
    read: dict[int, dict[str, Any]] = {}
    for snapshot_id, *values in FeatureSnapshot.objects.filter(id__in=snapshot_ids).values_list("id", *parts):
        blocks = dict(zip(READ_BLOCKS, values[: len(READ_BLOCKS)], strict=True))
        for (block, name), value in zip(READ_FIELDS, values[len(READ_BLOCKS) :], strict=True):
            blocks.setdefault(block, {})[name] = value
        read[snapshot_id] = blocks
    return read


def _bundles(
    instrument_ids: list[int], start: dt.date, as_of: dt.date, *, strategy_id: int
) -> dict[tuple[str, dt.date], Any]:
    """The latest stored bundle of each instrument's day (a later recomputation wins), as much of
    it as the signals read; those of ``strategy_id``'s last window are not read again."""
    snapshots = list(
        FeatureSnapshot.objects.filter(instrument_id__in=instrument_ids, as_of__gte=start, as_of__lte=as_of)
        .order_by("instrument_id", "as_of", "computed_at", "id")
        .values_list("id", "digest", "instrument__symbol", "as_of")
    )
    kept = _kept_bundles.get(strategy_id) or {}
    read = _bundle_parts([pk for pk, digest, *_ in snapshots if (pk, digest) not in kept])
    parts = {(pk, digest): kept[(pk, digest)] if (pk, digest) in kept else read[pk] for pk, digest, *_ in snapshots}
    _kept_bundles.keep(strategy_id, parts)
    return {(symbol, day): parts[(pk, digest)] for pk, digest, symbol, day in snapshots}


def bundles_forget(strategy: Strategy) -> None:
    """Drop the bundle parts this process kept for the strategy's IC windows."""
    _kept_bundles.forget(lambda strategy_id: strategy_id == strategy.pk)


def ics_from_rows(
    bundles: Mapping[tuple[str, dt.date], Any], closes: Mapping[str, Iterable[tuple[dt.date, float]]], horizon: int
) -> list[SignalICResult]:
    """Rank ICs from loaded rows: pair each bundle with its instrument's forward return."""
    returns = {symbol: forward_returns(list(series), horizon) for symbol, series in closes.items()}
    return rank_ics(observations(bundles, returns))


def _research_readings(
    strategy: Strategy, start: dt.date, as_of: dt.date, *, is_replay: bool
) -> dict[tuple[str, dt.date], dict[str, float]]:
    """The research signals the strategy's runs were shown (their context stage keeps each one's
    reading as of the run's day): the position each signal took, by instrument and day."""
    outputs = StageRun.objects.filter(
        stage="context",
        status=StageRun.Status.DONE,
        run__strategy_run__strategy=strategy,
        run__strategy_run__is_replay=is_replay,
        run__as_of__gte=start,
        run__as_of__lte=as_of,
    ).values_list("run__instrument__symbol", "run__as_of", "output__research_signals")
    readings: dict[tuple[str, dt.date], dict[str, float]] = {}
    for symbol, day, signals in outputs:
        for entry in signals or []:
            reading = entry.get("reading") if isinstance(entry, dict) else None
            position = reading.get("position") if isinstance(reading, dict) else None
            if isinstance(position, int | float) and not isinstance(position, bool):
                readings.setdefault((symbol, day), {})[f"research:{entry.get('name', '?')}"] = float(position)
    return readings


_kept: ContextVar[dict[tuple[int, dt.date, bool, int | None], ICWindow] | None] = ContextVar("ic_windows", default=None)


@contextmanager
def ic_windows_kept() -> Iterator[None]:
    """Within, ``strategy_rank_ics`` computes each window once: a critique asks for the same one
    for its evidence and again for its action checks, and writes none of what it reads between."""
    token = _kept.set({})
    try:
        yield
    finally:
        _kept.reset(token)


def strategy_rank_ics(strategy: Strategy, *, as_of: dt.date, is_replay: bool, horizon: int | None = None) -> ICWindow:
    """Every signal's rank IC for the strategy's universe as of ``as_of`` (nothing written): the
    desk's features, and the research signals a person attached to the strategy, as its runs read them."""
    kept = _kept.get()
    if kept is None:
        return _rank_ics(strategy, as_of=as_of, is_replay=is_replay, horizon=horizon)
    key = (strategy.pk, as_of, is_replay, horizon)
    if key not in kept:
        kept[key] = _rank_ics(strategy, as_of=as_of, is_replay=is_replay, horizon=horizon)
    return kept[key]


def _rank_ics(strategy: Strategy, *, as_of: dt.date, is_replay: bool, horizon: int | None) -> ICWindow:
    horizon = horizon or strategy_horizon(strategy, as_of=as_of, is_replay=is_replay)
    instrument_ids = list(strategy.universe.values_list("id", flat=True))
    start = _window_start(instrument_ids, as_of=as_of, sessions=_lookback() + horizon)
    if start is None:
        return ICWindow(horizon, None, tuple(rank_ics([])))
    closes = _closes(instrument_ids, start, as_of)
    results = ics_from_rows(_bundles(instrument_ids, start, as_of, strategy_id=strategy.pk), closes, horizon)
    returns = {symbol: forward_returns(list(series), horizon) for symbol, series in closes.items()}
    research = research_ics(_research_readings(strategy, start, as_of, is_replay=is_replay), returns)
    return ICWindow(horizon, start, tuple(results + research))


def signal_ics_log(strategy: Strategy, *, as_of: dt.date, is_replay: bool) -> list[SignalIC]:
    """Compute and upsert today's rank IC of each signal that had any observation; the day's rows."""
    window = strategy_rank_ics(strategy, as_of=as_of, is_replay=is_replay)
    measured = [result for result in window.results if result.observations > 0]
    rows = [
        SignalIC(
            strategy=strategy,
            is_replay=is_replay,
            as_of=as_of,
            signal=result.signal,
            family=result.family,
            horizon_sessions=window.horizon,
            ic=result.ic,
            observations=result.observations,
        )
        for result in measured
    ]
    with transaction.atomic():
        if rows:
            SignalIC.objects.bulk_create(
                rows,
                update_conflicts=True,
                unique_fields=["strategy", "is_replay", "as_of", "signal"],
                update_fields=["family", "horizon_sessions", "ic", "observations"],
            )
        audit_record(
            action="signal_ics_logged",
            target=f"strategy {strategy.name}",
            reason=f"{len(rows)} signal(s) over a {window.horizon}-session horizon",
            details={
                "as_of": as_of.isoformat(),
                "is_replay": is_replay,
                "horizon_sessions": window.horizon,
                "window_start": window.start.isoformat() if window.start else None,
                "ics": {result.signal: result.ic for result in measured},
            },
        )
    return list(SignalIC.objects.filter(strategy=strategy, is_replay=is_replay, as_of=as_of).order_by("signal"))
