"""The hard part of a retrospective: every figure of a review, computed by code from stored rows.

``build_hard_part`` reads one account's book over a period (optionally one strategy's part of it,
or one position) and returns the JSON-ready block every page, API and narrative reads
(``RetrospectiveReport.hard``): money as strings to the paisa ("-1234.50"), rates as strings to
4 decimals or null, dates as ISO strings; its blocks are ``currency``, ``period``, ``attribution``,
``waterfall``, ``actions``, ``positions``, ``best_position``/``worst_position``, ``inaction``,
``accuracy``, ``heuristics``, ``calibration``, ``effectiveness``, ``bounded`` and, for one
position, ``lifecycle``. Nothing here asks a model; the arithmetic is the pure modules':

- attribution: ``reviews.domain.attribution`` over the trades closed in the period (fills, the
  prices before slippage, both legs' charges line by line), the change in open positions' marks
  and the period's model-call bill; a trade closed by hand goes to the person, not the strategy;
- positions: each position closed in the period (realised, vs inaction, regret) and each still
  open at its end (its last mark), the best and the worst closed one;
- accuracy: ``reviews.domain.accuracy`` on the theses whose horizon ended in the period;
- the heuristic audit: ``reviews.domain.heuristics`` on the accepted citations of the runs behind
  the positions closed in the period;
- effectiveness: ``reviews.domain.effectiveness`` from the net, the risk figure and inaction.

Prices before slippage: the broker stores them (``Order.reference_price``,
``Position.exit_reference``); a row written before it did is rebuilt from the bar and the exit
reason (the next open or last close for an entry; the stop or target, or the open when the bar
gapped through it; the close for a horizon or manual exit). A rebuilt reference that contradicts
its fill falls back to the fill itself (no slippage shown for that leg) rather than inventing one.

Bounded: each evaluator reads at most ``RETROSPECTIVE["BUFFER_SIZE"]`` rows (the latest first) and
says so in ``bounded.truncated`` when it had to stop; every query is limited to the period (and, for
accuracy, the horizons ending in it), with the marks, peaks and citations read in a fixed number of
queries however many positions there are.

Model calls are recorded in the price table's currency (``LLM["PRICES"]``, USD by default) and
converted to the account's at ``DESK_INFERENCE_RATE``; with no rate set a non-zero bill is left out
of the net and the hard part's ``inference_source`` says so (``inference_in_account_currency``).
"""

from __future__ import annotations

import datetime as dt
import gc
import math
from bisect import bisect_left, bisect_right
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, cast

from django.conf import settings
from django.db.models import (
    Case,
    CharField,
    Count,
    ExpressionWrapper,
    F,
    Func,
    IntegerField,
    Max,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
    When,
)
from django.db.models.fields.json import KeyTransform

from agents.domain.pricing import PriceTable
from agents.models import Heuristic, ModelCall
from reviews.domain.accuracy import (
    Bar,
    Tally,
    ThesisResolution,
    call_right,
    forecast_covers,
    rate,
    resolve_thesis,
)
from reviews.domain.attribution import (
    Attribution,
    AttributionInputError,
    ClosedTrade,
    OpenPosition,
    attribute,
    waterfall_rows,
)
from reviews.domain.effectiveness import effectiveness
from reviews.domain.heuristics import AuditSettings, audit_heuristic
from reviews.domain.performance import EquityPoint, max_drawdown
from reviews.selectors import position_lifecycle_for
from trading.book.broker import cost_model
from trading.models import (
    Account,
    AnalystNoteRecord,
    DailyBar,
    DebateRecord,
    HeuristicCitation,
    Order,
    PipelineRun,
    Position,
    PositionMark,
    StageRun,
    Strategy,
    StrategyRun,
    Thesis,
)
from vocabulary.costs import CostBreakdown, CostModel, order_costs
from vocabulary.fills import entry_side, exit_side
from vocabulary.refusals import StateConflict
from vocabulary.trade import Direction, as_direction

__all__ = [
    "REPLAY_ACCOUNT_PREFIX",
    "HardPartError",
    "Scope",
    "audit_settings",
    "build_hard_part",
    "position_lifecycle_block",
    "rebuilt_exit_reference",
    "regret_of",
]

REPLAY_ACCOUNT_PREFIX = "replay: "  # trading.book.accounts.replay_account names its accounts so
PAISE = Decimal("0.01")
ZERO = Decimal("0.00")
MANUAL_EXIT = "manual"
# A horizon of h sessions ends within about h·7/5 calendar days (weekends), plus room for holidays.
HOLIDAY_DAYS = 15
MAX_HORIZON_DAYS = 380
COST_LINES = tuple(field.name for field in fields(CostBreakdown))

HardPart = dict[str, Any]


class HardPartError(StateConflict):
    """The book's rows for the period do not add up (a realised PnL its prices contradict): the
    review stops with the position named rather than report figures built on bad rows."""


# --- what a review covers ------------------------------------------------------------------------


@dataclass(frozen=True)
class Scope:
    """One review's slice of the book: an account over [start, end], optionally one strategy's
    positions and runs, or a single position. ``limit`` bounds every evaluator's read."""

    account: Account
    start: dt.date
    end: dt.date
    strategy: Strategy | None = None
    position: Position | None = None
    limit: int = 10_000

    def positions(self) -> QuerySet[Position]:
        positions = Position.objects.filter(account=self.account)
        if self.position is not None:
            return positions.filter(pk=self.position.pk)
        if self.strategy is not None:
            positions = positions.filter(thesis__run__strategy_run__strategy=self.strategy)
        return positions

    def closed(self) -> QuerySet[Position]:
        return self.positions().filter(
            status=Position.Status.CLOSED,
            closed_on__gte=self.start,
            closed_on__lte=self.end,
            realised_pnl__isnull=False,
        )

    def open_at_end(self) -> QuerySet[Position]:
        return (
            self.positions()
            .filter(opened_on__lte=self.end)
            .filter(Q(closed_on__isnull=True) | Q(closed_on__gt=self.end))
        )

    def runs(self) -> QuerySet[PipelineRun]:
        """The account's pipeline runs (a replay account's are its replay's own)."""
        if self.position is not None:
            return PipelineRun.objects.filter(thesis__position=self.position)
        runs = PipelineRun.objects.filter(_runs_of(self.account))
        if self.strategy is not None:
            runs = runs.filter(strategy_run__strategy=self.strategy)
        return runs

    def strategy_runs(self) -> QuerySet[StrategyRun]:
        if self.position is not None:
            return StrategyRun.objects.none()
        runs = _strategy_runs_of(self.account)
        if self.strategy is not None:
            runs = runs.filter(strategy=self.strategy)
        return runs

    def theses(self) -> QuerySet[Thesis]:
        if self.position is not None:
            return Thesis.objects.filter(position=self.position)
        theses = Thesis.objects.filter(account=self.account)
        if self.strategy is not None:
            theses = theses.filter(run__strategy_run__strategy=self.strategy)
        return theses


def _replay_strategy_ids(account: Account) -> list[int]:
    """The strategies whose replay account this is (the account's name is cut at 64 characters)."""
    name = account.name.removeprefix(REPLAY_ACCOUNT_PREFIX)
    candidates = Strategy.objects.filter(name__startswith=name).values_list("pk", "name")
    return [pk for pk, full in candidates if f"{REPLAY_ACCOUNT_PREFIX}{full}"[:64] == account.name]


def _is_live_default(account: Account) -> bool:
    return account.name == settings.ACCOUNT["NAME"]


def _runs_of(account: Account) -> Q:
    """Which runs are the account's: a replay account's are its strategy's replayed runs; the desk's
    live account takes every live run (``account_for_run``); any other account, the runs that
    sized a thesis for it."""
    if account.name.startswith(REPLAY_ACCOUNT_PREFIX):
        return Q(is_replay=True, strategy_run__strategy_id__in=_replay_strategy_ids(account))
    if _is_live_default(account):
        return Q(is_replay=False)
    return Q(thesis__account=account)


def _strategy_runs_of(account: Account) -> QuerySet[StrategyRun]:
    if account.name.startswith(REPLAY_ACCOUNT_PREFIX):
        return StrategyRun.objects.filter(is_replay=True, strategy_id__in=_replay_strategy_ids(account))
    if _is_live_default(account):
        return StrategyRun.objects.filter(is_replay=False)
    return StrategyRun.objects.none()


def buffer_size() -> int:
    # An int (config/env.py's env_int); the checker sees settings' values only as objects.
    return cast(int, settings.RETROSPECTIVE["BUFFER_SIZE"])


def audit_settings() -> AuditSettings:
    """The heuristic audit's lines from ``settings.RETROSPECTIVE``."""
    retro = settings.RETROSPECTIVE
    return AuditSettings(
        min_citations=cast(int, retro["HEURISTIC_MIN_CITATIONS"]),
        demote_below=Decimal(str(retro["HEURISTIC_DEMOTE_BELOW"])),
        investigate_below=Decimal(str(retro["HEURISTIC_INVESTIGATE_BELOW"])),
        unit=Decimal(str(retro["MONEY_UNIT"])),
    )


# --- the entry point -----------------------------------------------------------------------------


def build_hard_part(
    *,
    account: Account,
    start: dt.date,
    end: dt.date,
    strategy: Strategy | None = None,
    position: Position | None = None,
) -> HardPart:
    """The hard part of the review of ``account`` over [``start``, ``end``] (both days included),
    of one ``strategy``'s part of the book or of one ``position``; JSON-ready (see the module)."""
    if end < start:
        raise ValueError(f"a review's period ends on or after its start, got {start} to {end}")
    scope = Scope(account=account, start=start, end=end, strategy=strategy, position=position, limit=buffer_size())
    with _collector_paused():
        return _hard_part(scope)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a review reads its rows. The rows are plain
    dicts, tuples and Decimals that reference counting frees; left on, the collector's full passes
    walk every row read so far each few thousand allocations, and a 10,000-position review spent
    more time there than in its own arithmetic (``bench/retrospective.py``)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _hard_part(scope: Scope) -> HardPart:
    account, start, end, position = scope.account, scope.start, scope.end, scope.position
    truncated: list[str] = []
    closed = _closed_rows(scope, truncated)
    still_open = _open_rows(scope, truncated)
    trades = _closed_trades(closed, _rebuild_inputs(scope, closed), start)
    inference, inference_source = inference_in_account_currency(
        _inference_cost(scope), account_currency=account.currency
    )
    attribution = attribute(
        trades,
        [_open_position(row, scope.start) for row in still_open],
        inference,
        max_drawdown=_max_drawdown(scope, closed, still_open),
    )
    position_rows = [_closed_row(row) for row in closed] + [_open_row(row) for row in still_open]
    hard: HardPart = {
        "currency": account.currency,
        "period": {
            "start": start.isoformat(),
            "end": end.isoformat(),
            "sessions": _sessions(scope, closed, still_open),
        },
        "attribution": _attribution_block(attribution),
        "waterfall": [{"label": row.label, "amount": _money(row.amount)} for row in waterfall_rows(attribution)],
        "inference_source": inference_source,
        "actions": _actions(scope, closed, truncated),
        "positions": position_rows,
        **_best_and_worst(position_rows),
        "inaction": _inaction(closed),
        "accuracy": _accuracy(scope, truncated),
        "heuristics": _heuristics(scope, closed),
        # The desk's calibration, on period reviews; a single position's review (run at once on
        # every close, replays included) leaves it to them.
        "calibration": None if position is not None else _calibration(scope),
    }
    hard["effectiveness"] = _effectiveness(attribution, hard["inaction"])
    if position is not None:
        hard["lifecycle"] = position_lifecycle_block(position)
    hard["bounded"] = {"buffer_size": scope.limit, "truncated": truncated}
    return hard


# --- positions -----------------------------------------------------------------------------------

_CLOSED_FIELDS = (
    "id",
    "direction",
    "quantity",
    "exit_reason",
    "opened_on",
    "closed_on",
    "instrument_id",
    "instrument__symbol",
    "order__costs",
    "thesis__run_id",
)
_CLOSED_MONEY = (
    "entry_price",
    "exit_price",
    "entry_costs",
    "exit_costs",
    "realised_pnl",
    "exit_reference",
    "order__reference_price",
    "dividends",
)
# What an old row's references are rebuilt from, read for those rows only (``_rebuild_inputs``).
_REBUILD_FIELDS = ("id", "order__fill_policy", "order__filled_on")
_REBUILD_MONEY = ("stop", "target")
_OPEN_FIELDS = ("id", "direction", "opened_on", "instrument_id", "instrument__symbol")
_MARKS = ("start_mark", "peak_mark", "end_mark")


def _exact_rows(
    queryset: QuerySet[Any], fields: Sequence[str], money: Sequence[str], limit: int
) -> list[dict[str, Any]]:
    """``queryset``'s first ``limit`` rows as dicts of ``fields``, with each of ``money`` (decimal
    columns, and the marks annotated as text) turned into an exact Decimal here rather than by
    Django's per-value converter, which was the largest single cost of a 10,000-position review
    (``bench/retrospective.py``). SQLite hands back the stored number, whose shortest repr is the
    decimal written (15 significant digits, as Django's own converter assumes); PostgreSQL hands
    back the Decimal itself; either way ``Decimal(str(value))`` is exact. The rows are read as
    tuples and each dict built once, the money already converted."""
    columns: list[str] = []  # the column read for each of ``money``
    wrapped: dict[str, ExpressionWrapper] = {}
    for index, name in enumerate(money):
        if name in _MARKS:  # already annotated as text
            columns.append(name)
            continue
        alias = f"exact_{index}"
        wrapped[alias] = ExpressionWrapper(F(name), output_field=CharField())
        columns.append(alias)
    names = (*fields, *money)
    plain = len(fields)
    found = queryset.annotate(**wrapped).values_list(*fields, *columns)[:limit]
    return [
        dict(
            zip(
                names,
                (*values[:plain], *[None if value is None else Decimal(str(value)) for value in values[plain:]]),
                strict=True,
            )
        )
        for values in found
    ]


def _mark_before(day: dt.date, *, inclusive: bool = False) -> Subquery:
    """The position's latest mark before ``day`` (on or before it when ``inclusive``), as text."""
    marks = PositionMark.objects.filter(position=OuterRef("pk"))
    marks = marks.filter(date__lte=day) if inclusive else marks.filter(date__lt=day)
    return Subquery(marks.order_by("-date").values("unrealised_pnl")[:1], output_field=CharField())


def _start_mark_of(start: dt.date) -> Case:
    """The mark a position enters the period at (``_start_mark``), read only for one opened before
    it: one opened in the period enters at zero, and its marks need not be searched."""
    return Case(When(opened_on__lt=start, then=_mark_before(start)), default=None, output_field=CharField())


def _peak_mark() -> Subquery:
    """The position's best mark before its exit session (the peak of its path before the exit), as
    text: their MAX, which needs no sort per position (nor, then, a sort of the rows around it)."""
    marks = PositionMark.objects.filter(position=OuterRef("pk"), date__lt=OuterRef("closed_on")).order_by()
    # MAX as a plain function: over the position's own marks, with no GROUP BY to spell out.
    peak = Func(F("unrealised_pnl"), function="MAX", output_field=CharField())
    return Subquery(marks.annotate(peak=peak).values("peak"), output_field=CharField())


def _bounded(rows: Iterable[dict[str, Any]], limit: int, name: str, truncated: list[str]) -> list[dict[str, Any]]:
    kept = list(rows)
    if len(kept) > limit:
        truncated.append(name)
        return kept[:limit]
    return kept


def _closed_rows(scope: Scope, truncated: list[str]) -> list[dict[str, Any]]:
    closed = (
        scope.closed()
        .annotate(start_mark=_start_mark_of(scope.start), peak_mark=_peak_mark())
        .order_by("-closed_on", "-id")
    )
    rows = _exact_rows(closed, _CLOSED_FIELDS, (*_CLOSED_MONEY, "start_mark", "peak_mark"), scope.limit + 1)
    return _bounded(rows, scope.limit, "positions", truncated)


def _open_rows(scope: Scope, truncated: list[str]) -> list[dict[str, Any]]:
    still_open = (
        scope.open_at_end()
        .annotate(start_mark=_start_mark_of(scope.start), end_mark=_mark_before(scope.end, inclusive=True))
        .order_by("-opened_on", "-id")
    )
    rows = _exact_rows(still_open, _OPEN_FIELDS, ("start_mark", "end_mark"), scope.limit + 1)
    return _bounded(rows, scope.limit, "open_positions", truncated)


def _start_mark(row: Mapping[str, Any], start: dt.date) -> Decimal:
    """A position opened before the period enters it at its last mark; one opened in it at zero."""
    if row["opened_on"] >= start or row["start_mark"] is None:
        return ZERO
    return Decimal(row["start_mark"])


def _open_position(row: Mapping[str, Any], start: dt.date) -> OpenPosition:
    end_mark = Decimal(row["end_mark"]) if row["end_mark"] is not None else ZERO
    return OpenPosition(unrealised_at_start=_start_mark(row, start), unrealised_at_end=end_mark, position_id=row["id"])


def regret_of(*, realised: Decimal, entry_costs: Decimal, peak_mark: Decimal | None) -> Decimal:
    """The lifecycle's regret from the position's best mark before its exit session
    (``reviews.domain.lifecycle``): the peak of the path (each mark less the entry costs, and the
    realised PnL at the exit) less the realised PnL; never negative."""
    peak = realised
    if peak_mark is not None:
        peak = max(peak, (Decimal(peak_mark) - entry_costs).quantize(PAISE, rounding=ROUND_HALF_UP))
    return peak - realised


def _closed_row(row: Mapping[str, Any]) -> dict[str, Any]:
    realised = row["realised_pnl"]
    realised_text = _money(realised)
    return {
        "id": row["id"],
        "symbol": row["instrument__symbol"],
        "direction": row["direction"],
        "opened_on": row["opened_on"].isoformat(),
        "closed_on": row["closed_on"].isoformat(),
        "realised_pnl": realised_text,
        "unrealised_pnl": None,
        "exit_reason": row["exit_reason"],
        "vs_inaction": realised_text,  # inaction earns exactly zero: realised − 0
        "regret": _money(regret_of(realised=realised, entry_costs=row["entry_costs"], peak_mark=row["peak_mark"])),
    }


def _open_row(row: Mapping[str, Any]) -> dict[str, Any]:
    end_mark = Decimal(row["end_mark"]) if row["end_mark"] is not None else ZERO
    return {
        "id": row["id"],
        "symbol": row["instrument__symbol"],
        "direction": row["direction"],
        "opened_on": row["opened_on"].isoformat(),
        "closed_on": None,
        "realised_pnl": None,
        "unrealised_pnl": _money(end_mark),
        "exit_reason": "",
        "vs_inaction": None,
        "regret": None,
    }


def _best_and_worst(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The closed positions with the highest and the lowest realised PnL (the earliest id on a tie)."""
    closed = [(Decimal(row["realised_pnl"]), row) for row in rows if row["realised_pnl"] is not None]
    if not closed:
        return {"best_position": None, "worst_position": None}
    _, best = max(closed, key=lambda pair: (pair[0], -pair[1]["id"]))
    _, worst = min(closed, key=lambda pair: (pair[0], pair[1]["id"]))
    return {"best_position": dict(best), "worst_position": dict(worst)}


def _inaction(closed: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Inaction (not trading: zero) beat every closed position that lost money."""
    beaten = sum(1 for row in closed if row["realised_pnl"] < 0)
    share = rate(beaten, len(closed))
    return {"positions": len(closed), "beaten_by_inaction": beaten, "superiority": _rate(share)}


# --- attribution ---------------------------------------------------------------------------------


def _closed_trades(
    rows: Sequence[Mapping[str, Any]], rebuild: Mapping[int, Mapping[str, Any]], start: dt.date
) -> list[ClosedTrade]:
    charges = _Charges(cost_model())
    rows = [{**row, **rebuild[row["id"]]} if row["id"] in rebuild else row for row in rows]
    bars = _reference_bars(rows)
    return [_closed_trade(row, bars, charges, start) for row in rows]


def _rebuild_inputs(scope: Scope, closed: Sequence[Mapping[str, Any]]) -> dict[int, dict[str, Any]]:
    """The order's fill policy and day and the levels of each closed row the broker wrote without a
    reference price, by id: one query when there are such rows, none otherwise, so the rows every
    review reads carry four columns fewer. The period's latest rows lacking a reference, as many as
    the review reads, include each of those it read."""
    if all(row["order__reference_price"] is not None and row["exit_reference"] is not None for row in closed):
        return {}
    lacking = (
        scope.closed()
        .filter(Q(order__reference_price__isnull=True) | Q(exit_reference__isnull=True))
        .order_by("-closed_on", "-id")
    )
    return {row["id"]: row for row in _exact_rows(lacking, _REBUILD_FIELDS, _REBUILD_MONEY, scope.limit)}


class _Charges:
    """The cost model's breakdown of an order, computed once per (side, quantity, price) in a
    review: the exit legs' lines are not stored, so each is recomputed, and exits of the same
    quantity at the same price (one instrument's stops, targets and closes on a day) repeat one."""

    def __init__(self, model: CostModel) -> None:
        self.model = model
        self._computed: dict[tuple[str, int, Decimal], CostBreakdown] = {}

    def of(self, side: str, quantity: int, price: Decimal) -> CostBreakdown:
        key = (side, quantity, price)
        breakdown = self._computed.get(key)
        if breakdown is None:
            breakdown = order_costs("BUY" if side == "BUY" else "SELL", quantity, price, self.model)
            self._computed[key] = breakdown
        return breakdown


def _reference_bars(rows: Sequence[Mapping[str, Any]]) -> dict[tuple[int, dt.date], tuple[Decimal, Decimal]]:
    """The (open, close) of the bars old rows' references are rebuilt from, in one query."""
    wanted: set[tuple[int, dt.date]] = set()
    for row in rows:
        if row["order__reference_price"] is None and row["order__filled_on"] is not None:
            wanted.add((row["instrument_id"], row["order__filled_on"]))
        if row["exit_reference"] is None:
            wanted.add((row["instrument_id"], row["closed_on"]))
    if not wanted:
        return {}
    found = DailyBar.objects.filter(
        instrument_id__in={key[0] for key in wanted}, date__in={key[1] for key in wanted}
    ).values_list("instrument_id", "date", "open", "close")
    return {(instrument, day): (bar_open, close) for instrument, day, bar_open, close in found}


def rebuilt_exit_reference(
    *, direction: Direction, reason: str, stop: Decimal, target: Decimal, bar_open: Decimal, bar_close: Decimal
) -> Decimal:
    """The price an old row's exit was taken at before slippage, as the broker's exit rule
    (``vocabulary.exits.check_exit``) set it: the stop or the target, or the bar's open when it
    gapped through the level; the close for a horizon exit or a close by hand."""
    long = direction == "LONG"
    if reason == "stop":
        gapped = bar_open <= stop if long else bar_open >= stop
        return bar_open if gapped else stop
    if reason == "target":
        gapped = bar_open >= target if long else bar_open <= target
        return bar_open if gapped else target
    return bar_close


def _references(
    row: Mapping[str, Any], bars: Mapping[tuple[int, dt.date], tuple[Decimal, Decimal]]
) -> tuple[Decimal, Decimal]:
    entry = row["order__reference_price"]
    if entry is None:
        bar = bars.get((row["instrument_id"], row["order__filled_on"]))
        opening = row["order__fill_policy"] == "next_open"
        entry = (bar[0] if opening else bar[1]) if bar else row["entry_price"]
    exit_reference = row["exit_reference"]
    if exit_reference is None:
        bar = bars.get((row["instrument_id"], row["closed_on"]))
        exit_reference = (
            rebuilt_exit_reference(
                direction=as_direction(row["direction"]),
                reason=row["exit_reason"],
                stop=row["stop"],
                target=row["target"],
                bar_open=bar[0],
                bar_close=bar[1],
            )
            if bar
            else row["exit_price"]
        )
    return entry, exit_reference


def _breakdown(
    stored: object, side: str, quantity: int, price: Decimal, total: Decimal, charges: _Charges
) -> CostBreakdown:
    """A leg's charges line by line: as the order stored them, else recomputed with the desk's cost
    model; when neither adds up to the stored total (the model changed since), the stored total is
    kept whole on the brokerage line, so the figures still add up to the paisa."""
    if isinstance(stored, Mapping) and all(line in stored for line in COST_LINES):
        breakdown = CostBreakdown(*(Decimal(str(stored[line])) for line in COST_LINES))
        if breakdown.total == total:
            return breakdown
    breakdown = charges.of(side, quantity, price)
    if breakdown.total == total:
        return breakdown
    return CostBreakdown(brokerage=total, stt=ZERO, exchange_charge=ZERO, sebi_fee=ZERO, stamp_duty=ZERO, gst=ZERO)


def _closed_trade(
    row: Mapping[str, Any],
    bars: Mapping[tuple[int, dt.date], tuple[Decimal, Decimal]],
    charges: _Charges,
    start: dt.date,
) -> ClosedTrade:
    direction = as_direction(row["direction"])
    quantity = row["quantity"]
    known = {
        "direction": direction,
        "quantity": quantity,
        "entry_price": row["entry_price"],
        "exit_price": row["exit_price"],
        "entry_costs": _breakdown(
            row["order__costs"], entry_side(direction), quantity, row["entry_price"], row["entry_costs"], charges
        ),
        "exit_costs": _breakdown(None, exit_side(direction), quantity, row["exit_price"], row["exit_costs"], charges),
        "realised_pnl": row["realised_pnl"],
        "manual_exit": row["exit_reason"] == MANUAL_EXIT,
        "unrealised_at_start": _start_mark(row, start),
        "position_id": row["id"],
        "dividends": row["dividends"],
    }
    entry_reference, exit_reference = _references(row, bars)
    try:
        return ClosedTrade(**known, entry_reference=entry_reference, exit_reference=exit_reference)
    except AttributionInputError:
        pass
    try:  # a rebuilt reference the fill contradicts: show no slippage rather than a made-up one
        return ClosedTrade(**known, entry_reference=row["entry_price"], exit_reference=row["exit_price"])
    except AttributionInputError as problem:
        raise HardPartError(f"the book's rows do not add up, so no review is written: {problem}") from problem


def _inference_cost(scope: Scope) -> Decimal:
    """The recorded cost of the model calls of the period's runs (a position's: its own run's), in
    the price table's currency."""
    runs = scope.runs()
    if scope.position is None:
        runs = runs.filter(as_of__gte=scope.start, as_of__lte=scope.end)
    total = ModelCall.objects.filter(run__in=runs.values("pk")).aggregate(total=Sum("cost"))["total"]
    return Decimal(total or 0)


def inference_in_account_currency(recorded: Decimal, *, account_currency: str) -> tuple[Decimal, dict[str, Any]]:
    """The model calls' bill in the account's currency, and where it came from.

    The price table (``LLM["PRICES"]``) has its own currency (USD by default). When it is the
    account's, the bill counts as recorded; otherwise it is converted at ``RETROSPECTIVE
    ["INFERENCE_RATE"]`` (account currency per unit of the table's, ``DESK_INFERENCE_RATE``). With
    no rate set, a non-zero bill is not counted at all, and the hard part says so with the amount:
    adding dollars to rupees would put a wrong figure in the net result."""
    table_currency = PriceTable.from_mapping(settings.LLM["PRICES"]).currency
    rate_text = str(settings.RETROSPECTIVE.get("INFERENCE_RATE") or "").strip()
    source: dict[str, Any] = {
        "recorded": f"{recorded.quantize(Decimal('0.000001')):f}",  # as ModelCall.cost stores it, on any database
        "currency": table_currency,
        "rate": None,
        "counted": True,
        "note": "",
    }
    if table_currency == account_currency or recorded == 0:
        return recorded, source
    if not rate_text:
        source["counted"] = False
        source["note"] = (
            f"model calls cost {recorded.normalize():f} {table_currency}, not counted: set DESK_INFERENCE_RATE "
            f"({account_currency} per {table_currency}) to count them"
        )
        return Decimal(0), source
    rate = Decimal(rate_text)
    source["rate"] = f"{rate:f}"
    return recorded * rate, source


def _max_drawdown(
    scope: Scope, closed: Sequence[Mapping[str, Any]], still_open: Sequence[Mapping[str, Any]]
) -> Decimal | None:
    """The period's largest fall of equity from a peak: the book's value before the period, then
    each session's realised results so far and its marks (the drawdown's amount does not depend on
    the level the curve starts at, so the capital stands in for the equity before the period)."""
    realised_by_day: dict[dt.date, Decimal] = defaultdict(lambda: ZERO)
    for row in closed:
        realised_by_day[row["closed_on"]] += row["realised_pnl"]
    live = (
        scope.positions()
        .filter(opened_on__lte=scope.end)
        .filter(Q(closed_on__isnull=True) | Q(closed_on__gte=scope.start))
    )
    marks = dict(
        PositionMark.objects.filter(position__in=live.values("pk"), date__gte=scope.start, date__lte=scope.end)
        .values_list("date")
        .annotate(total=Sum("unrealised_pnl"))
        .order_by("date")
    )
    before = sum((_start_mark(row, scope.start) for row in [*closed, *still_open]), ZERO)
    levels = [before]
    realised = ZERO
    for day in sorted(set(realised_by_day) | set(marks)):
        realised += realised_by_day.get(day, ZERO)
        levels.append(realised + marks.get(day, ZERO))
    base = scope.account.capital + max(ZERO, -min(levels)) + 1
    start = scope.start - dt.timedelta(days=1)
    points = [EquityPoint(start + dt.timedelta(days=index), base + level) for index, level in enumerate(levels)]
    return max_drawdown(points).amount


def _attribution_block(attribution: Attribution) -> dict[str, Any]:
    return {
        "gains": _money(attribution.gains),
        "losses": _money(attribution.losses),
        "slippage": _money(attribution.slippage),
        "costs": {line: _money(ZERO - getattr(attribution.charges, line)) for line in COST_LINES},
        "costs_total": _money(attribution.costs),
        "dividends": _money(attribution.dividends),
        "manual": _money(attribution.manual),
        "unrealised": _money(attribution.unrealised),
        "inference": _money(attribution.inference),
        "net": _money(attribution.net),
        "operational_cost": _money(attribution.operational_cost),
        "risk_adjusted": None
        if attribution.risk_adjusted_return is None
        else f"{attribution.risk_adjusted_return:.2f}",
    }


# --- actions -------------------------------------------------------------------------------------


def _actions(scope: Scope, closed: Sequence[Mapping[str, Any]], truncated: list[str]) -> dict[str, Any]:
    """Entries (orders filled), exits (positions closed, by reason), HOLD decisions (strategy runs
    that held, pipeline runs held back by a live idea) and theses a person or the risk engine refused."""
    in_period = {"as_of__gte": scope.start, "as_of__lte": scope.end}
    entries = Order.objects.filter(
        pk__in=scope.positions().values("order_id"),
        status=Order.Status.FILLED,
        filled_on__gte=scope.start,
        filled_on__lte=scope.end,
    ).count()
    by_reason = Counter(row["exit_reason"] or "unknown" for row in closed)
    exits = len(closed)
    if "positions" in truncated:
        exits = scope.closed().count()
        by_reason = Counter(
            {
                reason or "unknown": count
                for reason, count in scope.closed().values_list("exit_reason").annotate(n=Count("id")).order_by()
            }
        )
    holds = 0
    rejected = 0
    if scope.position is None:
        held_runs = scope.runs().filter(status=PipelineRun.Status.HELD, **in_period).count()
        held_days = scope.strategy_runs().filter(decision=StrategyRun.Decision.HOLD, **in_period).count()
        holds = held_runs + held_days
        rejected = (
            scope.theses()
            .filter(
                status__in=[Thesis.Status.REJECTED, Thesis.Status.REJECTED_BY_RISK],
                run__as_of__gte=scope.start,
                run__as_of__lte=scope.end,
            )
            .count()
        )
    return {
        "entries": entries,
        "exits": exits,
        "holds": holds,
        "rejected": rejected,
        "exits_by_reason": dict(sorted(by_reason.items())),
    }


def _sessions(scope: Scope, closed: Sequence[Mapping[str, Any]], still_open: Sequence[Mapping[str, Any]]) -> int:
    """Trading sessions in the period: the days the book's instruments (any instrument when it
    held none) have bars."""
    instruments = {row["instrument_id"] for row in [*closed, *still_open]}
    bars = DailyBar.objects.filter(date__gte=scope.start, date__lte=scope.end)
    if instruments:
        bars = bars.filter(instrument_id__in=instruments)
    return bars.values("date").distinct().count()


# --- accuracy ------------------------------------------------------------------------------------

_THESIS_FIELDS = ("id", "run_id", "run__as_of", "instrument_id", "direction", "horizon_sessions")
_THESIS_MONEY = ("stop", "target", "entry")


def _horizon_days(sessions: int) -> int:
    return math.ceil(sessions * 7 / 5) + HOLIDAY_DAYS


def _candidate_theses(scope: Scope, truncated: list[str]) -> list[dict[str, Any]]:
    """The theses whose horizon may have ended in the period: decided at most the longest horizon
    (in calendar days) before it."""
    theses = scope.theses()
    if scope.position is None:
        recent = theses.filter(
            run__as_of__gte=scope.start - dt.timedelta(days=MAX_HORIZON_DAYS), run__as_of__lte=scope.end
        )
        longest = recent.aggregate(longest=Max("horizon_sessions"))["longest"] or 0
        theses = theses.filter(
            run__as_of__gte=scope.start - dt.timedelta(days=_horizon_days(longest)), run__as_of__lte=scope.end
        )
    rows = _exact_rows(theses.order_by("-run__as_of", "-id"), _THESIS_FIELDS, _THESIS_MONEY, scope.limit + 1)
    return _bounded(rows, scope.limit, "theses", truncated)


def _candidate_forecasts(scope: Scope, truncated: list[str]) -> list[tuple[int, int, dt.date, Any]]:
    """The runs whose forecast band may have resolved in the period, with the band from the
    features they were shown (``FeatureSnapshot.bundle["forecast"]``)."""
    runs = scope.runs().filter(feature_snapshot__isnull=False, feature_snapshot__bundle__forecast__isnull=False)
    if scope.position is None:
        horizon = int(settings.DESK["FORECAST_HORIZON_SESSIONS"])
        runs = runs.filter(as_of__gte=scope.start - dt.timedelta(days=_horizon_days(horizon)), as_of__lte=scope.end)
    rows = list(
        runs.annotate(forecast=_json_key("feature_snapshot__bundle", "forecast"))
        .order_by("-as_of", "-id")
        .values_list("id", "instrument_id", "as_of", "forecast")[: scope.limit + 1]
    )
    if len(rows) > scope.limit:
        truncated.append("forecasts")
        rows = rows[: scope.limit]
    return rows


@dataclass(frozen=True)
class _Series:
    """One instrument's bars in date order."""

    bars: tuple[Bar, ...]
    dates: tuple[dt.date, ...]

    def after(self, day: dt.date, count: int) -> tuple[Bar, ...]:
        """The first ``count`` bars after ``day`` (fewer when the series ends sooner)."""
        first = bisect_right(self.dates, day)
        return self.bars[first : first + count]

    def close_on(self, day: dt.date) -> Decimal | None:
        index = bisect_left(self.dates, day)
        return self.bars[index].close if index < len(self.dates) and self.dates[index] == day else None


def _series(instruments: set[int], first: dt.date, end: dt.date) -> dict[int, _Series]:
    """Every bar of these instruments from ``first`` to ``end``, in one query."""
    grouped: dict[int, list[Bar]] = defaultdict(list)
    found = (
        DailyBar.objects.filter(instrument_id__in=instruments, date__gte=first, date__lte=end)
        .order_by("instrument_id", "date")
        .values_list("instrument_id", "date", "open", "high", "low", "close")
    )
    for instrument, day, bar_open, high, low, close in found:
        grouped[instrument].append(Bar(day, bar_open, high, low, close))
    return {instrument: _Series(tuple(bars), tuple(bar.date for bar in bars)) for instrument, bars in grouped.items()}


def _accuracy(scope: Scope, truncated: list[str]) -> dict[str, Any]:
    theses = _candidate_theses(scope, truncated)
    forecasts = _candidate_forecasts(scope, truncated)
    days = [row["run__as_of"] for row in theses] + [row[2] for row in forecasts]
    instruments = {row["instrument_id"] for row in theses} | {row[1] for row in forecasts}
    series = _series(instruments, min(days), scope.end) if days else {}
    resolved = _resolved_theses(scope, theses, series)
    return {
        **_calls(resolved),
        "levels": _levels(resolved),
        "forecast": _forecast_coverage(scope, forecasts, series),
    }


def _resolved_theses(
    scope: Scope, theses: Sequence[Mapping[str, Any]], series: Mapping[int, _Series]
) -> dict[int, ThesisResolution]:
    """Each thesis whose horizon ended in the period, by its run's id."""
    resolved: dict[int, ThesisResolution] = {}
    for row in theses:
        bars = series.get(row["instrument_id"])
        if bars is None:
            continue
        decision_close = bars.close_on(row["run__as_of"]) or row["entry"]
        resolution = resolve_thesis(
            direction=as_direction(row["direction"]),
            stop=row["stop"],
            target=row["target"],
            horizon_sessions=row["horizon_sessions"],
            decision_close=decision_close,
            bars=bars.after(row["run__as_of"], row["horizon_sessions"]),  # all it reads
        )
        if resolution is not None and scope.start <= resolution.resolved_on <= scope.end:
            resolved[row["run_id"]] = resolution
    return resolved


def _calls(resolved: Mapping[int, ThesisResolution]) -> dict[str, Any]:
    """Each analyst's stance and the debate's winner against the realised move, counted in the
    database: per move, the runs that moved that way, their calls grouped by role and side. A
    handful of rows come back, not every note."""
    analysts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    research: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    debate = [0, 0]
    for move in (1, -1):
        runs = [run for run, resolution in resolved.items() if resolution.move == move]
        for chunk in (runs[index : index + CHUNK] for index in range(0, len(runs), CHUNK)):
            # ``run__id__in``, not ``run_id__in``: the same SQL (no join once unordered), built in
            # about half the time, as it skips the related lookup's normalising of each id.
            notes = (
                AnalystNoteRecord.objects.filter(run__id__in=chunk)
                .annotate(call=_NOTE_SIDE)
                .values_list("role", "call")
                .annotate(n=Count("id"))
                .order_by()
            )
            for role, call, count in notes:
                _count(analysts[role], call_right(call, move), count)
            winners = (
                DebateRecord.objects.filter(run__id__in=chunk).values_list("winner").annotate(n=Count("id")).order_by()
            )
            for winner, count in winners:
                _count(debate, call_right(1 if winner == "LONG" else -1, move), count)
            _research_calls(research, chunk, move)
    return {
        "analysts": [
            {"role": role, **Tally(calls=calls, right=right).to_dict()}
            for role, (calls, right) in sorted(analysts.items())
        ],
        "debate": Tally(calls=debate[0], right=debate[1]).to_dict(),
        "research_signals": [
            {"signal": name, **Tally(calls=calls, right=right).to_dict()}
            for name, (calls, right) in sorted(research.items())
        ],
    }


def _research_calls(totals: dict[str, list[int]], runs: Sequence[int], move: int) -> None:
    """The research signals a person attached to the strategy, as each run read them (its context
    stage keeps each one's position as of the run's day), counted against the realised move like an
    analyst's call."""
    rows = (
        StageRun.objects.filter(run__id__in=runs, stage="context")
        .annotate(signals=_json_key("output", "research_signals"))
        .values_list("signals", flat=True)
        .order_by()  # the model's ordering would join the runs to sort rows that are only counted
    )
    for signals in rows:
        for entry in signals or []:
            reading = entry.get("reading") if isinstance(entry, Mapping) else None
            position = reading.get("position") if isinstance(reading, Mapping) else None
            if isinstance(position, int) and not isinstance(position, bool):
                _count(totals[str(entry.get("name", "?"))], call_right(position, move), 1)


def _json_key(field: str, key: str) -> KeyTransform:
    """``field__key`` of a JSON column, for ``values_list``. Named there, Django first tries the
    key as a field and keeps the refusal in a reference cycle that holds every frame above it, the
    review's rows included, until the collector runs: ~50,000 objects and a twentieth of a
    10,000-position review, and the rows' memory held meanwhile. Built here, the path is only fields."""
    return KeyTransform(key, field)


# A note's call: +1 bullish, -1 bearish, 0 for an abstention or a stance of zero (no side taken).
_NOTE_SIDE = Case(
    When(abstained=True, then=0),
    When(stance__gt=0, then=1),
    When(stance__lt=0, then=-1),
    default=0,
    output_field=IntegerField(),
)
# Run ids bound per query: well under SQLite's 32,766 parameters.
CHUNK = 10_000


def _count(totals: list[int], right: bool | None, count: int) -> None:
    """Add ``count`` calls that resolved ``right`` (None: no side, or no move) to [calls, right]."""
    if right is None:
        return
    totals[0] += count
    totals[1] += count if right else 0


def _levels(resolved: Mapping[int, ThesisResolution]) -> dict[str, Any]:
    outcomes = Counter(resolution.levels for resolution in resolved.values())
    theses = len(resolved)
    return {
        "theses": theses,
        "target_hit": outcomes["target"],
        "stop_hit": outcomes["stop"],
        "neither": outcomes["neither"],
        "hit_rate": _rate(rate(outcomes["target"], theses)),
    }


def _forecast_coverage(
    scope: Scope, forecasts: Sequence[tuple[int, int, dt.date, Any]], series: Mapping[int, _Series]
) -> dict[str, Any]:
    """How often the realised close at the forecast's horizon fell inside its band, over the bands
    whose horizon ended in the period."""
    resolved = inside = 0
    for _run, instrument, as_of, forecast in forecasts:
        band = _band(forecast)
        bars = series.get(instrument)
        if band is None or bars is None:
            continue
        low, high, horizon = band
        after = bars.after(as_of, horizon)
        if len(after) < horizon or not scope.start <= after[-1].date <= scope.end:
            continue
        resolved += 1
        inside += forecast_covers(low_price=low, high_price=high, close=after[-1].close)
    return {"resolved": resolved, "inside": inside, "coverage": _rate(rate(inside, resolved))}


def _band(forecast: object) -> tuple[Decimal, Decimal, int] | None:
    """(low price, high price, horizon in sessions) of a stored forecast, or None when it lacks one."""
    if not isinstance(forecast, Mapping):
        return None
    low, high, horizon = (forecast.get(key) for key in ("low_price", "high_price", "horizon_sessions"))
    if low is None or high is None or not isinstance(horizon, int) or horizon < 1:
        return None
    return Decimal(str(low)), Decimal(str(high)), horizon


# --- heuristics, calibration, effectiveness, lifecycle -------------------------------------------


def _heuristics(scope: Scope, closed: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The audit of every active heuristic (and any other cited in the period): the PnL of the
    closed positions whose entry run cited it (once per position, accepted citations only)."""
    pnl_by_run = {row["thesis__run_id"]: row["realised_pnl"] for row in closed}
    cited = (
        # The runs of the closed positions' theses, read from the positions (no join through the runs).
        HeuristicCitation.objects.filter(accepted=True, run__id__in=scope.closed().values("thesis__run_id"))
        .values_list("run_id", "code")
        .order_by()  # the model's ordering would enter the DISTINCT and count a code once per role
        .distinct()
    )
    outcomes: dict[str, list[Decimal]] = defaultdict(list)
    for run_id, code in cited:
        if run_id in pnl_by_run:
            outcomes[code].append(pnl_by_run[run_id])
    active = Heuristic.objects.filter(status=Heuristic.Status.ACTIVE).values_list("code", flat=True)
    codes = sorted(set(active) | set(outcomes), key=_code_number)
    lines = audit_settings()
    reports = [audit_heuristic(code, outcomes.get(code, []), lines) for code in codes]
    return [
        {
            "code": report.code,
            "citations": report.citations,
            "total_pnl": _money(report.total_pnl),
            "win_rate": _rate(report.win_rate),
            "average_pnl": None if report.average_pnl is None else _money(report.average_pnl),
            "recommendation": report.recommendation,
        }
        for report in reports
    ]


def _code_number(code: str) -> tuple[int, str]:
    digits = code.removeprefix("H-")
    return (int(digits), code) if digits.isdigit() else (10**9, code)


def _calibration(scope: Scope) -> dict[str, Any] | None:
    """The calibration summary up to the period's end, when the desk has it (``reviews.calibration_service``)."""
    try:
        from reviews.calibration_service import calibration_summary
    except ImportError:
        return None
    return calibration_summary(account=scope.account, end=scope.end)


def _effectiveness(attribution: Attribution, inaction: Mapping[str, Any]) -> dict[str, str | None]:
    return effectiveness(
        net=attribution.net,
        risk_adjusted=attribution.risk_adjusted_return,
        positions=inaction["positions"],
        beaten_by_inaction=inaction["beaten_by_inaction"],
    ).to_dict()


def position_lifecycle_block(position: Position) -> dict[str, object] | None:
    """A closed position's lifecycle (``reviews.selectors.position_lifecycle_for``) as the hard
    part holds it; None while it is open."""
    if position.status != Position.Status.CLOSED:
        return None
    return position_lifecycle_for(position).to_dict()


# --- formatting ----------------------------------------------------------------------------------


def _money(amount: Decimal) -> str:
    return f"{Decimal(amount).quantize(PAISE, rounding=ROUND_HALF_UP):.2f}"


def _rate(share: Decimal | None) -> str | None:
    return None if share is None else f"{share:.4f}"
