"""Reads for the runs pages: a fixed number of queries per page, whatever the history."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal

from django.core.paginator import Page, Paginator
from django.db.models import F, QuerySet, Sum

from agents.models import ModelCall
from trading import edge
from trading.models import PipelineRun, Position, Strategy
from vocabulary.money import format_money
from vocabulary.performance import win_rate

# Runs a page of the runs list shows; the pages after it are one link away.
RUNS_PER_PAGE = 50
KINDS = ("live", "replay", "all")
STATUSES = tuple(PipelineRun.Status.values)


@dataclass(frozen=True)
class RunRow:
    """One line of the runs page: the run, and what its model calls came to (zero for none)."""

    run: PipelineRun
    tokens: int
    cost: Decimal


@dataclass(frozen=True)
class RunFilters:
    """What the runs list is narrowed to, read from the query string: ``kind`` live (the default),
    replay or all (``?replay=1``, the older flag, is ``all``), a ``strategy`` id, a ``status``, an
    instrument ``symbol``. ``problems`` are the values refused, each with why: a refused filter
    is dropped and said so, never silently ignored."""

    kind: str = "live"
    strategy: int | None = None
    status: str = ""
    symbol: str = ""
    problems: tuple[str, ...] = field(default=())

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> RunFilters:
        problems: list[str] = []
        kind = _kind(query, problems)
        status = _optional(query, "status", problems, lambda text: edge.parse_choice(text, "status", STATUSES))
        symbol = _optional(query, "symbol", problems, lambda text: edge.parse_name(text, "symbol").upper())
        strategy = _strategy(query.get("strategy"), problems)
        return cls(kind=kind, strategy=strategy, status=status, symbol=symbol, problems=tuple(problems))

    def query(self) -> dict[str, str]:
        """The filters as query parameters (without the defaults): what page links carry along."""
        values = {
            "kind": self.kind if self.kind != "live" else "",
            "strategy": str(self.strategy) if self.strategy is not None else "",
            "status": self.status,
            "symbol": self.symbol,
        }
        return {name: value for name, value in values.items() if value}

    def apply(self, runs: QuerySet[PipelineRun]) -> QuerySet[PipelineRun]:
        if self.kind == "live":
            runs = runs.filter(is_replay=False)
        elif self.kind == "replay":
            runs = runs.filter(is_replay=True)
        if self.strategy is not None:
            runs = runs.filter(strategy_run__strategy_id=self.strategy)
        if self.status:
            runs = runs.filter(status=self.status)
        if self.symbol:
            runs = runs.filter(instrument__symbol=self.symbol)
        return runs


def _kind(query: Mapping[str, str], problems: list[str]) -> str:
    if (query.get("kind") or "").strip():
        return _optional(query, "kind", problems, lambda text: edge.parse_choice(text, "kind", KINDS)) or "live"
    try:
        return "all" if edge.parse_flag(query.get("replay"), "replay") else "live"
    except edge.InputInvalid as problem:
        problems.append(problem.message)
        return "live"


def _optional(query: Mapping[str, str], name: str, problems: list[str], parse: Callable[[str], str]) -> str:
    text = (query.get(name) or "").strip()
    if not text:
        return ""
    try:
        return parse(text)
    except edge.InputInvalid as problem:
        problems.append(problem.message)
        return ""


def _strategy(text: str | None, problems: list[str]) -> int | None:
    value = (text or "").strip()
    if not value:
        return None
    if not value.isdigit() or len(value) > 9:
        problems.append(f"strategy {edge.short(value)!r} is not a strategy's id")
        return None
    return int(value)


def page_number(text: str | None) -> tuple[int, str]:
    """The page asked for and, when the value is not a page number, why (page 1 is shown)."""
    value = (text or "").strip()
    if not value:
        return 1, ""
    if not value.isdigit() or not 0 < int(value) < 10**9:
        return 1, f"page {edge.short(value)!r} is not a page number"
    return int(value), ""


def run_page(filters: RunFilters, number: int, *, per_page: int = RUNS_PER_PAGE) -> tuple[Page, list[RunRow]]:
    """A page of the runs list, newest first, with the total: a count, the page's runs (with their
    instrument, thesis and strategy) and their model-call sums, three queries whatever the history.
    A page past the last shows the last."""
    runs = filters.apply(
        PipelineRun.objects.select_related("instrument", "thesis", "strategy_run__strategy").order_by(
            "-created_at", "-id"
        )
    )
    page = Paginator(runs, per_page).get_page(number)
    return page, rows_for(list(page.object_list))


def run_rows(*, with_replays: bool, limit: int = 100) -> list[RunRow]:
    """The latest ``limit`` runs with their sums (live only unless ``with_replays``)."""
    runs = PipelineRun.objects.select_related("instrument", "thesis").order_by("-created_at", "-id")
    if not with_replays:
        runs = runs.filter(is_replay=False)
    return rows_for(list(runs[:limit]))


def rows_for(runs: list[PipelineRun]) -> list[RunRow]:
    """Each run with ``tokens`` and ``cost`` summed over its model calls, in one query for these
    runs only (summing before the page is cut made the page scan every model call ever recorded)."""
    totals = {
        row["run_id"]: row
        for row in ModelCall.objects.filter(run_id__in=[run.pk for run in runs])
        .values("run_id")
        .annotate(tokens=Sum(F("input_tokens") + F("output_tokens")), cost=Sum("cost"))
        .order_by()
    }
    rows = []
    for run in runs:
        summed = totals.get(run.pk, {})
        rows.append(RunRow(run=run, tokens=summed.get("tokens") or 0, cost=summed.get("cost") or Decimal(0)))
    return rows


def strategy_choices() -> list[tuple[int, str]]:
    """The strategies the runs list can be narrowed to, by name."""
    return list(Strategy.objects.order_by("name").values_list("pk", "name"))


# --- the strategies page ------------------------------------------------------------------------


@dataclass(frozen=True)
class StrategyPerformance:
    """A strategy's book, live or in its history replay, from the stored positions of the theses
    its runs made: positions taken, open and closed ones, the win rate of the closed ones
    (``vocabulary.performance.win_rate``: a break-even trade is not a win) and their realised
    profit, net of entry and exit costs and of dividends (as the broker stores it)."""

    positions: int = 0
    open: int = 0
    closed: int = 0
    win_rate: float = 0.0
    realised: Decimal = Decimal(0)
    currency: str = "INR"

    def labels(self) -> dict[str, str]:
        """The figures as the page shows them (the live updates place these strings)."""
        return {
            "positions": f"{self.positions:,}",
            "open": f"{self.open:,}",
            "closed": f"{self.closed:,}",
            "win_rate": f"{self.win_rate * 100:.1f}%" if self.closed else "—",
            "realised": format_money(self.realised, self.currency),
        }


def strategy_performance(strategy_ids: list[int]) -> dict[tuple[int, bool], StrategyPerformance]:
    """(strategy id, is replay) → its performance, for these strategies, in one query."""
    rows = (
        Position.objects.filter(thesis__run__strategy_run__strategy_id__in=strategy_ids)
        .values_list(
            "thesis__run__strategy_run__strategy_id", "is_replay", "status", "realised_pnl", "account__currency"
        )
        .order_by()
    )
    grouped: dict[tuple[int, bool], list[tuple[str, Decimal | None, str]]] = {}
    for strategy_id, is_replay, status, realised, currency in rows:
        grouped.setdefault((strategy_id, is_replay), []).append((status, realised, currency))
    performance = {}
    for key, positions in grouped.items():
        closed = [realised or Decimal(0) for status, realised, _ in positions if status == Position.Status.CLOSED]
        performance[key] = StrategyPerformance(
            positions=len(positions),
            open=len(positions) - len(closed),
            closed=len(closed),
            win_rate=win_rate(closed),
            realised=sum(closed, Decimal(0)),
            currency=positions[0][2],
        )
    return performance
