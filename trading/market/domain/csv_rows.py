"""Row-by-row validation of market-data CSV files, without touching storage.

Each validator checks one row at a time (so a file of any size streams through it) and returns
the row it accepted or a problem with a plain reason; the importer writes nothing unless the file
had no problem at all. Values must fit the columns they go to (digits, 64-bit volumes, lengths)
and dates must fall in the desk's window: not before ``DATE_FLOOR`` and not after today.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import NamedTuple
from zoneinfo import ZoneInfo

from vocabulary.dates import DateWindow

PRICE_QUANTUM = Decimal("0.0001")
RATIO_QUANTUM = Decimal("0.0001")
# The columns' capacity (DecimalField max_digits=18/12, decimal_places=4; BigIntegerField; the
# CharFields' max_length): a value beyond them is refused here instead of failing the database
# write (PostgreSQL) or being stored as something else (SQLite). A test pins them to the models.
PRICE_MAX = Decimal("99999999999999.9999")
RATIO_MAX = Decimal("99999999.9999")
VOLUME_MAX = 2**63 - 1
TEXT_LIMITS = {"symbol": 32, "headline": 500, "source": 100, "url": 200, "fundamentals_source": 100}
MAX_HEADLINE = TEXT_LIMITS["headline"]


BAR_COLUMNS = ("symbol", "date", "open", "high", "low", "close", "volume")
NEWS_COLUMNS = ("symbol", "headline", "source", "published_at")
FUNDAMENTAL_COLUMNS = ("symbol", "as_of", "pe", "pb", "ev_ebitda", "revenue_growth_pct", "net_margin_pct")
FUNDAMENTAL_RATIOS = FUNDAMENTAL_COLUMNS[2:]
MARKET_WIDE = ("", "*")


@dataclass(frozen=True)
class RowProblem:
    line: int
    reason: str


class BarRow(NamedTuple):
    """One accepted bar. A named tuple, not a dataclass: a million of them are built per import,
    and a frozen dataclass costs several times as much to build."""

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


def _check_date(window: DateWindow, value: dt.date, column: str) -> None:
    if (problem := window.problem(value, column)) is not None:
        raise _RowError(problem)


def missing_columns(header: Sequence[str] | None, required: Sequence[str]) -> list[str]:
    present = {name.strip().lower() for name in header or ()}
    return [name for name in required if name not in present]


def _cut(text: str, limit: int = 40) -> str:
    """A value cited in a reason, cut short: a reason must stay readable whatever the file holds."""
    return text if len(text) <= limit else f"{text[:limit]}…"


def _shown(text: str) -> str:
    return repr(_cut(text))


def _text(row: Mapping[str, str], column: str, limit: int, *, label: str | None = None) -> str:
    value = row.get(column, "")
    name = label or column
    if "\x00" in value:
        raise _RowError(f"{name} contains a NUL character")
    if len(value) > limit:
        raise _RowError(f"{name} is {len(value)} characters (at most {limit})")
    return value


def parse_date(text: str, column: str, window: DateWindow | None = None) -> dt.date:
    try:
        value = dt.date.fromisoformat(text)
    except ValueError:
        raise _RowError(f"{column} {_shown(text)} is not a date (expected YYYY-MM-DD)") from None
    if window is not None:
        _check_date(window, value, column)
    return value


def _local_date(value: dt.datetime, tz: ZoneInfo) -> dt.date:
    """The day on the desk's clock; at the ends of the calendar (year 1, year 9999) the shift can
    overflow, and the row's own date is then as good an answer: it is far outside the window."""
    try:
        return value.astimezone(tz).date()
    except OverflowError:
        return value.date()


def parse_datetime(text: str, column: str, default_tz: ZoneInfo, window: DateWindow | None = None) -> dt.datetime:
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        raise _RowError(f"{column} {_shown(text)} is not a date-time (expected ISO 8601)") from None
    value = value if value.tzinfo else value.replace(tzinfo=default_tz)
    if window is not None:
        _check_date(window, _local_date(value, default_tz), column)
    return value


def parse_decimal(text: str, column: str, *, quantum: Decimal = PRICE_QUANTUM, largest: Decimal = PRICE_MAX) -> Decimal:
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise _RowError(f"{column} {_shown(text)} is not a number") from None
    if not value.is_finite():
        raise _RowError(f"{column} {_shown(text)} is not a finite number")
    # Compared before quantize, and without arithmetic (copy_abs, not abs): 1e999999999 is beyond
    # the decimal context, so quantizing it or rounding it would raise instead of answering.
    if value.copy_abs() > largest:
        limit = f"at least {-largest}" if value < 0 else f"at most {largest}"
        raise _RowError(f"{column} {_shown(text)} is too {'small' if value < 0 else 'large'} ({limit})")
    return value.quantize(quantum, rounding=ROUND_HALF_EVEN)


def parse_volume(text: str) -> int:
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise _RowError(f"volume {_shown(text)} is not a number") from None
    if not value.is_finite() or value != value.to_integral_value():
        raise _RowError(f"volume {_shown(text)} is not a whole number")
    # Zero is a real reading: an index, or a session with no trade, has a bar and no volume.
    if value < 0:
        raise _RowError(f"volume {_cut(text)} is negative")
    # Compared as a Decimal: int() of 1e999999999 would build a billion-digit integer first.
    if value > VOLUME_MAX:
        raise _RowError(f"volume {_cut(text)} does not fit in 64 bits (at most {VOLUME_MAX})")
    return int(value)


def _symbol(row: Mapping[str, str]) -> str:
    """``SYMBOL`` or ``EXCHANGE:SYMBOL``, upper-cased; the symbol part must fit its column."""
    symbol = _text(row, "symbol", 100_000).upper()
    bare = symbol.rpartition(":")[2]
    if len(bare) > TEXT_LIMITS["symbol"]:
        raise _RowError(f"symbol is {len(bare)} characters (at most {TEXT_LIMITS['symbol']})")
    return symbol


def _parse_bar(line: int, row: Mapping[str, str], window: DateWindow) -> BarRow:
    symbol = _symbol(row)
    if not symbol:
        raise _RowError("symbol is empty")
    date = parse_date(row["date"], "date", window)
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


def row_from(header: Sequence[str], values: Sequence[str]) -> dict[str, str]:
    """One CSV record as ``column -> stripped text``; a short record's missing fields are empty and
    an extra field is ignored. ``header`` is already lower-cased and stripped (``clean_header``)."""
    return {name: values[i].strip() if i < len(values) else "" for i, name in enumerate(header)}


def clean_header(header: Sequence[str]) -> list[str]:
    return [name.strip().lower() for name in header]


# How many distinct symbol and date texts a bar validator remembers as already checked: a file
# repeats a few thousand of each, and the cap keeps memory flat whatever a hostile file holds.
_REMEMBERED = 100_000
# A volume of at most this many ASCII digits fits in 64 bits without comparing it.
_SAFE_VOLUME_DIGITS = len(str(VOLUME_MAX)) - 1


class BarValidator:
    """Validates bars one row at a time. Within a symbol, dates must be strictly increasing: a
    repeat is a duplicate and an earlier date after a later one is out of order (a sign of a spliced
    or corrupt file). Only each symbol's last date is kept, so memory grows with the symbols in the
    file, never with its rows: a repeat of the last date names that line; any earlier date, repeated
    or not, is out of order.

    Each row first takes a fast path (``_accepted``) that only ever accepts: the same rules with the
    same arithmetic, minus the per-value function calls and messages, and symbol and date texts
    already checked remembered. Any row it does not accept outright goes through ``_parse_bar``,
    the strict reference, which decides and words the reason; so a refusal reads the same either way.
    """

    def __init__(self, window: DateWindow) -> None:
        self.window = window
        self._last: dict[str, tuple[dt.date, int]] = {}
        self._symbols: dict[str, str] = {}
        self._dates: dict[str, dt.date] = {}

    def check(self, line: int, row: Mapping[str, str]) -> BarRow | RowProblem:
        bar = self._accepted(line, row)
        if bar is None:
            try:
                bar = _parse_bar(line, row, self.window)
            except _RowError as error:
                return RowProblem(line, str(error))
        previous = self._last.get(bar.symbol)
        if previous is not None:
            last_date, last_line = previous
            if bar.date == last_date:
                return RowProblem(line, f"duplicate date {bar.date} for {bar.symbol} (first on line {last_line})")
            if bar.date < last_date:
                return RowProblem(line, f"out of order: {bar.symbol} {bar.date} comes after {last_date}")
        self._last[bar.symbol] = (bar.date, line)
        return bar

    def _accepted(self, line: int, row: Mapping[str, str]) -> BarRow | None:
        """The bar ``_parse_bar`` would return, when the row is plainly valid; None sends the row to
        ``_parse_bar`` (a problem, or text this path does not read, such as a volume of ``1e3``).
        Every test on the way is one ``_parse_bar`` makes, on the same values."""
        symbol = self._symbols.get(row.get("symbol", "")) or self._new_symbol(row)
        if symbol is None:
            return None
        date_text = row.get("date")
        date = self._dates.get(date_text) if date_text is not None else None
        if date is None and (date := self._new_date(date_text)) is None:
            return None
        return _plain_bar(line, symbol, date, row)

    def _new_symbol(self, row: Mapping[str, str]) -> str | None:
        try:
            symbol = _symbol(row)
        except _RowError:
            return None
        if symbol and len(self._symbols) < _REMEMBERED:
            self._symbols[row.get("symbol", "")] = symbol
        return symbol or None

    def _new_date(self, text: str | None) -> dt.date | None:
        if text is None:
            return None
        try:
            date = dt.date.fromisoformat(text)
        except ValueError:
            return None
        if self.window.problem(date, "date") is not None:
            return None
        if len(self._dates) < _REMEMBERED:
            self._dates[text] = date
        return date


def _plain_bar(line: int, symbol: str, date: dt.date, row: Mapping[str, str]) -> BarRow | None:
    """The bar, when its volume is plain digits and its prices are numbers ``_parse_bar`` accepts."""
    volume_text = row.get("volume", "")
    try:
        # ASCII digits only: ``int`` and ``Decimal`` read them alike (signs, exponents, Unicode
        # digits, underscores take the strict path).
        if not (volume_text.isascii() and volume_text.isdigit() and len(volume_text) <= _SAFE_VOLUME_DIGITS):
            return None
        open_ = Decimal(row.get("open", ""))
        high = Decimal(row.get("high", ""))
        low = Decimal(row.get("low", ""))
        close = Decimal(row.get("close", ""))
        # Within the column before rounding (as parse_decimal checks); a NaN raises here.
        if not (0 < open_ <= PRICE_MAX and 0 < high <= PRICE_MAX and 0 < low <= PRICE_MAX and 0 < close <= PRICE_MAX):
            return None
        open_ = open_.quantize(PRICE_QUANTUM, rounding=ROUND_HALF_EVEN)
        high = high.quantize(PRICE_QUANTUM, rounding=ROUND_HALF_EVEN)
        low = low.quantize(PRICE_QUANTUM, rounding=ROUND_HALF_EVEN)
        close = close.quantize(PRICE_QUANTUM, rounding=ROUND_HALF_EVEN)
    except (InvalidOperation, TypeError, AttributeError):  # not text: the strict path decides
        return None
    # Rounded, low is positive and bounds the other three: every price is positive and in range.
    if not (0 < low <= open_ <= high and low <= close <= high):
        return None
    return BarRow(line, symbol, date, open_, high, low, close, int(volume_text))


class NewsValidator:
    """Validates headlines; an empty symbol or ``*`` marks a market-wide item. A date-time without an
    offset is read in ``default_tz`` (the desk's time zone), and so is the day the window checks."""

    def __init__(self, window: DateWindow, default_tz: ZoneInfo) -> None:
        self.window = window
        self.default_tz = default_tz

    def check(self, line: int, row: Mapping[str, str]) -> NewsRow | RowProblem:
        try:
            return self._parse(line, row)
        except _RowError as error:
            return RowProblem(line, str(error))

    def _parse(self, line: int, row: Mapping[str, str]) -> NewsRow:
        headline = " ".join(_text(row, "headline", 100_000).split())
        if not headline:
            raise _RowError("headline is empty")
        if len(headline) > MAX_HEADLINE:
            raise _RowError(f"headline is {len(headline)} characters (at most {MAX_HEADLINE})")
        source = _text(row, "source", TEXT_LIMITS["source"])
        if not source:
            raise _RowError("source is empty")
        symbol = "" if row.get("symbol", "") in MARKET_WIDE else _symbol(row)
        return NewsRow(
            line=line,
            symbol=symbol or None,
            headline=headline,
            source=source,
            published_at=parse_datetime(row["published_at"], "published_at", self.default_tz, self.window),
            url=_text(row, "url", TEXT_LIMITS["url"]),
        )


class FundamentalsValidator:
    """Validates fundamentals snapshots. Blank ratios are allowed (not reported); a row with none is
    not. A repeated (symbol, as_of) names the first line (one entry per snapshot: files are small)."""

    def __init__(self, window: DateWindow) -> None:
        self.window = window
        self._seen: dict[tuple[str, dt.date], int] = {}

    def check(self, line: int, row: Mapping[str, str]) -> FundamentalsRow | RowProblem:
        try:
            snapshot = self._parse(line, row)
        except _RowError as error:
            return RowProblem(line, str(error))
        key = (snapshot.symbol, snapshot.as_of)
        if key in self._seen:
            return RowProblem(
                line, f"duplicate as_of {snapshot.as_of} for {snapshot.symbol} (first on line {self._seen[key]})"
            )
        self._seen[key] = line
        return snapshot

    def _parse(self, line: int, row: Mapping[str, str]) -> FundamentalsRow:
        symbol = _symbol(row)
        if not symbol:
            raise _RowError("symbol is empty")
        as_of = parse_date(row["as_of"], "as_of", self.window)
        ratios = {
            name: parse_decimal(row[name], name, quantum=RATIO_QUANTUM, largest=RATIO_MAX) if row.get(name) else None
            for name in FUNDAMENTAL_RATIOS
        }
        if all(value is None for value in ratios.values()):
            raise _RowError("every ratio is empty")
        source = _text(row, "source", TEXT_LIMITS["fundamentals_source"], label="source") or "csv"
        return FundamentalsRow(line=line, symbol=symbol, as_of=as_of, source=source, ratios=ratios)
