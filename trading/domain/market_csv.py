"""Row-by-row validation of market-data CSV files, without touching storage.

Each parser returns the rows it accepted and a list of problems, each with its line number and a
plain reason. The importer writes nothing unless the list of problems is empty.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from zoneinfo import ZoneInfo

PRICE_QUANTUM = Decimal("0.0001")
RATIO_QUANTUM = Decimal("0.0001")
MAX_HEADLINE = 500

BAR_COLUMNS = ("symbol", "date", "open", "high", "low", "close", "volume")
NEWS_COLUMNS = ("symbol", "headline", "source", "published_at")
FUNDAMENTAL_COLUMNS = ("symbol", "as_of", "pe", "pb", "ev_ebitda", "revenue_growth_pct", "net_margin_pct")
FUNDAMENTAL_RATIOS = FUNDAMENTAL_COLUMNS[2:]
MARKET_WIDE = ("", "*")


@dataclass(frozen=True)
class RowProblem:
    line: int
    reason: str


@dataclass(frozen=True)
class BarRow:
    line: int
    symbol: str
    date: dt.date
    open: Decimal
    high: Decimal
    low: Decimal
    close: Decimal
    volume: int


@dataclass(frozen=True)
class NewsRow:
    line: int
    symbol: str | None  # None: market-wide
    headline: str
    source: str
    published_at: dt.datetime
    url: str


@dataclass(frozen=True)
class FundamentalsRow:
    line: int
    symbol: str
    as_of: dt.date
    source: str
    ratios: dict[str, Decimal | None]


class _RowError(ValueError):
    pass


def missing_columns(header: Sequence[str] | None, required: Sequence[str]) -> list[str]:
    present = {name.strip().lower() for name in header or ()}
    return [name for name in required if name not in present]


def _clean(row: Mapping[str, str | None]) -> dict[str, str]:
    return {(key or "").strip().lower(): (value or "").strip() for key, value in row.items()}


def parse_date(text: str, column: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise _RowError(f"{column} {text!r} is not a date (expected YYYY-MM-DD)") from None


def parse_datetime(text: str, column: str, default_tz: ZoneInfo) -> dt.datetime:
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        raise _RowError(f"{column} {text!r} is not a date-time (expected ISO 8601)") from None
    return value if value.tzinfo else value.replace(tzinfo=default_tz)


def parse_decimal(text: str, column: str, *, quantum: Decimal = PRICE_QUANTUM) -> Decimal:
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise _RowError(f"{column} {text!r} is not a number") from None
    if not value.is_finite():
        raise _RowError(f"{column} {text!r} is not a finite number")
    return value.quantize(quantum, rounding=ROUND_HALF_EVEN)


def parse_volume(text: str) -> int:
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise _RowError(f"volume {text!r} is not a number") from None
    if not value.is_finite() or value != value.to_integral_value():
        raise _RowError(f"volume {text!r} is not a whole number")
    if value <= 0:
        raise _RowError(f"volume {text} is not positive")
    return int(value)


def _parse_bar(line: int, row: dict[str, str]) -> BarRow:
    symbol = row["symbol"].upper()
    if not symbol:
        raise _RowError("symbol is empty")
    date = parse_date(row["date"], "date")
    prices = {name: parse_decimal(row[name], name) for name in ("open", "high", "low", "close")}
    for name, value in prices.items():
        if value <= 0:
            raise _RowError(f"{name} {value} is not positive")
    high, low = prices["high"], prices["low"]
    if high < low:
        raise _RowError(f"high {high} is below low {low}")
    for name in ("open", "close"):
        if not low <= prices[name] <= high:
            raise _RowError(f"{name} {prices[name]} is outside the day's range [{low}, {high}]")
    return BarRow(line=line, symbol=symbol, date=date, volume=parse_volume(row["volume"]), **prices)


def parse_bar_rows(
    rows: Iterable[Mapping[str, str | None]], *, first_line: int = 2
) -> tuple[list[BarRow], list[RowProblem]]:
    """Validate bars. Within a symbol, dates must be strictly increasing: a repeat is a duplicate
    and an earlier date after a later one is out of order (a sign of a spliced or corrupt file)."""
    accepted: list[BarRow] = []
    problems: list[RowProblem] = []
    last_date: dict[str, dt.date] = {}
    seen: dict[tuple[str, dt.date], int] = {}
    for line, raw in enumerate(rows, start=first_line):
        try:
            bar = _parse_bar(line, _clean(raw))
        except _RowError as error:
            problems.append(RowProblem(line, str(error)))
            continue
        key = (bar.symbol, bar.date)
        if key in seen:
            problems.append(RowProblem(line, f"duplicate date {bar.date} for {bar.symbol} (first on line {seen[key]})"))
            continue
        previous = last_date.get(bar.symbol)
        if previous is not None and bar.date < previous:
            problems.append(RowProblem(line, f"out of order: {bar.symbol} {bar.date} comes after {previous}"))
            continue
        seen[key] = line
        last_date[bar.symbol] = bar.date
        accepted.append(bar)
    return accepted, problems


def _parse_news(line: int, row: dict[str, str], default_tz: ZoneInfo) -> NewsRow:
    headline = " ".join(row["headline"].split())
    if not headline:
        raise _RowError("headline is empty")
    if len(headline) > MAX_HEADLINE:
        raise _RowError(f"headline is {len(headline)} characters (at most {MAX_HEADLINE})")
    source = row["source"]
    if not source:
        raise _RowError("source is empty")
    symbol = row["symbol"].upper()
    return NewsRow(
        line=line,
        symbol=None if symbol in MARKET_WIDE else symbol,
        headline=headline,
        source=source,
        published_at=parse_datetime(row["published_at"], "published_at", default_tz),
        url=row.get("url", ""),
    )


def parse_news_rows(
    rows: Iterable[Mapping[str, str | None]], *, default_tz: ZoneInfo, first_line: int = 2
) -> tuple[list[NewsRow], list[RowProblem]]:
    """Validate headlines; an empty symbol or ``*`` marks a market-wide item. A date-time without an
    offset is read in ``default_tz`` (the desk's time zone)."""
    accepted: list[NewsRow] = []
    problems: list[RowProblem] = []
    for line, raw in enumerate(rows, start=first_line):
        try:
            accepted.append(_parse_news(line, _clean(raw), default_tz))
        except _RowError as error:
            problems.append(RowProblem(line, str(error)))
    return accepted, problems


def _parse_fundamentals(line: int, row: dict[str, str]) -> FundamentalsRow:
    symbol = row["symbol"].upper()
    if not symbol:
        raise _RowError("symbol is empty")
    as_of = parse_date(row["as_of"], "as_of")
    ratios = {
        name: parse_decimal(row[name], name, quantum=RATIO_QUANTUM) if row.get(name) else None
        for name in FUNDAMENTAL_RATIOS
    }
    if all(value is None for value in ratios.values()):
        raise _RowError("every ratio is empty")
    return FundamentalsRow(line=line, symbol=symbol, as_of=as_of, source=row.get("source") or "csv", ratios=ratios)


def parse_fundamentals_rows(
    rows: Iterable[Mapping[str, str | None]], *, first_line: int = 2
) -> tuple[list[FundamentalsRow], list[RowProblem]]:
    """Validate fundamentals snapshots. Blank ratios are allowed (not reported); a row with none is not."""
    accepted: list[FundamentalsRow] = []
    problems: list[RowProblem] = []
    seen: dict[tuple[str, dt.date], int] = {}
    for line, raw in enumerate(rows, start=first_line):
        try:
            snapshot = _parse_fundamentals(line, _clean(raw))
        except _RowError as error:
            problems.append(RowProblem(line, str(error)))
            continue
        key = (snapshot.symbol, snapshot.as_of)
        if key in seen:
            problems.append(
                RowProblem(
                    line,
                    f"duplicate as_of {snapshot.as_of} for {snapshot.symbol} (first on line {seen[key]})",
                )
            )
            continue
        seen[key] = line
        accepted.append(snapshot)
    return accepted, problems
