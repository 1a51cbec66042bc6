"""Import market data from files: validate every row, then write all of it or nothing.

Files are streamed: rows are read, validated and written in batches of ``BATCH_ROWS`` inside one
transaction, so memory stays flat whatever the file's size and a problem on the last line still
undoes the first batch. Nothing is written once a problem is found; the rest of the file is still
read, so every problem is reported (the first ``MAX_PROBLEMS_LISTED`` of them, and the count).

Bars come in three formats (``trading.market.domain.file_formats``: the desk's CSV, the NSE
bhavcopy, Yahoo's export), each read into the desk's row and held to the same rules; a bar on a
day its exchange does not trade is refused with its line, and the report carries the data quality
of the instruments it touched (``trading.market.domain.quality``).
"""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
import gc
import itertools
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import IO, Any, Generic, TypeVar
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import IntegrityError, connection, models, transaction
from django.db.models import Max, OuterRef, Q, Subquery
from django.utils import timezone

from trading.audit import audit_record
from trading.market import calendar
from trading.market.domain import csv_rows as market_csv
from trading.market.domain import file_formats
from trading.market.domain import quality as market_quality
from trading.market.domain.corporate_rows import CORPORATE_ACTION_COLUMNS, CorporateActionRow, CorporateActionValidator
from trading.market.domain.csv_rows import BarRow, FundamentalsRow, NewsRow, RowProblem
from trading.market.domain.file_formats import InstrumentRow, InstrumentRowError, Translated
from trading.market.domain.news import content_hash
from trading.market.domain.quality import InstrumentQuality, QualityTracker, SessionIndex
from trading.models import CorporateAction, DailyBar, FundamentalsSnapshot, Instrument, NewsItem
from vocabulary.dates import DATE_FLOOR, DateWindow

BATCH_ROWS = 5_000
# Bytes of a file read (and decoded) at a time: lines are decoded a block at a time, not one by one.
READ_BLOCK = 1 << 20
MAX_PROBLEMS_LISTED = 1_000
MAX_NOTES_LISTED = 200

# What ``--create-missing`` gives an instrument of these exchanges; any other needs a currency.
EXCHANGE_DEFAULTS: dict[str, tuple[str, Decimal, int]] = {
    "NSE": ("INR", Decimal("0.05"), 1),
    "BSE": ("INR", Decimal("0.05"), 1),
}
OTHER_EXCHANGE_TICK = Decimal("0.01")
YAHOO_SPLIT_REMARK = (
    "note: Yahoo's Close is already adjusted for splits after each date; record no split or bonus "
    "for the dates this file covers, or history is adjusted twice"
)

Row = TypeVar("Row", BarRow, NewsRow, FundamentalsRow)


class ImportFileError(Exception):
    """The file cannot be read as CSV at all (missing, not UTF-8, no header)."""


class _Refused(Exception):
    """Leaves the import's transaction so that it rolls back: a problem was found, or a dry run."""


@dataclass
class ImportReport:
    path: str
    kind: str
    rows_read: int = 0
    accepted: int = 0
    written: int = 0
    dry_run: bool = False
    problems: list[RowProblem] = field(default_factory=list)
    skipped: list[RowProblem] = field(default_factory=list)
    problem_count: int = 0
    file_format: str = "desk"
    # Instruments the rows name ("NSE:RELIANCE"), created ones with their defaults, updated ones.
    instruments: set[str] = field(default_factory=set)
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    # Rows skipped by kind and not listed line by line (a bhavcopy's other series: thousands).
    skipped_counts: dict[str, int] = field(default_factory=dict)
    quality: list[InstrumentQuality] = field(default_factory=list)
    outlier_threshold_pct: float = 25.0
    # What a person should know about the file as a whole (a format's caveat).
    remarks: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def add_problem(self, line: int, reason: str) -> None:
        """Count every problem, keep the first few hundred: a million bad rows must not fill memory."""
        self.problem_count += 1
        if len(self.problems) < MAX_PROBLEMS_LISTED:
            self.problems.append(RowProblem(line, reason))

    def skip(self, line: int, reason: str) -> None:
        if len(self.skipped) < MAX_PROBLEMS_LISTED:
            self.skipped.append(RowProblem(line, reason))
        else:
            self.count_skip(reason)

    def count_skip(self, reason: str) -> None:
        self.skipped_counts[reason] = self.skipped_counts.get(reason, 0) + 1

    def problem_lines(self) -> list[str]:
        return [f"{self.path}:{p.line}: {p.reason}" for p in sorted(self.problems, key=lambda p: p.line)]

    def skipped_lines(self) -> list[str]:
        lines = [f"{self.path}:{p.line}: skipped, {p.reason}" for p in sorted(self.skipped, key=lambda p: p.line)]
        lines += [f"{self.path}: skipped {count} row(s): {reason}" for reason, count in self.skipped_counts.items()]
        return lines

    def note_lines(self) -> list[str]:
        """What the import did or would do besides rows: instruments created or updated."""
        verb = "would create" if self.dry_run or self.problems else "created"
        change = "would update" if self.dry_run or self.problems else "updated"
        created = [f"{verb} {text}" for text in self.created]
        return self.remarks + created + [f"{change} {text}" for text in self.updated]

    def quality_lines(self) -> list[str]:
        return [line for found in self.quality for line in found.lines(self.outlier_threshold_pct)]

    def summary(self) -> str:
        if self.problems:
            count = max(self.problem_count, len(self.problems))
            listed = f" (first {len(self.problems)} listed)" if count > len(self.problems) else ""
            return f"{self.path}: {count} problem(s) in {self.rows_read} row(s){listed}; nothing was written."
        if self.dry_run:
            return f"{self.path}: {self.accepted} {self.kind} row(s) valid; dry run, nothing was written."
        skipped_count = len(self.skipped) + sum(self.skipped_counts.values())
        skipped = f", {skipped_count} skipped" if skipped_count else ""
        return f"{self.path}: wrote {self.written} {self.kind} row(s){skipped}."

    def as_dict(self) -> dict[str, Any]:
        """The report as plain JSON (kept on a browser upload)."""
        return {
            "kind": self.kind,
            "format": self.file_format,
            "ok": self.ok,
            "dry_run": self.dry_run,
            "rows_read": self.rows_read,
            "accepted": self.accepted,
            "written": self.written,
            "summary": self.summary(),
            "problem_count": max(self.problem_count, len(self.problems)),
            "problems": [{"line": p.line, "reason": p.reason} for p in sorted(self.problems, key=lambda p: p.line)],
            "skipped": [{"line": p.line, "reason": p.reason} for p in sorted(self.skipped, key=lambda p: p.line)][
                :MAX_NOTES_LISTED
            ],
            "skipped_counts": dict(self.skipped_counts),
            "instruments": sorted(self.instruments)[:MAX_NOTES_LISTED],
            "instrument_count": len(self.instruments),
            "notes": self.note_lines()[:MAX_NOTES_LISTED],
            "quality": self.quality_lines()[:MAX_NOTES_LISTED],
        }


def _decoded_lines(handle: IO[bytes], path: Path) -> Iterator[str]:
    """The file's lines as text, each decoded on its own so that a bad byte is named by its line (a
    newline byte never occurs inside a UTF-8 sequence, so splitting first is safe). Read a block of
    lines at a time and chained in C: a generator step per line costs as much as the decoding."""
    return itertools.chain.from_iterable(_decoded_blocks(handle, path))


def _decoded_blocks(handle: IO[bytes], path: Path) -> Iterator[list[str]]:
    number = 0  # lines before this block
    while block := handle.readlines(READ_BLOCK):
        try:
            lines = [raw.decode("utf-8") for raw in block]
        except UnicodeDecodeError:
            for offset, raw in enumerate(block, start=number + 1):
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError as error:
                    raise ImportFileError(
                        f"{path}:{offset}: not UTF-8 text ({error.reason} at byte {error.start + 1} of the line)"
                    ) from None
            raise  # unreachable: some line of the block failed to decode above
        if number == 0:
            lines[0] = lines[0].removeprefix("\ufeff")
        number += len(block)
        yield lines


def _csv_problem(error: csv.Error) -> str:
    limit = csv.field_size_limit()
    if "field larger than field limit" in str(error):
        return f"a field is longer than {limit:,} characters (the csv module's limit); reading stopped here"
    return f"unreadable CSV ({error}); reading stopped here"


def _records(reader: Any, header: list[str], report: ImportReport) -> Iterator[tuple[int, dict[str, str]]]:
    """``(line, row)`` for each record, where ``line`` is the file line the record starts on:
    ``reader.line_num`` counts physical lines, so a quoted newline inside a field is counted."""
    previous = reader.line_num
    width = len(header)
    try:
        for values in reader:
            line, previous = previous + 1, reader.line_num
            if not values:
                continue  # a blank line
            report.rows_read += 1
            if len(values) == width:  # the common case, without row_from's per-field checks
                yield line, dict(zip(header, map(str.strip, values), strict=False))
            else:
                yield line, market_csv.row_from(header, values)
    except csv.Error as error:
        # The reader cannot resume after a broken record; nothing will be written anyway.
        report.add_problem(previous + 1, _csv_problem(error))


Required = Sequence[str] | Callable[[list[str]], Sequence[str]]


@contextlib.contextmanager
def _csv_rows(
    path: Path, required: Required, report: ImportReport
) -> Iterator[Iterator[tuple[int, dict[str, str]]] | None]:
    """The file's rows, streamed; None (with the problem reported) when a required column is missing.
    ``required`` may be a function of the header (a format told apart by its columns)."""
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        raise ImportFileError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ImportFileError(f"{path}: is a directory, not a CSV file") from None
    with handle:
        reader = csv.reader(_decoded_lines(handle, path))
        try:
            header = next(reader, None)
        except csv.Error as error:
            raise ImportFileError(f"{path}:1: {_csv_problem(error)}") from None
        if header is None:
            columns = ", ".join(required) if not callable(required) else "see --help"
            raise ImportFileError(f"{path}: the file is empty (a header row is required: {columns})")
        header = [file_formats.header_key(name) for name in header]
        wanted = required(header) if callable(required) else required
        missing = market_csv.missing_columns(header, wanted)
        if missing:
            report.add_problem(1, f"missing column(s): {', '.join(missing)}")
            yield None
            return
        yield _records(reader, header, report)


def _date_window() -> DateWindow:
    return DateWindow(today=timezone.localdate(), zone=settings.TIME_ZONE)


Creator = Callable[[str, int], "Instrument | str"]


class _Symbols:
    """Symbols resolved to instruments as they first appear, once each. ``EXCH:SYM`` names one
    exchange; a bare symbol must be unambiguous. With a ``creator``, an unknown symbol becomes a
    new instrument (or the reason it cannot)."""

    def __init__(self, creator: Creator | None = None) -> None:
        self._known: dict[str, Instrument | str] = {}
        self._creator = creator
        self._by_symbol: dict[str, list[Instrument]] | None = None

    def resolve(self, symbol: str, line: int = 0) -> Instrument | str:
        """The instrument, or the reason the symbol cannot be used."""
        if symbol not in self._known:
            found = self._lookup(symbol)
            if isinstance(found, str) and found.startswith("unknown symbol") and self._creator is not None:
                found = self._creator(symbol, line)
            self._known[symbol] = found
        return self._known[symbol]

    def _lookup(self, symbol: str) -> Instrument | str:
        if self._by_symbol is None:
            # One query for the whole universe (thousands of rows at most), not one per symbol.
            self._by_symbol = {}
            for instrument in Instrument.objects.order_by("exchange"):
                self._by_symbol.setdefault(instrument.symbol, []).append(instrument)
        exchange, _, bare = symbol.rpartition(":")
        found = [i for i in self._by_symbol.get(bare, []) if not exchange or i.exchange == exchange]
        if len(found) == 1:
            return found[0]
        if found:
            exchanges = ", ".join(m.exchange for m in found)
            return f"symbol {symbol} is listed on {exchanges}: write EXCHANGE:{symbol}"
        return f"unknown symbol {symbol}"


@dataclass
class _Kind(Generic[Row]):
    """What one kind of import adds to the shared loop: each row's check, each batch's check
    against storage, the model rows to write, and the audit's details."""

    check: Callable[[int, dict[str, str]], Row | RowProblem]
    fresh: Callable[[list[tuple[Row, Instrument | None]]], list[tuple[Row, Instrument | None]]]
    build: Callable[[Row, Instrument | None], models.Model]
    model: type[models.Model]
    symbol_of: Callable[[Row], str | None]
    audit_details: Callable[[], dict[str, Any]] = dict
    # A file row in another format, read as the desk's row (None: skipped, and counted by it).
    prepare: Callable[[int, dict[str, str]], dict[str, str] | None] | None = None
    # A check of the row against its instrument (a bar on a day its exchange does not trade).
    placed: Callable[[Row, Instrument], str | None] | None = None
    creator: Creator | None = None
    # Runs inside the transaction once every row was read (quality figures for the report).
    finish: Callable[[], None] | None = None
    # Writes a batch faster than ``bulk_create`` of built models, returning the rows written.
    write: Callable[[list[tuple[Row, Instrument | None]]], int] | None = None
    # Held open around the rows' loop and closed when it ends or fails (the bars' COPY stream).
    writing: contextlib.AbstractContextManager[object] = field(default_factory=contextlib.nullcontext)


def _import(
    path: Path,
    report: ImportReport,
    required: Required,
    kind: _Kind[Row],
    actor_label: str,
    actor: Any = None,
) -> ImportReport:
    with _csv_rows(path, required, report) as rows:
        if rows is None:
            return report
        try:
            # A dry run writes nothing and takes no write lock; a real import writes batch by batch
            # inside one transaction, left through _Refused (rolled back) on any problem.
            with contextlib.nullcontext() if report.dry_run else transaction.atomic():
                with _fewer_collections():
                    _import_rows(rows, report, kind)
                if kind.finish is not None:
                    kind.finish()
                if report.problems or report.dry_run:
                    raise _Refused
                audit_record(
                    actor=actor,
                    actor_label=actor_label,
                    action=f"import_{report.kind}",
                    target=report.path,
                    details={
                        "written": report.written,
                        "skipped": len(report.skipped) + sum(report.skipped_counts.values()),
                        "format": report.file_format,
                        **({"created": report.created} if report.created else {}),
                        **kind.audit_details(),
                    },
                )
        except _Refused:
            report.written = 0
        except IntegrityError as error:
            # Another import raced us between validation and write; the transaction rolled back whole.
            report.written = 0
            report.add_problem(0, f"conflicting rows were written concurrently ({error}); nothing was written")
    return report


# The garbage collector's first threshold while rows stream (Python's default is 700 allocations).
STREAMING_GC_THRESHOLD = 50_000
_gc_lock = threading.Lock()
_gc_streams = 0
_gc_saved: tuple[int, int, int] = (0, 0, 0)


@contextlib.contextmanager
def _fewer_collections() -> Iterator[None]:
    """Young-generation garbage collections made rarer while rows stream: each row allocates a few
    short-lived containers (and no reference cycles), and a collection every 700 of them took a
    quarter of a large import's CPU. The collector still runs, every ``STREAMING_GC_THRESHOLD``
    allocations; the thresholds are restored when the last import running in the process ends."""
    global _gc_streams, _gc_saved
    with _gc_lock:
        if _gc_streams == 0:
            _gc_saved = gc.get_threshold()
            gc.set_threshold(max(_gc_saved[0], STREAMING_GC_THRESHOLD), *_gc_saved[1:])
        _gc_streams += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_streams -= 1
            if _gc_streams == 0:
                gc.set_threshold(*_gc_saved)


def _import_rows(rows: Iterator[tuple[int, dict[str, str]]], report: ImportReport, kind: _Kind[Row]) -> None:
    # The hooks are read once, not per row: this loop runs a million times for a large file.
    prepare, check, symbol_of, placed = kind.prepare, kind.check, kind.symbol_of, kind.placed
    resolve = _Symbols(kind.creator).resolve
    batch: list[tuple[Row, Instrument | None]] = []
    with kind.writing:
        for line, raw in rows:
            if prepare is not None:
                prepared = prepare(line, raw)
                if prepared is None:
                    continue
                raw = prepared
            row = check(line, raw)
            if isinstance(row, RowProblem):
                report.add_problem(row.line, row.reason)
                continue
            symbol = symbol_of(row)
            instrument = resolve(symbol, line) if symbol else None
            if isinstance(instrument, str):
                report.add_problem(line, instrument)
                continue
            if instrument is not None and placed is not None:
                problem = placed(row, instrument)
                if problem is not None:
                    report.add_problem(line, problem)
                    continue
            batch.append((row, instrument))
            if len(batch) >= BATCH_ROWS:
                _write_batch(batch, report, kind)
                batch = []
        _write_batch(batch, report, kind)


def _write_batch(batch: list[tuple[Row, Instrument | None]], report: ImportReport, kind: _Kind[Row]) -> None:
    fresh = kind.fresh(batch)
    report.accepted += len(fresh)
    if fresh and not report.problems and not report.dry_run:
        if kind.write is not None:
            report.written += kind.write(fresh)
            return
        # _default_manager: the checker cannot know that every model class has ``objects``.
        report.written += len(kind.model._default_manager.bulk_create([kind.build(row, inst) for row, inst in fresh]))


# --- Bars -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BarOptions:
    """How a bars file is read. ``file_format`` None: told from the header."""

    file_format: str | None = None
    series: frozenset[str] = frozenset({"EQ"})
    symbol: str = ""  # Yahoo: the file's symbol; empty: from the file name
    create_missing: bool = False
    exchange: str = "NSE"  # the exchange of a bare symbol that --create-missing creates
    currency: str = ""  # the currency of created instruments on exchanges without defaults


@dataclass(frozen=True)
class MarketDataSettings:
    """``settings.MARKET_DATA``, typed."""

    outlier_move_pct: float
    provider: str
    upload_max_mb: int
    upload_dir: Path


def market_data_settings() -> MarketDataSettings:
    raw: dict[str, Any] = settings.MARKET_DATA
    return MarketDataSettings(
        outlier_move_pct=float(raw["OUTLIER_MOVE_PCT"]),
        provider=str(raw["PROVIDER"]),
        upload_max_mb=int(raw["UPLOAD_MAX_MB"]),
        upload_dir=Path(raw["UPLOAD_DIR"]),
    )


def outlier_threshold_pct() -> float:
    return market_data_settings().outlier_move_pct


class _Sessions:
    """Each exchange's sessions, built once per import from the exchange calendar."""

    def __init__(self, today: dt.date) -> None:
        self.today = today
        self._index: dict[str, SessionIndex | None] = {}
        self._days: dict[str, tuple[frozenset[dt.date], dt.date, dt.date]] = {}

    def index(self, exchange: str) -> SessionIndex | None:
        """None when the desk has no calendar for the exchange (its sessions are then weekdays,
        and quality does not count missing sessions against them)."""
        if exchange not in self._index:
            known = calendar.calendar_for(exchange) is not None
            days = calendar.sessions(exchange, DATE_FLOOR, self.today) if known else []
            self._index[exchange] = SessionIndex(days) if known else None
        return self._index[exchange]

    def days(self, exchange: str) -> tuple[frozenset[dt.date], dt.date, dt.date]:
        """The exchange's sessions as a set with the range it covers, for a membership test per row:
        a day in the range and in the set is a session (``SessionIndex`` answers the same, in two
        calls). Without a calendar the set is empty and the range empty: every day needs a word
        from the calendar module."""
        if exchange not in self._days:
            index = self.index(exchange)
            if index is None or index.first is None or index.last is None:
                self._days[exchange] = (frozenset(), dt.date.max, dt.date.min)
            else:
                self._days[exchange] = (frozenset(index.days), index.first, index.last)
        return self._days[exchange]


# Instruments in a batch up to which stored bars are looked up per instrument and its own dates.
_SPANS_QUERIED = 50


def _date_spans(batch: list[tuple[BarRow, Instrument | None]]) -> dict[int, tuple[dt.date, dt.date]]:
    """The first and last date of each saved instrument's rows in the batch. Rows come symbol by
    symbol, so a run of one instrument's rows looks its instrument up once."""
    spans: dict[int, list[dt.date]] = {}
    previous: Instrument | None = None
    span: list[dt.date] | None = None
    for bar, instrument in batch:
        if instrument is not previous:
            previous = instrument
            span = spans.setdefault(instrument.pk, [bar.date, bar.date]) if instrument and instrument.pk else None
        if span is not None:
            day = bar.date
            if day < span[0]:
                span[0] = day
            elif day > span[1]:
                span[1] = day
    return {pk: (first, last) for pk, (first, last) in spans.items()}


def _bar_problem_on_day(bar: BarRow, instrument: Instrument, sessions: SessionIndex | None = None) -> str | None:
    """The reason a bar cannot be dated on its day, or None. ``sessions`` answers fast inside its
    range; outside it (or without one) the calendar module answers (weekdays as its fallback)."""
    if sessions is not None and sessions.covers(bar.date):
        if sessions.is_session(bar.date):
            return None
    elif calendar.is_session(instrument.exchange, bar.date):
        return None
    weekday = bar.date.strftime("%A")
    return f"{bar.date} ({weekday}) is not a session of {instrument.exchange}: no bar can be dated on it"


def _instrument_creator(options: BarOptions, report: ImportReport, hints: dict[str, Translated]) -> Creator:
    def create(symbol: str, line: int) -> Instrument | str:
        exchange, _, bare = symbol.rpartition(":")
        exchange = (exchange or options.exchange).upper()
        defaults = EXCHANGE_DEFAULTS.get(exchange)
        if defaults is None and not options.currency:
            known = ", ".join(EXCHANGE_DEFAULTS)
            return (
                f"unknown symbol {symbol}: creating it on {exchange} needs its currency "
                f"(--currency; only {known} have defaults)"
            )
        currency, tick, lot = defaults or (options.currency.upper(), OTHER_EXCHANGE_TICK, 1)
        if options.currency and defaults is not None:
            currency = options.currency.upper()
        hint = hints.get(symbol)
        instrument = Instrument(
            symbol=bare,
            exchange=exchange,
            name=(hint.name if hint and hint.name else bare)[:200],
            currency=currency,
            tick_size=tick,
            lot_size=lot,
            isin=hint.isin if hint and len(hint.isin) == 12 else "",
        )
        if not report.dry_run and not report.problems:
            instrument.save()
        report.created.append(
            f"{instrument} (line {line}): currency {currency}, tick {tick}, lot {lot}, name {instrument.name!r}"
        )
        return instrument

    return create


class _BarImport:
    """One bars file's reading: its format, the instruments it touches and their quality."""

    def __init__(self, path: Path, report: ImportReport, options: BarOptions) -> None:
        self.report = report
        self.options = options
        self.file_format = options.file_format or "desk"
        self.yahoo_symbol = file_formats.yahoo_symbol(options.symbol or path.stem)
        self.symbols: set[str] = set()
        self.hints: dict[str, Translated] = {}
        self.sessions = _Sessions(timezone.localdate())
        self.tracker = QualityTracker(report.outlier_threshold_pct)
        self.touched: dict[str, Instrument] = {}
        # Per instrument object (by id): its label, sessions index, session days and their range.
        self._placing: dict[int, tuple[str, SessionIndex | None, frozenset[dt.date], dt.date, dt.date]] = {}
        self._started: set[int] = set()
        self.writer = _BarWriter()
        # Each instrument's first and last bar stored (read once, before anything is written) and
        # widened by each batch written: a batch's rows outside them cannot repeat a stored day.
        self._spans: dict[int, tuple[dt.date, dt.date]] | None = None

    def required(self, header: list[str]) -> Sequence[str]:
        self.file_format = self.options.file_format or file_formats.detect_format(header)
        self.report.file_format = self.file_format
        if self.file_format == "yahoo":
            self.report.remarks.append(YAHOO_SPLIT_REMARK)
        return file_formats.required_columns(self.file_format)

    def prepare(self, line: int, raw: dict[str, str]) -> dict[str, str] | None:
        if self.file_format == "desk":
            return raw
        if self.file_format == "bhavcopy":
            translated = file_formats.from_bhavcopy(raw, self.options.series)
            if translated.row is None:
                self.report.count_skip(translated.skipped)
        else:
            translated = file_formats.from_yahoo(raw, self.yahoo_symbol)
            if translated.row is None:
                self.report.skip(line, translated.skipped)
        if translated.row is not None and self.options.create_missing and translated.name:
            self.hints.setdefault(translated.row["symbol"].upper(), translated)
        return translated.row

    def placed(self, bar: BarRow, instrument: Instrument) -> str | None:
        key = id(instrument)
        placing = self._placing.get(key)
        if placing is None:
            placing = self._placing[key] = (
                str(instrument),
                self.sessions.index(instrument.exchange),
                *self.sessions.days(instrument.exchange),
            )
        label, index, days, first, last = placing
        day = bar.date
        # A session inside the calendar's range is the usual answer, given by one set lookup; any
        # other day gets the full answer (and its reason) from _bar_problem_on_day.
        if not (first <= day <= last and day in days):
            problem = _bar_problem_on_day(bar, instrument, index)
            if problem is not None:
                return problem
        if key not in self._started:
            self._started.add(key)
            self.touched[label] = instrument
            self.tracker.start(label, index)
        self.tracker.add(label, day, bar.close)
        return None

    def fresh(self, batch: list[tuple[BarRow, Instrument | None]]) -> list[tuple[BarRow, Instrument | None]]:
        """The batch without the days already stored (each a problem). Bars stored are looked up
        only for instruments whose rows here fall within their stored span: usually none, so the
        COPY stream stays open and no query waits for it."""
        if self._spans is None:
            self._spans = _stored_spans()
        known = self._spans
        spans = _date_spans(batch)
        overlapping = {
            pk: (first, last)
            for pk, (first, last) in spans.items()
            if pk in known and first <= known[pk][1] and known[pk][0] <= last
        }
        for pk, (first, last) in spans.items():  # written below (or, refused, never: a wider span is safe)
            if pk in known:
                first, last = min(first, known[pk][0]), max(last, known[pk][1])
            known[pk] = (first, last)
        stored: set[tuple[int, dt.date]] = set()
        if overlapping:
            self.writer.close()  # the query needs the connection the COPY holds
            if len(overlapping) <= _SPANS_QUERIED:
                condition = Q()
                for pk, (first, last) in overlapping.items():
                    condition |= Q(instrument_id=pk, date__gte=first, date__lte=last)
            else:  # a file of many symbols a day (a bhavcopy): one range over them all
                firsts, lasts = zip(*overlapping.values(), strict=True)
                condition = Q(instrument__in=overlapping, date__gte=min(firsts), date__lte=max(lasts))
            stored = set(DailyBar.objects.filter(condition).values_list("instrument_id", "date"))
        if not stored:  # the usual case, new dates only: nothing to compare row by row
            self.symbols.update([bar.symbol for bar, _ in batch])
            return batch
        kept = []
        for bar, instrument in batch:
            if instrument is not None and instrument.pk and (instrument.pk, bar.date) in stored:
                self.report.add_problem(bar.line, f"duplicate date {bar.date} for {bar.symbol}: already stored")
            else:
                self.symbols.add(bar.symbol)
                kept.append((bar, instrument))
        return kept

    @staticmethod
    def build(bar: BarRow, instrument: Instrument | None) -> DailyBar:
        return DailyBar(
            instrument=instrument,
            date=bar.date,
            open=bar.open,
            high=bar.high,
            low=bar.low,
            close=bar.close,
            volume=bar.volume,
        )

    def finish(self) -> None:
        self.writer.close()
        self.report.instruments = set(self.touched)
        self.report.quality = _finish_quality(self.tracker, self.touched)

    def _creator(self) -> Creator | None:
        if not self.options.create_missing:
            return None
        create = _instrument_creator(self.options, self.report, self.hints)

        def create_after_copy(symbol: str, line: int) -> Instrument | str:
            self.writer.close()  # saving the instrument needs the connection the COPY holds
            return create(symbol, line)

        return create_after_copy

    def kind(self) -> _Kind[BarRow]:
        return _Kind(
            check=market_csv.BarValidator(_date_window()).check,
            fresh=self.fresh,
            build=self.build,
            model=DailyBar,
            symbol_of=lambda bar: bar.symbol,
            audit_details=lambda: {"symbols": sorted(self.symbols)},
            prepare=self.prepare,
            placed=self.placed,
            creator=self._creator(),
            finish=self.finish,
            write=self.writer.write,
            writing=self.writer,
        )


_BAR_COLUMNS = ("instrument", "date", "open", "high", "low", "close", "volume")


def _column(name: str) -> str:
    field = DailyBar._meta.get_field(name)
    assert isinstance(field, models.Field) and field.column, name
    return field.column


class _BarWriter:
    """Bars written without building a model per row. On PostgreSQL through one COPY kept open from
    batch to batch: the server stores rows while the next ones are read and checked, instead of the
    import waiting for each batch. A COPY holds the connection, so it is closed before any other
    statement (``close``; the next batch opens another) and, as a context, when the rows end: on an
    error it is cancelled and the transaction rolls back. Elsewhere one prepared INSERT per batch.
    Every value was validated against the columns' capacity and the table's checks already
    (``BarValidator``): only a bar written meanwhile by another import can be refused."""

    def __init__(self) -> None:
        self._open: contextlib.ExitStack | None = None
        self._write_row: Callable[[Sequence[Any]], None] | None = None

    def write(self, batch: list[tuple[BarRow, Instrument | None]]) -> int:
        if connection.vendor != "postgresql":
            return _insert_bars(batch)
        write_row = self._write_row or self._start()
        for row in _bar_values(batch):
            write_row(row)
        return len(batch)

    def _start(self) -> Callable[[Sequence[Any]], None]:
        with contextlib.ExitStack() as stack:
            cursor = stack.enter_context(connection.cursor())
            table, columns = _bar_table()
            copy = stack.enter_context(cursor.copy(f"COPY {table} ({columns}) FROM STDIN"))
            # Each value's type named once, not looked up per value.
            copy.set_types(["bigint", "date", "numeric", "numeric", "numeric", "numeric", "bigint"])
            self._open, self._write_row = stack.pop_all(), copy.write_row
        return copy.write_row

    def close(self) -> None:
        """End the COPY, if one is open: the server has then stored every row sent."""
        self.__exit__(None, None, None)

    def __enter__(self) -> _BarWriter:
        return self

    def __exit__(self, error_type: Any, error: BaseException | None, traceback: Any) -> None:
        stack, self._open, self._write_row = self._open, None, None
        if stack is not None:
            # A refusal at the end of the COPY (a bar another import wrote meanwhile) is raised as
            # Django's IntegrityError, like any other statement's.
            with connection.wrap_database_errors:
                stack.__exit__(error_type, error, traceback)


def _bar_table() -> tuple[str, str]:
    quote = connection.ops.quote_name
    return quote(DailyBar._meta.db_table), ", ".join(quote(_column(name)) for name in _BAR_COLUMNS)


def _insert_bars(batch: list[tuple[BarRow, Instrument | None]]) -> int:
    table, columns = _bar_table()
    marks = ", ".join(["%s"] * len(_BAR_COLUMNS))
    with connection.cursor() as cursor:
        cursor.executemany(
            f"INSERT INTO {table} ({columns}) VALUES ({marks})",
            [(pk, day.isoformat(), *prices, volume) for pk, day, *prices, volume in _bar_values(batch)],
        )
    return len(batch)


def _stored_spans() -> dict[int, tuple[dt.date, dt.date]]:
    """Each instrument's first and last stored bar: two index lookups per instrument (the universe
    holds thousands at most), not a scan of every bar."""
    bars = DailyBar.objects.filter(instrument=OuterRef("pk")).order_by()
    spans = (
        Instrument.objects.order_by()
        .annotate(
            first=Subquery(bars.order_by("date").values("date")[:1]),
            last=Subquery(bars.order_by("-date").values("date")[:1]),
        )
        .filter(first__isnull=False)
        .values_list("pk", "first", "last")
    )
    return {pk: (first, last) for pk, first, last in spans}


def _bar_values(batch: list[tuple[BarRow, Instrument | None]]) -> Iterator[tuple[Any, ...]]:
    """Each bar as the row of ``_BAR_COLUMNS``; the instrument's key read once per run of its rows."""
    previous: Instrument | None = None
    pk = None
    for bar, instrument in batch:
        if instrument is not previous:
            previous = instrument
            pk = instrument.pk if instrument is not None else None
        yield (pk, bar.date, bar.open, bar.high, bar.low, bar.close, bar.volume)


def import_bars(
    path: Path,
    *,
    dry_run: bool = False,
    actor_label: str = "import_bars",
    actor: Any = None,
    options: BarOptions | None = None,
) -> ImportReport:
    """Bars from a file in any of the formats (``options``); see the module's docstring."""
    report = ImportReport(path=str(path), kind="bar", dry_run=dry_run, outlier_threshold_pct=outlier_threshold_pct())
    reading = _BarImport(path, report, options or BarOptions())
    return _import(path, report, reading.required, reading.kind(), actor_label, actor)


def _last_session(exchange: str) -> dt.date:
    return calendar.last_completed_session(exchange, timezone.now())


def _stored_before_first(
    tracker: QualityTracker, saved: dict[str, int], by_pk: dict[int, str]
) -> dict[str, tuple[dt.date, Decimal]]:
    """Each instrument's last stored bar before its first bar in the file: two queries per 200
    instruments, not one per instrument."""
    firsts = {label: day for label, day in tracker.first_bars().items() if label in saved}
    found: dict[str, tuple[dt.date, Decimal]] = {}
    labels = sorted(firsts)
    for start in range(0, len(labels), 200):
        chunk = labels[start : start + 200]
        condition = Q()
        for label in chunk:
            condition |= Q(instrument_id=saved[label], date__lt=firsts[label])
        latest = dict(
            DailyBar.objects.filter(condition)
            .values("instrument")
            .annotate(last=Max("date"))
            .values_list("instrument", "last")
        )
        if not latest:
            continue
        pairs = Q()
        for instrument_id, day in latest.items():
            pairs |= Q(instrument_id=instrument_id, date=day)
        for instrument_id, day, close in DailyBar.objects.filter(pairs).values_list("instrument_id", "date", "close"):
            found[by_pk[instrument_id]] = (day, close)
    return found


def _finish_quality(tracker: QualityTracker, touched: dict[str, Instrument]) -> list[InstrumentQuality]:
    saved = {label: inst.pk for label, inst in touched.items() if inst.pk}
    by_pk = {pk: label for label, pk in saved.items()}
    before = _stored_before_first(tracker, saved, by_pk)
    last_stored = {
        by_pk[row["instrument"]]: row["last"]
        for row in DailyBar.objects.filter(instrument__in=saved.values())
        .values("instrument")
        .annotate(last=Max("date"))
    }
    explained: dict[str, set[dt.date]] = {}
    for instrument_id, ex_date in CorporateAction.objects.filter(instrument__in=saved.values()).values_list(
        "instrument_id", "ex_date"
    ):
        explained.setdefault(by_pk[instrument_id], set()).add(ex_date)
    last_sessions = {label: _last_session(inst.exchange) for label, inst in touched.items()}
    return tracker.finish(last_sessions=last_sessions, last_stored=last_stored, explained=explained, before=before)


def instrument_quality(instrument: Instrument, *, now: dt.datetime | None = None) -> InstrumentQuality:
    """The data-quality figures of one instrument's stored bars (the instrument page's panel)."""
    moment = now or timezone.now()
    bars = list(DailyBar.objects.filter(instrument=instrument).order_by("date").values_list("date", "close"))
    explained = set(CorporateAction.objects.filter(instrument=instrument).values_list("ex_date", flat=True))
    return market_quality.instrument_quality(
        str(instrument),
        bars,
        sessions=_Sessions(timezone.localdate(moment)).index(instrument.exchange),
        explained=explained,
        last_session=calendar.last_completed_session(instrument.exchange, moment),
        threshold_pct=outlier_threshold_pct(),
    )


def upsert_bars(
    instrument: Instrument,
    rows: Iterable[dict[str, str]],
    *,
    source: str,
    dry_run: bool = False,
    actor_label: str = "fetch_bars",
    actor: Any = None,
) -> ImportReport:
    """Bars from a provider, for one instrument: held to the same rules as a file (every row valid
    and on a session, or nothing written); a date already stored is updated when the provider's
    figures differ (a late correction), otherwise left alone."""
    report = ImportReport(path=source, kind="bar", dry_run=dry_run, file_format="provider")
    report.outlier_threshold_pct = outlier_threshold_pct()
    validator = market_csv.BarValidator(_date_window())
    bars: list[BarRow] = []
    for line, raw in enumerate(rows, start=1):
        report.rows_read += 1
        row = validator.check(line, {**raw, "symbol": str(instrument)})
        if isinstance(row, RowProblem):
            report.add_problem(row.line, row.reason)
            continue
        problem = _bar_problem_on_day(row, instrument)
        if problem is not None:
            report.add_problem(line, problem)
            continue
        bars.append(row)
    report.accepted = len(bars)
    report.instruments = {str(instrument)}
    today = timezone.localdate()
    stored = {bar.date: bar for bar in DailyBar.objects.filter(instrument=instrument, date__in=[b.date for b in bars])}
    new = [bar for bar in bars if bar.date not in stored]
    changed = []
    for bar in bars:
        old = stored.get(bar.date)
        if old is None:
            continue
        values = (bar.open, bar.high, bar.low, bar.close, bar.volume)
        if (old.open, old.high, old.low, old.close, old.volume) != values:
            old.open, old.high, old.low, old.close, old.volume = values
            changed.append(old)
    if changed:
        report.updated.append(f"{instrument}: {len(changed)} stored bar(s) corrected")
    if report.problems or dry_run:
        return report
    with transaction.atomic():
        created = DailyBar.objects.bulk_create(
            [
                DailyBar(
                    instrument=instrument,
                    date=bar.date,
                    open=bar.open,
                    high=bar.high,
                    low=bar.low,
                    close=bar.close,
                    volume=bar.volume,
                )
                for bar in new
            ],
            batch_size=BATCH_ROWS,
        )
        DailyBar.objects.bulk_update(changed, ["open", "high", "low", "close", "volume"], batch_size=BATCH_ROWS)
        report.written = len(created) + len(changed)
        tracker = QualityTracker(report.outlier_threshold_pct)
        label = str(instrument)
        tracker.start(label, _Sessions(today).index(instrument.exchange))
        for bar in sorted(bars, key=lambda b: b.date):
            tracker.add(label, bar.date, bar.close)
        report.quality = _finish_quality(tracker, {label: instrument})
        audit_record(
            actor=actor,
            actor_label=actor_label,
            action="import_bar",
            target=source,
            details={"written": len(created), "corrected": len(changed), "format": "provider", "symbols": [label]},
        )
    return report


# --- Instruments ------------------------------------------------------------------------------

_INSTRUMENT_FIELDS = ("name", "sector", "tick_size", "lot_size", "currency", "isin")


def import_instruments(
    path: Path, *, dry_run: bool = False, actor_label: str = "import_instruments", actor: Any = None
) -> ImportReport:
    """Instruments from a CSV (symbol, exchange, name, sector, tick_size, lot_size, currency[, isin]):
    a new (exchange, symbol) is created, a known one updated where the file differs (each change
    reported), never duplicated. All or nothing, like every import. Files are small (a universe),
    so the rows are held in memory and written at the end."""
    report = ImportReport(path=str(path), kind="instrument", dry_run=dry_run)
    rows = _instrument_rows(path, report)
    new, changed = _instrument_plan(rows, report)
    if report.problems or dry_run:
        return report
    try:
        with transaction.atomic():
            Instrument.objects.bulk_create(new, batch_size=BATCH_ROWS)
            Instrument.objects.bulk_update(changed, list(_INSTRUMENT_FIELDS), batch_size=BATCH_ROWS)
            report.written = len(new) + len(changed)
            audit_record(
                actor=actor,
                actor_label=actor_label,
                action="import_instrument",
                target=report.path,
                details={
                    "created": [f"{i.exchange}:{i.symbol}" for i in new],
                    "updated": [f"{i.exchange}:{i.symbol}" for i in changed],
                    "unchanged": len(rows) - len(new) - len(changed),
                },
            )
    except IntegrityError as error:
        report.written = 0
        report.add_problem(0, f"conflicting instruments were written concurrently ({error}); nothing was written")
    return report


def _instrument_rows(path: Path, report: ImportReport) -> list[InstrumentRow]:
    seen: dict[tuple[str, str], int] = {}
    rows: list[InstrumentRow] = []
    with _csv_rows(path, file_formats.INSTRUMENT_COLUMNS, report) as records:
        for line, raw in records or ():
            try:
                row = file_formats.parse_instrument(line, raw)
            except InstrumentRowError as error:
                report.add_problem(line, str(error))
                continue
            key = (row.exchange, row.symbol)
            if key in seen:
                report.add_problem(line, f"{row.exchange}:{row.symbol} is listed twice (first on line {seen[key]})")
                continue
            seen[key] = line
            rows.append(row)
    report.accepted = len(rows)
    return rows


def _instrument_plan(rows: list[InstrumentRow], report: ImportReport) -> tuple[list[Instrument], list[Instrument]]:
    """The instruments to create and the known ones to update, each reported."""
    existing = _existing_instruments(rows)
    new: list[Instrument] = []
    changed: list[Instrument] = []
    for row in rows:
        label = f"{row.exchange}:{row.symbol}"
        report.instruments.add(label)
        instrument = existing.get((row.exchange, row.symbol))
        if instrument is None:
            new.append(Instrument(symbol=row.symbol, exchange=row.exchange, **_instrument_values(row)))
            report.created.append(
                f"{label} (line {row.line}): {row.currency}, tick {row.tick_size}, lot {row.lot_size}"
            )
            continue
        differences = _differences(instrument, row)
        if differences:
            for name, value in _instrument_values(row).items():
                setattr(instrument, name, value)
            changed.append(instrument)
            report.updated.append(f"{label} (line {row.line}): {'; '.join(differences)}")
    return new, changed


def _existing_instruments(rows: list[InstrumentRow]) -> dict[tuple[str, str], Instrument]:
    found: dict[tuple[str, str], Instrument] = {}
    symbols = {row.symbol for row in rows}
    for start in range(0, len(symbols), 500):
        chunk = sorted(symbols)[start : start + 500]
        for instrument in Instrument.objects.filter(symbol__in=chunk):
            found[(instrument.exchange, instrument.symbol)] = instrument
    return found


def _instrument_values(row: InstrumentRow) -> dict[str, Any]:
    return {
        "name": row.name,
        "sector": row.sector,
        "tick_size": row.tick_size,
        "lot_size": row.lot_size,
        "currency": row.currency,
        "isin": row.isin,
    }


def _differences(instrument: Instrument, row: InstrumentRow) -> list[str]:
    changes = []
    for name, value in _instrument_values(row).items():
        old = getattr(instrument, name)
        if old != value:
            changes.append(f"{name} {old!s} → {value!s}" if old != "" else f"{name} set to {value!s}")
    return changes


# --- News and fundamentals ----------------------------------------------------------------------


def import_news(
    path: Path, *, dry_run: bool = False, actor_label: str = "import_news", actor: Any = None
) -> ImportReport:
    """Headlines already stored (same scope and normalised text) are skipped, not refused: feeds
    repeat themselves, and a repeat is not an error in the file."""
    report = ImportReport(path=str(path), kind="news", dry_run=dry_run)
    first_line: dict[str, int] = {}  # one entry per headline kept: news files are small
    hashes: dict[int, str] = {}

    def digest(item: NewsRow, instrument: Instrument | None) -> str:
        return content_hash(item.headline, str(instrument) if instrument else "*")

    def fresh(batch: list[tuple[NewsRow, Instrument | None]]) -> list[tuple[NewsRow, Instrument | None]]:
        digests = {item.line: digest(item, instrument) for item, instrument in batch}
        stored = set(NewsItem.objects.filter(content_hash__in=digests.values()).values_list("content_hash", flat=True))
        kept = []
        for item, instrument in batch:
            key = digests[item.line]
            if key in stored:
                report.skipped.append(RowProblem(item.line, "the same headline is already stored"))
            elif key in first_line:
                report.skipped.append(RowProblem(item.line, f"same headline as line {first_line[key]}"))
            else:
                first_line[key] = item.line
                hashes[item.line] = key
                kept.append((item, instrument))
                if instrument is not None:
                    report.instruments.add(str(instrument))
        return kept

    def build(item: NewsRow, instrument: Instrument | None) -> NewsItem:
        return NewsItem(
            instrument=instrument,
            headline=item.headline,
            source=item.source,
            published_at=item.published_at,
            url=item.url,
            content_hash=hashes.pop(item.line),
        )

    tz = ZoneInfo(settings.TIME_ZONE)
    kind = _Kind(
        check=market_csv.NewsValidator(_date_window(), tz).check,
        fresh=fresh,
        build=build,
        model=NewsItem,
        symbol_of=lambda item: item.symbol,
    )
    return _import(path, report, market_csv.NEWS_COLUMNS, kind, actor_label, actor)


def import_fundamentals(
    path: Path, *, dry_run: bool = False, actor_label: str = "import_fundamentals", actor: Any = None
) -> ImportReport:
    report = ImportReport(path=str(path), kind="fundamentals", dry_run=dry_run)

    def fresh(
        batch: list[tuple[FundamentalsRow, Instrument | None]],
    ) -> list[tuple[FundamentalsRow, Instrument | None]]:
        stored = set(
            FundamentalsSnapshot.objects.filter(
                instrument__in={inst.pk for _, inst in batch if inst}, as_of__in={s.as_of for s, _ in batch}
            ).values_list("instrument_id", "as_of")
        )
        kept = []
        for snapshot, instrument in batch:
            if (instrument.pk if instrument else None, snapshot.as_of) in stored:
                report.add_problem(
                    snapshot.line, f"duplicate as_of {snapshot.as_of} for {snapshot.symbol}: already stored"
                )
            else:
                kept.append((snapshot, instrument))
                if instrument is not None:
                    report.instruments.add(str(instrument))
        return kept

    def build(snapshot: FundamentalsRow, instrument: Instrument | None) -> FundamentalsSnapshot:
        return FundamentalsSnapshot(
            instrument=instrument, as_of=snapshot.as_of, source=snapshot.source, **snapshot.ratios
        )

    kind = _Kind(
        check=market_csv.FundamentalsValidator(_date_window()).check,
        fresh=fresh,
        build=build,
        model=FundamentalsSnapshot,
        symbol_of=lambda snapshot: snapshot.symbol,
    )
    return _import(path, report, market_csv.FUNDAMENTAL_COLUMNS, kind, actor_label, actor)


# --- corporate actions ---------------------------------------------------------------------------
# Splits, bonuses and dividends: every row checked (``trading.market.domain.corporate_rows``), its
# symbol resolved, its ex-date held to the instrument's exchange calendar; an action already stored
# with the same figures is skipped (a file imported twice changes nothing), one stored with other
# figures is a problem (corrected in the admin, where the change is kept in its history).

# How far ahead an announced ex-date may lie.
LOOK_AHEAD = dt.timedelta(days=366)


def _action_figures(kind: str, ratio_old: int | None, ratio_new: int | None, amount: Any) -> str:
    return f"amount {amount}" if kind == CorporateAction.Kind.DIVIDEND else f"ratio {ratio_old}:{ratio_new}"


def import_corporate_actions(
    path: Path, *, dry_run: bool = False, actor_label: str = "import_corporate_actions", actor: Any = None
) -> ImportReport:
    report = ImportReport(path=str(path), kind="corporate_action", dry_run=dry_run)
    first_line: dict[tuple[int, str, dt.date], int] = {}

    def placed(row: CorporateActionRow, instrument: Instrument) -> str | None:
        if calendar.is_session(instrument.exchange, row.ex_date):
            return None
        return f"ex_date {row.ex_date} ({row.ex_date:%A}) is not a session of {instrument.exchange}"

    def fresh(
        batch: list[tuple[CorporateActionRow, Instrument | None]],
    ) -> list[tuple[CorporateActionRow, Instrument | None]]:
        stored = {
            (instrument_id, kind, ex_date): (old, new, amount)
            for instrument_id, kind, ex_date, old, new, amount in CorporateAction.objects.filter(
                instrument__in={inst.pk for _, inst in batch if inst}, ex_date__in={row.ex_date for row, _ in batch}
            ).values_list("instrument_id", "kind", "ex_date", "ratio_old", "ratio_new", "amount")
        }
        kept: list[tuple[CorporateActionRow, Instrument | None]] = []
        for row, instrument in batch:
            assert instrument is not None  # every row names a symbol
            key = (instrument.pk, row.kind, row.ex_date)
            figures = (row.ratio_old, row.ratio_new, row.amount)
            if key in first_line:
                report.add_problem(
                    row.line, f"the same {row.kind} of {instrument} ex {row.ex_date} as line {first_line[key]}"
                )
                continue
            first_line[key] = row.line
            if key in stored:
                old, new, amount = stored[key]
                if (old, new, None if amount is None else amount.normalize()) == (
                    row.ratio_old,
                    row.ratio_new,
                    None if row.amount is None else row.amount.normalize(),
                ):
                    report.skip(row.line, f"this {row.kind} of {instrument} ex {row.ex_date} is already stored")
                else:
                    report.add_problem(
                        row.line,
                        f"a {row.kind} of {instrument} ex {row.ex_date} is already stored with "
                        f"{_action_figures(row.kind, old, new, amount)}, not {_action_figures(row.kind, *figures)}: "
                        "correct it in the admin",
                    )
                continue
            kept.append((row, instrument))
            report.instruments.add(str(instrument))
        return kept

    def build(row: CorporateActionRow, instrument: Instrument | None) -> CorporateAction:
        return CorporateAction(
            instrument=instrument,
            kind=row.kind,
            ex_date=row.ex_date,
            ratio_old=row.ratio_old,
            ratio_new=row.ratio_new,
            amount=row.amount,
            source=path.name[:100],
        )

    validator = CorporateActionValidator(floor=DATE_FLOOR, latest=timezone.localdate() + LOOK_AHEAD)
    kind: _Kind[Any] = _Kind(
        check=validator.check,
        fresh=fresh,
        build=build,
        model=CorporateAction,
        symbol_of=lambda row: row.symbol,
        placed=placed,
    )
    return _import(path, report, CORPORATE_ACTION_COLUMNS, kind, actor_label, actor)
