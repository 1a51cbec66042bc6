"""Calibration of the desk's stated confidence against what happened, from stored rows.

Subjects: each analyst role (its note's ``confidence``) and the debate (its calibrated
``conviction``). A **call** resolves over its horizon: the thesis's ``horizon_sessions`` when the
run made a thesis, else the trader's default horizon. The realised move is the instrument's close
``horizon`` sessions after the run's as-of date against its close on (or last before) that date,
from ``DailyBar`` rows; a call resolves only once that later bar exists on or before ``end``.

- an analyst's call is *right* when the sign of its stance matches the sign of the move; a note
  that abstained or took no side (stance 0) is no call;
- the debate's call is right when its winner (LONG up, SHORT down) matches the move;
- a move of exactly zero resolves neither way and is left out.

``calibration_summary`` reads the last ``RETROSPECTIVE["BUFFER_SIZE"]`` resolved calls of each
subject (newest first, bounded: a review's cost does not grow with the whole history) and reports
the expected calibration error (``reviews.domain.calibration``, 10 bins) per subject, the analysts
pooled, the debate, and an alarm when any ECE with at least ``CALIBRATION_MIN_SAMPLES`` samples
exceeds ``ECE_ALARM_THRESHOLD``.

``refit_calibration`` refits each subject's isotonic map (``fit_isotonic``) when ``should_refit``
says so (first at ``CALIBRATION_MIN_SAMPLES`` resolved calls, then every
``CALIBRATION_REFIT_INTERVAL`` new ones) and stores an ``agents.CalibrationFit`` row; the daily
review task calls it. ``historical_rate`` reads the latest fit: "historically right X% at this
conviction".
"""

from __future__ import annotations

import bisect
import dataclasses
import datetime as dt
import hashlib
import math
from collections.abc import Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connections, transaction
from django.db.models import CharField, Count, F, FloatField, Max, Q, QuerySet
from django.db.models.functions import Cast
from django.db.models.sql.constants import MULTI

from agents.models import CalibrationFit
from agents.roles.trader import HORIZON_SESSIONS as DEFAULT_HORIZON_SESSIONS
from reviews.domain.calibration import (
    ece_of_bins,
    expected_calibration_error,
    fit_isotonic,
    reliability_bins,
    should_refit,
)
from reviews.models import CalibrationSnapshot
from trading.models import Account, AnalystNoteRecord, DailyBar, DebateRecord, Strategy

__all__ = [
    "ANALYST_ROLES",
    "DEBATE",
    "SUBJECTS",
    "CalibrationSettings",
    "Call",
    "calibration_summary",
    "historical_rate",
    "refit_calibration",
    "resolved_calls",
    "summarise",
]

DEBATE = "debate"
ANALYST_ROLES: tuple[str, ...] = tuple(AnalystNoteRecord.Role.values)
SUBJECTS: tuple[str, ...] = (*ANALYST_ROLES, DEBATE)
N_BINS = 10
_PAGE = 2_000
_SLACK_DAYS = 10
REPLAY_ACCOUNT_PREFIX = "replay: "


@dataclass(frozen=True)
class CalibrationSettings:
    buffer_size: int
    min_samples: int
    refit_every: int
    threshold: float

    @classmethod
    def from_settings(cls) -> CalibrationSettings:
        retro = settings.RETROSPECTIVE
        return cls(
            buffer_size=int(str(retro["BUFFER_SIZE"])),
            min_samples=int(str(retro["CALIBRATION_MIN_SAMPLES"])),
            refit_every=int(str(retro["CALIBRATION_REFIT_INTERVAL"])),
            threshold=float(str(retro["ECE_ALARM_THRESHOLD"])),
        )


@dataclass(frozen=True)
class Call:
    """One resolved call: the stated confidence and whether it came true."""

    confidence: float
    right: bool
    as_of: dt.date


# ---------------------------------------------------------------------------------------------
# Which runs, and how a call resolves
# ---------------------------------------------------------------------------------------------


def _runs_of(account: Account | None, prefix: str) -> Q:
    """The rows of runs that traded for ``account`` (all runs when None). A replay account belongs
    to one strategy ("replay: <name>") and holds that strategy's replayed runs; any other account
    holds the live runs whose thesis it carried, and the default account every live run."""
    if account is None:
        return Q()
    if account.name.startswith(REPLAY_ACCOUNT_PREFIX):
        owners = [
            strategy.pk
            for strategy in Strategy.objects.filter(name__startswith=account.name.removeprefix(REPLAY_ACCOUNT_PREFIX))
            if f"{REPLAY_ACCOUNT_PREFIX}{strategy.name}"[:64] == account.name
        ]
        return Q(**{f"{prefix}is_replay": True, f"{prefix}strategy_run__strategy_id__in": owners})
    if account.name == settings.ACCOUNT["NAME"]:
        return Q(**{f"{prefix}is_replay": False})
    return Q(**{f"{prefix}thesis__account_id": account.pk})


def _sign(value: Decimal | float) -> int:
    return (value > 0) - (value < 0)


class _Closes:
    """Each instrument's closes as sorted (dates, closes), read up to ``end`` and back only as far
    as the calls read so far need (pages go back in time: each reads just the older stretch)."""

    def __init__(self, end: dt.date) -> None:
        self.end = end
        self._by_instrument: dict[int, tuple[list[dt.date], list[Decimal]]] = {}
        self._from: dict[int, dt.date] = {}

    def load(self, instrument_ids: Iterable[int], earliest_as_of: dt.date) -> None:
        # A week's slack: the close "on or before" an as-of date on a holiday is an earlier bar.
        start = earliest_as_of - dt.timedelta(days=_SLACK_DAYS)
        # Instruments never read, and those read from a later day, each need one older stretch:
        # one query per distinct stretch (in practice one or two per page), not one per instrument.
        stretches: dict[dt.date, list[int]] = {}
        for instrument_id in set(instrument_ids):
            loaded_from = self._from.get(instrument_id)
            if loaded_from is not None and loaded_from <= start:
                continue
            upto = self.end if loaded_from is None else loaded_from - dt.timedelta(days=1)
            stretches.setdefault(upto, []).append(instrument_id)
        for upto, ids in stretches.items():
            older: dict[int, tuple[list[dt.date], list[Decimal]]] = {pk: ([], []) for pk in ids}
            rows = DailyBar.objects.filter(instrument_id__in=ids, date__gte=start, date__lte=upto)
            for instrument_id, date, close in rows.order_by("instrument_id", "date").values_list(
                "instrument_id", "date", "close"
            ):
                older[instrument_id][0].append(date)
                older[instrument_id][1].append(close)
            for instrument_id, (dates, closes) in older.items():
                later_dates, later_closes = self._by_instrument.get(instrument_id, ([], []))
                self._by_instrument[instrument_id] = (dates + later_dates, closes + later_closes)
                self._from[instrument_id] = start

    @property
    def series(self) -> Mapping[int, tuple[list[dt.date], list[Decimal]]]:
        """The (dates, closes) read so far, by instrument (``_resolve`` reads them in bulk)."""
        return self._by_instrument

    def move(self, instrument_id: int, as_of: dt.date, horizon: int) -> int | None:
        """The sign of the move over ``horizon`` sessions after ``as_of``; None while unresolved."""
        dates, closes = self._by_instrument.get(instrument_id, ([], []))
        start = bisect.bisect_right(dates, as_of) - 1  # the close on, or last before, as_of
        finish = bisect.bisect_right(dates, as_of) + horizon - 1  # the horizon-th session after as_of
        if start < 0 or finish >= len(dates):
            return None
        return _sign(closes[finish] - closes[start])


def _analyst_rows(role: str, runs: Q, end: dt.date) -> QuerySet[Any]:
    return _notes(runs, end).filter(role=role).values_list(*_COLUMNS)


def _notes(runs: Q, end: dt.date) -> QuerySet[Any]:
    """Every analyst role's calls, newest first (a role's alone keep the same order)."""
    return (
        AnalystNoteRecord.objects.filter(runs, role__in=ANALYST_ROLES, abstained=False, run__as_of__lte=end)
        .exclude(stance=0)
        .order_by("-run__as_of", "-id")
        .annotate(**_columns(_float("confidence"), _float("stance")))
    )


# A call's columns, in the order ``_resolve`` reads them: the stated confidence, the side taken, the
# run's as-of date, its instrument and its thesis's horizon. Read as floats, ISO text and integers,
# which every backend returns as they are: ``_pages`` skips Django's per-value converters (Decimal,
# date), which cost more than the rest of the resolution together.
_COLUMNS = ("call_confidence", "call_side", "call_as_of", "call_instrument", "call_horizon")


def _columns(confidence: Cast, side: Cast | F) -> dict[str, Any]:
    values = (confidence, side, _text("run__as_of"), F("run__instrument_id"), F("run__thesis__horizon_sessions"))
    return dict(zip(_COLUMNS, values, strict=True))


def _float(field: str) -> Cast:
    return Cast(field, FloatField())


def _text(field: str) -> Cast:
    return Cast(field, CharField())


def _debate_rows(runs: Q, end: dt.date) -> QuerySet[Any]:
    return (
        DebateRecord.objects.filter(runs, run__as_of__lte=end)
        .order_by("-run__as_of", "-id")
        .annotate(**_columns(_float("conviction"), F("winner")))
        .values_list(*_COLUMNS)
    )


def _rows(subject: str, account: Account | None, end: dt.date) -> QuerySet[Any]:
    runs = _runs_of(account, "run__")
    return _debate_rows(runs, end) if subject == DEBATE else _analyst_rows(subject, runs, end)


def _pages(rows: QuerySet[Any]) -> Generator[list[Any], None, None]:
    """The rows (a ``values_list``, whose columns Django selects in the order named) in pages of
    ``_PAGE``, newest first, from one query (one sort, however many pages), as the database
    returns them: no per-value converters."""
    query = rows.query
    chunked = not connections[rows.db].settings_dict.get("DISABLE_SERVER_SIDE_CURSORS")
    chunks = query.get_compiler(using=rows.db).execute_sql(MULTI, chunked_fetch=chunked, chunk_size=_PAGE)
    page: list[Any] = []
    for chunk in chunks:
        page.extend(chunk)
        while len(page) >= _PAGE:
            yield page[:_PAGE]
            page = page[_PAGE:]
    if page:
        yield page


class _RoleSplit:
    """Each analyst role's pages, exactly as ``_pages(_analyst_rows(role, ...))`` gives them, read
    from one query for all roles: one scan of the notes instead of one per role (the scan, not
    the sort, is what a role's query costs). A role's rows read ahead of its turn wait here; the
    query is read only as far as the roles taken so far need."""

    def __init__(self, runs: Q, end: dt.date) -> None:
        self._source = _pages(_notes(runs, end).values_list(*_COLUMNS, "role"))
        self._waiting: dict[str, list[Any]] = {role: [] for role in ANALYST_ROLES}

    def pages(self, role: str) -> Iterator[list[Any]]:
        waiting = self._waiting[role]
        while True:
            while len(waiting) < _PAGE and self._read_more():
                pass
            if not waiting:
                return
            page = waiting[:_PAGE]
            del waiting[:_PAGE]
            yield page

    def _read_more(self) -> bool:
        chunk = next(self._source, None)
        if chunk is None:
            return False
        waiting = self._waiting
        for row in chunk:
            waiting[row[-1]].append(row[:-1])
        return True

    def close(self) -> None:
        self._source.close()


@dataclass
class _Resolved:
    """Resolved calls as parallel columns (newest first): the summary needs only the first two,
    and tens of thousands of ``Call`` objects cost more than resolving them."""

    confidences: list[float] = dataclasses.field(default_factory=list)
    outcomes: list[int] = dataclasses.field(default_factory=list)
    as_ofs: list[dt.date] = dataclasses.field(default_factory=list)

    def __len__(self) -> int:
        return len(self.outcomes)

    def truncated(self, limit: int) -> _Resolved:
        return _Resolved(self.confidences[:limit], self.outcomes[:limit], self.as_ofs[:limit])

    def calls(self) -> list[Call]:
        return [
            Call(confidence=confidence, right=bool(outcome), as_of=as_of)
            for confidence, outcome, as_of in zip(self.confidences, self.outcomes, self.as_ofs, strict=True)
        ]


def _resolve(subject: str, page: list[Any], closes: _Closes, into: _Resolved) -> None:
    """Resolve one page of rows (``_rows``' values) into ``into``: the same rule as
    ``_Closes.move`` and the module's docstring, in one loop with local lookups (it runs once per
    stored call read)."""
    parse = dt.date.fromisoformat
    as_ofs = [parse(values[2]) for values in page]
    closes.load((values[3] for values in page), min(as_ofs))
    series = closes.series
    no_series: tuple[list[dt.date], list[Decimal]] = ([], [])
    debate = subject == DEBATE
    default_horizon = DEFAULT_HORIZON_SESSIONS
    bisect_right = bisect.bisect_right
    confidences, outcomes, dates_out = into.confidences, into.outcomes, into.as_ofs
    for (stated, side, _, instrument_id, horizon), as_of in zip(page, as_ofs, strict=True):
        dates, values = series.get(instrument_id, no_series)
        after = bisect_right(dates, as_of)  # the close on, or last before, as_of is at after - 1
        finish = after + (int(horizon) if horizon else default_horizon) - 1  # the horizon-th session after
        if after < 1 or finish >= len(dates):
            continue  # unresolved
        change = values[finish] - values[after - 1]
        confidence = float(stated)
        if not change or not 0.0 <= confidence <= 1.0:  # flat, or a stored value out of range
            continue
        move = 1 if change > 0 else -1
        direction = (1 if side == "LONG" else -1) if debate else (side > 0) - (side < 0)
        confidences.append(confidence)
        outcomes.append(int(direction == move))
        dates_out.append(as_of)


def _resolved(
    subject: str, account: Account | None, end: dt.date, limit: int, closes: _Closes, count_all: bool
) -> tuple[_Resolved, int]:
    rows = _rows(subject, account, end)
    resolved = _Resolved()
    read = 0
    for page in _pages(rows):
        read += len(page)
        _resolve(subject, page, closes, resolved)
        if len(resolved) >= limit:
            older = rows.count() - read if count_all else 0  # the summary needs no total: no count query
            return resolved.truncated(limit), len(resolved) + older
    return resolved, len(resolved)


def _newest_resolved(subject: str, pages: Iterator[list[Any]], limit: int, closes: _Closes) -> _Resolved:
    """The newest ``limit`` resolved calls of ``subject`` from its pages (the summary's reading:
    no total)."""
    resolved = _Resolved()
    for page in pages:
        _resolve(subject, page, closes, resolved)
        if len(resolved) >= limit:
            return resolved.truncated(limit)
    return resolved


def resolved_calls(
    subject: str,
    *,
    account: Account | None = None,
    end: dt.date,
    limit: int,
    closes: _Closes | None = None,
    count_all: bool = True,
) -> tuple[list[Call], int]:
    """The newest ``limit`` resolved calls of ``subject`` up to ``end`` (newest first), and the
    number of calls resolved overall. Rows older than the ones read are counted as resolved
    without reading their bars (their horizon passed long ago), so the count stays cheap.
    ``closes`` shares the bars already read between subjects (the same ``end``)."""
    closes = closes if closes is not None and closes.end == end else _Closes(end)
    resolved, total = _resolved(subject, account, end, limit, closes, count_all)
    return resolved.calls(), total


# ---------------------------------------------------------------------------------------------
# The summary
# ---------------------------------------------------------------------------------------------


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _subject_block(confidences: list[float], outcomes: list[int]) -> dict[str, Any]:
    if not outcomes:
        return {"ece": None, "samples": 0, "bins": []}
    rows = reliability_bins(confidences, outcomes, N_BINS)
    bins = [
        {
            "index": row.index,
            "low": _round(row.low),
            "high": _round(row.high),
            "count": row.count,
            "positives": row.positives,
            "mean_confidence": _round(row.mean_confidence),
            "observed_rate": _round(row.observed_rate),
        }
        for row in rows
    ]
    return {
        "ece": _round(ece_of_bins(rows)),
        "samples": len(outcomes),
        "bins": bins,
    }


def summarise(calls_by_subject: Mapping[str, Sequence[Call]], *, threshold: float, min_samples: int) -> dict[str, Any]:
    """The summary of already resolved calls (pure): per subject, the analysts pooled, the debate,
    and the alarm (an ECE above ``threshold`` on at least ``min_samples`` calls)."""
    return _summary(
        {
            subject: _Resolved([call.confidence for call in calls], [int(call.right) for call in calls])
            for subject, calls in calls_by_subject.items()
        },
        threshold=threshold,
        min_samples=min_samples,
    )


def _summary(resolved: Mapping[str, _Resolved], *, threshold: float, min_samples: int) -> dict[str, Any]:
    by_subject = {subject: _subject_block(calls.confidences, calls.outcomes) for subject, calls in resolved.items()}
    roles = [resolved[role] for role in ANALYST_ROLES if role in resolved]
    pooled = _subject_block(
        [confidence for calls in roles for confidence in calls.confidences],
        [outcome for calls in roles for outcome in calls.outcomes],
    )
    debate = by_subject.get(DEBATE, {"ece": None, "samples": 0})
    blocks = [pooled, *by_subject.values()]
    alarm = any(
        block["ece"] is not None and block["samples"] >= min_samples and block["ece"] > threshold for block in blocks
    )
    return {
        "analyst_ece": pooled["ece"],
        "debate_ece": debate["ece"],
        "samples": pooled["samples"] + debate["samples"],
        "alarm": alarm,
        "threshold": threshold,
        "by_subject": by_subject,
    }


def calibration_data_key(account: Account | None, end: dt.date, config: CalibrationSettings) -> str:
    """A fingerprint of what a summary up to ``end`` is computed from: how many notes, debates and
    bars there are up to that day and the latest id of each (rows are added, never edited in place,
    by the pipeline and the imports), and the settings that shape the summary. Three aggregate
    queries, however many rows."""
    runs = _runs_of(account, "run__")
    parts: list[object] = [dataclasses.astuple(config)]
    for rows in (
        AnalystNoteRecord.objects.filter(runs, run__as_of__lte=end),
        DebateRecord.objects.filter(runs, run__as_of__lte=end),
        DailyBar.objects.filter(date__lte=end),
    ):
        parts.append(tuple(rows.aggregate(n=Count("id"), top=Max("id")).values()))
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def calibration_summary(*, account: Account | None = None, end: dt.date | None = None) -> dict[str, Any]:
    """The calibration block of a review's hard part (shape in the module's docstring and the
    hard-part schema): ECEs of the last ``BUFFER_SIZE`` resolved calls per subject up to ``end``
    (today when None), of ``account``'s runs only when one is given.

    Kept as the day's ``CalibrationSnapshot`` once computed: the daily review computes it, and the
    weekly and epoch reviews of the same day (and any review run again) read it, as long as the
    rows it was computed from are unchanged (``calibration_data_key``)."""
    config = CalibrationSettings.from_settings()
    last_day = end or dt.date.today()
    key = calibration_data_key(account, last_day, config)
    stored = CalibrationSnapshot.objects.filter(account=account, end=last_day, data_key=key).first()
    if stored is not None:
        return dict(stored.summary)
    summary = _computed_summary(account, last_day, config)
    try:
        with transaction.atomic():
            CalibrationSnapshot.objects.update_or_create(
                account=account, end=last_day, defaults={"data_key": key, "summary": summary}
            )
    except IntegrityError:
        pass  # another review stored the same day's summary first: this one is as good, and returned
    return summary


def _computed_summary(account: Account | None, last_day: dt.date, config: CalibrationSettings) -> dict[str, Any]:
    closes = _Closes(last_day)  # every subject reads the same instruments' closes: read them once
    limit = config.buffer_size
    runs = _runs_of(account, "run__")
    roles = _RoleSplit(runs, last_day)
    try:
        # In SUBJECTS' order, as the bars are read: the roles, then the debate.
        resolved = {role: _newest_resolved(role, roles.pages(role), limit, closes) for role in ANALYST_ROLES}
    finally:
        roles.close()
    resolved[DEBATE] = _newest_resolved(DEBATE, _pages(_debate_rows(runs, last_day)), limit, closes)
    return _summary(resolved, threshold=config.threshold, min_samples=config.min_samples)


# ---------------------------------------------------------------------------------------------
# The isotonic refit, and reading it back
# ---------------------------------------------------------------------------------------------


def _refit_subject(subject: str, *, end: dt.date, config: CalibrationSettings) -> CalibrationFit | None:
    calls, total = resolved_calls(subject, end=end, limit=config.buffer_size)
    last = CalibrationFit.objects.filter(subject=subject).order_by("-fitted_at", "-id").first()
    since = None if last is None or last.samples > total else total - last.samples
    if not should_refit(
        samples_since_fit=since, refit_every=config.refit_every, total_samples=total, min_samples=config.min_samples
    ):
        return None
    if not calls:
        return None
    confidences = [call.confidence for call in calls]
    outcomes = [int(call.right) for call in calls]
    fitted = fit_isotonic(confidences, outcomes)
    return CalibrationFit.objects.create(
        subject=subject,
        samples=total,
        points=[[round(x, 6), round(y, 6)] for x, y in fitted.points],
        ece_before=expected_calibration_error(confidences, outcomes, N_BINS),
        ece_after=expected_calibration_error([fitted.apply(c) for c in confidences], outcomes, N_BINS),
    )


def refit_calibration(*, end: dt.date | None = None) -> list[CalibrationFit]:
    """Refit every subject that is due (see the module); the new fits, none when nothing was due."""
    config = CalibrationSettings.from_settings()
    last_day = end or dt.date.today()
    fits = [_refit_subject(subject, end=last_day, config=config) for subject in SUBJECTS]
    return [fit for fit in fits if fit is not None]


def _interpolate(points: Sequence[Sequence[float]], x: float) -> float:
    """The fitted map at ``x``: linear between points, flat beyond the ends (as ``IsotonicMap``)."""
    xs = [float(point[0]) for point in points]
    ys = [float(point[1]) for point in points]
    if x <= xs[0]:
        return ys[0]
    if x >= xs[-1]:
        return ys[-1]
    right = bisect.bisect_right(xs, x)
    x0, x1, y0, y1 = xs[right - 1], xs[right], ys[right - 1], ys[right]
    if x1 == x0:
        return y1
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0)


def historical_rate(subject: str, confidence: Decimal | float) -> float | None:
    """How often ``subject``'s calls at this confidence turned out right, by its latest isotonic
    fit; None before the first fit or for a confidence outside [0, 1]."""
    value = float(confidence)
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        return None
    fit = CalibrationFit.objects.filter(subject=subject).order_by("-fitted_at", "-id").first()
    if fit is None or not fit.points:
        return None
    return _interpolate(fit.points, value)
