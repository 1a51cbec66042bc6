"""Import market data from CSV: validate every row, then write all of it or nothing.

Files are streamed: rows are read, validated and written in batches of ``BATCH_ROWS`` inside one
transaction, so memory stays flat whatever the file's size and a problem on the last line still
undoes the first batch. Nothing is written once a problem is found; the rest of the file is still
read, so every problem is reported (the first ``MAX_PROBLEMS_LISTED`` of them, and the count).
"""

from __future__ import annotations

import contextlib
import csv
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Generic, TypeVar
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import IntegrityError, models, transaction
from django.utils import timezone

from trading.audit import audit_record
from trading.market.domain import csv_rows as market_csv
from trading.market.domain.csv_rows import BarRow, FundamentalsRow, NewsRow, RowProblem
from trading.market.domain.news import content_hash
from trading.models import DailyBar, FundamentalsSnapshot, Instrument, NewsItem
from vocabulary.dates import DateWindow

BATCH_ROWS = 5_000
MAX_PROBLEMS_LISTED = 1_000

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

    @property
    def ok(self) -> bool:
        return not self.problems

    def add_problem(self, line: int, reason: str) -> None:
        """Count every problem, keep the first few hundred: a million bad rows must not fill memory."""
        self.problem_count += 1
        if len(self.problems) < MAX_PROBLEMS_LISTED:
            self.problems.append(RowProblem(line, reason))

    def problem_lines(self) -> list[str]:
        return [f"{self.path}:{p.line}: {p.reason}" for p in sorted(self.problems, key=lambda p: p.line)]

    def skipped_lines(self) -> list[str]:
        return [f"{self.path}:{p.line}: skipped, {p.reason}" for p in sorted(self.skipped, key=lambda p: p.line)]

    def summary(self) -> str:
        if self.problems:
            count = max(self.problem_count, len(self.problems))
            listed = f" (first {len(self.problems)} listed)" if count > len(self.problems) else ""
            return f"{self.path}: {count} problem(s) in {self.rows_read} row(s){listed}; nothing was written."
        if self.dry_run:
            return f"{self.path}: {self.accepted} {self.kind} row(s) valid; dry run, nothing was written."
        skipped = f", {len(self.skipped)} skipped" if self.skipped else ""
        return f"{self.path}: wrote {self.written} {self.kind} row(s){skipped}."


def _decoded_lines(handle: IO[bytes], path: Path) -> Iterator[str]:
    """The file's lines as text, decoded one by one so that a bad byte is named by its line (a
    newline byte never occurs inside a UTF-8 sequence, so splitting first is safe)."""
    for number, raw in enumerate(handle, start=1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ImportFileError(
                f"{path}:{number}: not UTF-8 text ({error.reason} at byte {error.start + 1} of the line)"
            ) from None
        yield text.removeprefix("\ufeff") if number == 1 else text


def _csv_problem(error: csv.Error) -> str:
    limit = csv.field_size_limit()
    if "field larger than field limit" in str(error):
        return f"a field is longer than {limit:,} characters (the csv module's limit); reading stopped here"
    return f"unreadable CSV ({error}); reading stopped here"


def _records(reader: Any, header: list[str], report: ImportReport) -> Iterator[tuple[int, dict[str, str]]]:
    """``(line, row)`` for each record, where ``line`` is the file line the record starts on:
    ``reader.line_num`` counts physical lines, so a quoted newline inside a field is counted."""
    previous = reader.line_num
    while True:
        try:
            values = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            # The reader cannot resume after a broken record; nothing will be written anyway.
            report.add_problem(previous + 1, _csv_problem(error))
            return
        line, previous = previous + 1, reader.line_num
        if not values:
            continue  # a blank line
        report.rows_read += 1
        yield line, market_csv.row_from(header, values)


@contextlib.contextmanager
def _csv_rows(
    path: Path, required: Sequence[str], report: ImportReport
) -> Iterator[Iterator[tuple[int, dict[str, str]]] | None]:
    """The file's rows, streamed; None (with the problem reported) when a required column is missing."""
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
            raise ImportFileError(f"{path}: the file is empty (a header row is required: {', '.join(required)})")
        header = market_csv.clean_header(header)
        missing = market_csv.missing_columns(header, required)
        if missing:
            report.add_problem(1, f"missing column(s): {', '.join(missing)}")
            yield None
            return
        yield _records(reader, header, report)


def _date_window() -> DateWindow:
    return DateWindow(today=timezone.localdate(), zone=settings.TIME_ZONE)


class _Symbols:
    """Symbols resolved to instruments as they first appear, once each. ``EXCH:SYM`` names one
    exchange; a bare symbol must be unambiguous."""

    def __init__(self) -> None:
        self._known: dict[str, Instrument | str] = {}

    def resolve(self, symbol: str) -> Instrument | str:
        """The instrument, or the reason the symbol cannot be used."""
        if symbol not in self._known:
            self._known[symbol] = self._lookup(symbol)
        return self._known[symbol]

    @staticmethod
    def _lookup(symbol: str) -> Instrument | str:
        exchange, _, bare = symbol.rpartition(":")
        matches = Instrument.objects.filter(symbol=bare)
        if exchange:
            matches = matches.filter(exchange=exchange)
        found = list(matches.order_by("exchange")[:10])
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


def _import(
    path: Path, report: ImportReport, required: Sequence[str], kind: _Kind[Row], actor_label: str
) -> ImportReport:
    with _csv_rows(path, required, report) as rows:
        if rows is None:
            return report
        try:
            # A dry run writes nothing and takes no write lock; a real import writes batch by batch
            # inside one transaction, left through _Refused (rolled back) on any problem.
            with contextlib.nullcontext() if report.dry_run else transaction.atomic():
                _import_rows(rows, report, kind)
                if report.problems or report.dry_run:
                    raise _Refused
                audit_record(
                    actor_label=actor_label,
                    action=f"import_{report.kind}",
                    target=report.path,
                    details={"written": report.written, "skipped": len(report.skipped), **kind.audit_details()},
                )
        except _Refused:
            report.written = 0
        except IntegrityError as error:
            # Another import raced us between validation and write; the transaction rolled back whole.
            report.written = 0
            report.add_problem(0, f"conflicting rows were written concurrently ({error}); nothing was written")
    return report


def _import_rows(rows: Iterator[tuple[int, dict[str, str]]], report: ImportReport, kind: _Kind[Row]) -> None:
    symbols = _Symbols()
    batch: list[tuple[Row, Instrument | None]] = []
    for line, raw in rows:
        row = kind.check(line, raw)
        if isinstance(row, RowProblem):
            report.add_problem(row.line, row.reason)
            continue
        symbol = kind.symbol_of(row)
        instrument = symbols.resolve(symbol) if symbol else None
        if isinstance(instrument, str):
            report.add_problem(line, instrument)
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
        # _default_manager: the checker cannot know that every model class has ``objects``.
        report.written += len(kind.model._default_manager.bulk_create([kind.build(row, inst) for row, inst in fresh]))


def import_bars(path: Path, *, dry_run: bool = False, actor_label: str = "import_bars") -> ImportReport:
    report = ImportReport(path=str(path), kind="bar", dry_run=dry_run)
    symbols: set[str] = set()

    def fresh(batch: list[tuple[BarRow, Instrument | None]]) -> list[tuple[BarRow, Instrument | None]]:
        stored = set(
            DailyBar.objects.filter(
                instrument__in={inst.pk for _, inst in batch if inst}, date__in={bar.date for bar, _ in batch}
            ).values_list("instrument_id", "date")
        )
        kept = []
        for bar, instrument in batch:
            if (instrument.pk if instrument else None, bar.date) in stored:
                report.add_problem(bar.line, f"duplicate date {bar.date} for {bar.symbol}: already stored")
            else:
                symbols.add(bar.symbol)
                kept.append((bar, instrument))
        return kept

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

    kind = _Kind(
        check=market_csv.BarValidator(_date_window()).check,
        fresh=fresh,
        build=build,
        model=DailyBar,
        symbol_of=lambda bar: bar.symbol,
        audit_details=lambda: {"symbols": sorted(symbols)},
    )
    return _import(path, report, market_csv.BAR_COLUMNS, kind, actor_label)


def import_news(path: Path, *, dry_run: bool = False, actor_label: str = "import_news") -> ImportReport:
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
    return _import(path, report, market_csv.NEWS_COLUMNS, kind, actor_label)


def import_fundamentals(path: Path, *, dry_run: bool = False, actor_label: str = "import_fundamentals") -> ImportReport:
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
    return _import(path, report, market_csv.FUNDAMENTAL_COLUMNS, kind, actor_label)
