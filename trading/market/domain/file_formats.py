"""The price files people have, read as the desk's own bar rows, and the instruments file.

Three bar formats, told apart by their header (or named by the caller):

- ``desk``: the desk's CSV (``symbol,date,open,high,low,close,volume``);
- ``bhavcopy``: the NSE daily bhavcopy in the UDiFF common format for the cash market (``TradDt``,
  ``TckrSymb``, ``SctySrs``, ``OpnPric`` …): one file per day, every security of every series;
  rows of the series asked for (EQ by default) are read, the others skipped and counted;
- ``yahoo``: Yahoo Finance's CSV export (``Date,Open,High,Low,Close,Adj Close,Volume``), one symbol
  per file; its ``null`` rows (a day Yahoo lists without prices) are skipped with their line.

Each reader turns a file row into the desk's row (``symbol``, ``date``, ``open`` …) for the same
validator the desk's CSV goes through, so every format is held to the same rules. Pure: no Django.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

FORMATS = ("desk", "bhavcopy", "yahoo")

BHAVCOPY_COLUMNS = (
    "traddt",
    "sctysrs",
    "tckrsymb",
    "opnpric",
    "hghpric",
    "lwpric",
    "clspric",
    "ttltradgvol",
)
YAHOO_COLUMNS = ("date", "open", "high", "low", "close", "volume")
# Yahoo's suffixes for the Indian exchanges; any other suffix is kept as part of the symbol.
YAHOO_SUFFIXES = {"NS": "NSE", "BO": "BSE"}

INSTRUMENT_COLUMNS = ("symbol", "exchange", "name", "sector", "tick_size", "lot_size", "currency")
INSTRUMENT_LIMITS = {"symbol": 32, "exchange": 16, "name": 200, "sector": 64, "isin": 12}
TICK_MAX = Decimal("99999999.9999")
LOT_MAX = 2_147_483_647
_CURRENCY = re.compile(r"^[A-Z]{3}$")
_ISIN = re.compile(r"^[A-Z]{2}[A-Z0-9]{9}[0-9]$")
_EXCHANGE = re.compile(r"^[A-Z0-9_.-]+$")


def header_key(name: str) -> str:
    """A column's name as the readers compare it: lower case, spaces and dashes as underscores
    (``Tick Size`` and ``tick-size`` are ``tick_size``; ``Adj Close`` is ``adj_close``)."""
    return re.sub(r"[\s\-]+", "_", name.strip().lower())


def detect_format(header: Sequence[str]) -> str:
    """``desk``, ``bhavcopy`` or ``yahoo`` from a header already passed through ``header_key``."""
    columns = set(header)
    if {"tckrsymb", "traddt"} <= columns:
        return "bhavcopy"
    if "symbol" not in columns and ("adj_close" in columns or {"date", "close"} <= columns):
        return "yahoo"
    return "desk"


def required_columns(file_format: str) -> tuple[str, ...]:
    if file_format == "bhavcopy":
        return BHAVCOPY_COLUMNS
    if file_format == "yahoo":
        return YAHOO_COLUMNS
    return ("symbol", "date", "open", "high", "low", "close", "volume")


def yahoo_symbol(stem: str) -> str:
    """A desk symbol from a Yahoo ticker or file name: ``RELIANCE.NS`` is ``NSE:RELIANCE``,
    ``TCS.BO`` is ``BSE:TCS``; anything else (``AAPL``, ``^NSEI``) stays as written, upper-cased."""
    text = stem.strip().upper()
    bare, dot, suffix = text.rpartition(".")
    if dot and bare and suffix in YAHOO_SUFFIXES:
        return f"{YAHOO_SUFFIXES[suffix]}:{bare}"
    return text


@dataclass(frozen=True)
class Translated:
    """A file row as the desk's bar row, or the reason it is skipped (not an error in the file)."""

    row: dict[str, str] | None
    skipped: str = ""
    # What the file says about the instrument, used when a missing one is created.
    name: str = ""
    isin: str = ""


def from_bhavcopy(raw: Mapping[str, str], series: frozenset[str]) -> Translated:
    """A bhavcopy row of a wanted series, qualified by its exchange (``Src``, NSE when blank).
    A row without trades that day (total traded volume 0) is skipped: it has no bar."""
    row_series = raw.get("sctysrs", "").upper()
    if row_series not in series:
        return Translated(None, skipped=f"series {row_series or '(blank)'}")
    volume = raw.get("ttltradgvol", "")
    if _is_zero(volume):
        return Translated(None, skipped="no trades that day (TtlTradgVol 0)")
    exchange = (raw.get("src") or "NSE").upper()
    symbol = raw.get("tckrsymb", "")
    return Translated(
        {
            "symbol": f"{exchange}:{symbol}" if symbol else "",
            "date": raw.get("traddt", ""),
            "open": raw.get("opnpric", ""),
            "high": raw.get("hghpric", ""),
            "low": raw.get("lwpric", ""),
            "close": raw.get("clspric", ""),
            "volume": volume,
        },
        name=raw.get("fininstrmnm", ""),
        isin=raw.get("isin", "").upper(),
    )


def from_yahoo(raw: Mapping[str, str], symbol: str) -> Translated:
    """A Yahoo export row; ``null`` in any price means Yahoo has no prices for that day."""
    values = [raw.get(name, "") for name in ("open", "high", "low", "close", "volume")]
    if any(value.lower() == "null" for value in values):
        return Translated(None, skipped="null prices (Yahoo lists the day without a bar)")
    return Translated(
        {
            "symbol": symbol,
            "date": raw.get("date", ""),
            "open": values[0],
            "high": values[1],
            "low": values[2],
            "close": values[3],
            "volume": values[4],
        }
    )


def _is_zero(text: str) -> bool:
    try:
        return Decimal(text) == 0
    except InvalidOperation:
        return False


@dataclass(frozen=True)
class InstrumentRow:
    line: int
    symbol: str
    exchange: str
    name: str
    sector: str
    tick_size: Decimal
    lot_size: int
    currency: str
    isin: str


class InstrumentRowError(ValueError):
    pass


def parse_instrument(line: int, raw: Mapping[str, str]) -> InstrumentRow:
    """One row of an instruments file, or ``InstrumentRowError`` with a plain reason."""
    symbol = _limited(raw, "symbol").upper()
    exchange = _limited(raw, "exchange").upper()
    name = " ".join(_limited(raw, "name").split())
    if not symbol:
        raise InstrumentRowError("symbol is empty")
    if ":" in symbol or any(ch.isspace() for ch in symbol):
        raise InstrumentRowError(f"symbol {symbol[:40]!r} has a colon or a space")
    if not exchange:
        raise InstrumentRowError("exchange is empty")
    if not _EXCHANGE.match(exchange):
        raise InstrumentRowError(f"exchange {exchange[:20]!r} is not a code (letters, digits, . _ -)")
    if not name:
        raise InstrumentRowError("name is empty")
    tick = _tick(raw.get("tick_size", ""))
    lot = _lot(raw.get("lot_size", ""))
    currency = raw.get("currency", "").strip().upper()
    if not _CURRENCY.match(currency):
        raise InstrumentRowError(f"currency {currency[:20]!r} is not a three-letter code (ISO 4217, e.g. INR, USD)")
    isin = _limited(raw, "isin").upper()
    if isin and not _ISIN.match(isin):
        raise InstrumentRowError(f"isin {isin!r} is not an ISIN (two letters, nine letters or digits, a digit)")
    return InstrumentRow(
        line=line,
        symbol=symbol,
        exchange=exchange,
        name=name,
        sector=" ".join(_limited(raw, "sector").split()),
        tick_size=tick,
        lot_size=lot,
        currency=currency,
        isin=isin,
    )


def _limited(raw: Mapping[str, str], column: str) -> str:
    value = raw.get(column, "").strip()
    if "\x00" in value:
        raise InstrumentRowError(f"{column} contains a NUL character")
    limit = INSTRUMENT_LIMITS[column]
    if len(value) > limit:
        raise InstrumentRowError(f"{column} is {len(value)} characters (at most {limit})")
    return value


def _tick(text: str) -> Decimal:
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise InstrumentRowError(f"tick_size {text[:40]!r} is not a number") from None
    if not value.is_finite() or value <= 0:
        raise InstrumentRowError(f"tick_size {text[:40]!r} is not a positive number")
    if value > TICK_MAX or value != value.quantize(Decimal("0.0001")):
        raise InstrumentRowError(f"tick_size {text[:40]!r} does not fit (at most 4 decimals, at most {TICK_MAX})")
    return value.quantize(Decimal("0.0001"))


def _lot(text: str) -> int:
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise InstrumentRowError(f"lot_size {text[:40]!r} is not a number") from None
    if not value.is_finite() or value != value.to_integral_value() or value < 1:
        raise InstrumentRowError(f"lot_size {text[:40]!r} is not a whole number of at least 1")
    if value > LOT_MAX:
        raise InstrumentRowError(f"lot_size {text[:40]!r} is too large (at most {LOT_MAX})")
    return int(value)
