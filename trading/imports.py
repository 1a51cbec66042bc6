"""Import market data from CSV: validate every row, then write all of it or nothing."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import IntegrityError, transaction

from trading.audit import audit_record
from trading.domain import market_csv
from trading.domain.market_csv import RowProblem
from trading.domain.news import content_hash
from trading.models import DailyBar, FundamentalsSnapshot, Instrument, NewsItem


class ImportFileError(Exception):
    """The file cannot be read as CSV at all (missing, not UTF-8, no header)."""


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

    @property
    def ok(self) -> bool:
        return not self.problems

    def problem_lines(self) -> list[str]:
        return [f"{self.path}:{p.line}: {p.reason}" for p in sorted(self.problems, key=lambda p: p.line)]

    def skipped_lines(self) -> list[str]:
        return [f"{self.path}:{p.line}: skipped, {p.reason}" for p in sorted(self.skipped, key=lambda p: p.line)]

    def summary(self) -> str:
        if self.problems:
            count = len(self.problems)
            return f"{self.path}: {count} problem(s) in {self.rows_read} row(s); nothing was written."
        if self.dry_run:
            return f"{self.path}: {self.accepted} {self.kind} row(s) valid; dry run, nothing was written."
        skipped = f", {len(self.skipped)} skipped" if self.skipped else ""
        return f"{self.path}: wrote {self.written} {self.kind} row(s){skipped}."


def _read_rows(path: Path, required: Sequence[str], report: ImportReport) -> list[dict[str, str]] | None:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ImportFileError(f"{path}: no such file") from None
    except UnicodeDecodeError as error:
        raise ImportFileError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = market_csv.missing_columns(reader.fieldnames, required)
    if reader.fieldnames is None:
        raise ImportFileError(f"{path}: the file is empty (a header row is required: {', '.join(required)})")
    if missing:
        report.problems.append(RowProblem(1, f"missing column(s): {', '.join(missing)}"))
        return None
    rows = list(reader)
    report.rows_read = len(rows)
    return rows


def _resolve_symbols(
    rows: Iterable[Any], report: ImportReport, symbol_of: Callable[[Any], str | None]
) -> dict[str, Instrument]:
    """Map each symbol in the file to an instrument. ``EXCH:SYM`` names one exchange; a bare symbol
    must be unambiguous. Rows with an unknown symbol are reported and dropped."""
    wanted = {symbol for row in rows if (symbol := symbol_of(row))}
    bare = {s for s in wanted if ":" not in s}
    by_key: dict[str, list[Instrument]] = {}
    for instrument in Instrument.objects.filter(symbol__in={s.split(":", 1)[-1] for s in wanted}):
        by_key.setdefault(instrument.symbol, []).append(instrument)
        by_key.setdefault(f"{instrument.exchange}:{instrument.symbol}".upper(), []).append(instrument)
    resolved: dict[str, Instrument] = {}
    for symbol in wanted:
        matches = by_key.get(symbol, [])
        if len(matches) == 1:
            resolved[symbol] = matches[0]
        elif len(matches) > 1 and symbol in bare:
            exchanges = ", ".join(sorted(m.exchange for m in matches))
            for row in rows:
                if symbol_of(row) == symbol:
                    report.problems.append(
                        RowProblem(row.line, f"symbol {symbol} is listed on {exchanges}: write EXCHANGE:{symbol}")
                    )
    for row in rows:
        symbol = symbol_of(row)
        if symbol and symbol not in resolved and symbol in wanted and not by_key.get(symbol):
            report.problems.append(RowProblem(row.line, f"unknown symbol {symbol}"))
    return resolved


def _finish(
    report: ImportReport, write: Callable[[], int], audit_details: dict[str, Any], actor_label: str
) -> ImportReport:
    if report.problems or report.dry_run:
        return report
    try:
        with transaction.atomic():
            report.written = write()
            audit_record(
                actor_label=actor_label,
                action=f"import_{report.kind}",
                target=report.path,
                details={"written": report.written, "skipped": len(report.skipped), **audit_details},
            )
    except IntegrityError as error:
        # Another import raced us between validation and write; the transaction rolled back whole.
        report.written = 0
        report.problems.append(
            RowProblem(0, f"conflicting rows were written concurrently ({error}); nothing was written")
        )
    return report


def import_bars(path: Path, *, dry_run: bool = False, actor_label: str = "import_bars") -> ImportReport:
    report = ImportReport(path=str(path), kind="bar", dry_run=dry_run)
    raw = _read_rows(path, market_csv.BAR_COLUMNS, report)
    if raw is None:
        return report
    bars, report.problems = market_csv.parse_bar_rows(raw)
    instruments = _resolve_symbols(bars, report, lambda bar: bar.symbol)
    bars = [bar for bar in bars if bar.symbol in instruments]
    stored = set(
        DailyBar.objects.filter(
            instrument__in={i.pk for i in instruments.values()},
            date__in={bar.date for bar in bars},
        ).values_list("instrument_id", "date")
    )
    for bar in bars:
        if (instruments[bar.symbol].pk, bar.date) in stored:
            report.problems.append(RowProblem(bar.line, f"duplicate date {bar.date} for {bar.symbol}: already stored"))
    report.accepted = len(bars)

    def write() -> int:
        created = DailyBar.objects.bulk_create(
            DailyBar(
                instrument=instruments[bar.symbol],
                date=bar.date,
                open=bar.open,
                high=bar.high,
                low=bar.low,
                close=bar.close,
                volume=bar.volume,
            )
            for bar in bars
        )
        return len(created)

    return _finish(report, write, {"symbols": sorted({b.symbol for b in bars})}, actor_label)


def import_news(path: Path, *, dry_run: bool = False, actor_label: str = "import_news") -> ImportReport:
    """Headlines already stored (same scope and normalised text) are skipped, not refused: feeds
    repeat themselves, and a repeat is not an error in the file."""
    report = ImportReport(path=str(path), kind="news", dry_run=dry_run)
    raw = _read_rows(path, market_csv.NEWS_COLUMNS, report)
    if raw is None:
        return report
    tz = ZoneInfo(settings.TIME_ZONE)
    items, report.problems = market_csv.parse_news_rows(raw, default_tz=tz)
    instruments = _resolve_symbols(items, report, lambda item: item.symbol)
    items = [item for item in items if item.symbol is None or item.symbol in instruments]

    def scope_key(item: market_csv.NewsRow) -> str:
        return str(instruments[item.symbol]) if item.symbol else "*"

    hashes = {item.line: content_hash(item.headline, scope_key(item)) for item in items}
    stored = set(NewsItem.objects.filter(content_hash__in=hashes.values()).values_list("content_hash", flat=True))
    first_line: dict[str, int] = {}
    fresh = []
    for item in items:
        digest = hashes[item.line]
        if digest in stored:
            report.skipped.append(RowProblem(item.line, "the same headline is already stored"))
        elif digest in first_line:
            report.skipped.append(RowProblem(item.line, f"same headline as line {first_line[digest]}"))
        else:
            first_line[digest] = item.line
            fresh.append(item)
    report.accepted = len(fresh)

    def write() -> int:
        created = NewsItem.objects.bulk_create(
            NewsItem(
                instrument=instruments.get(item.symbol) if item.symbol else None,
                headline=item.headline,
                source=item.source,
                published_at=item.published_at,
                url=item.url,
                content_hash=hashes[item.line],
            )
            for item in fresh
        )
        return len(created)

    return _finish(report, write, {}, actor_label)


def import_fundamentals(path: Path, *, dry_run: bool = False, actor_label: str = "import_fundamentals") -> ImportReport:
    report = ImportReport(path=str(path), kind="fundamentals", dry_run=dry_run)
    raw = _read_rows(path, market_csv.FUNDAMENTAL_COLUMNS, report)
    if raw is None:
        return report
    snapshots, report.problems = market_csv.parse_fundamentals_rows(raw)
    instruments = _resolve_symbols(snapshots, report, lambda snapshot: snapshot.symbol)
    snapshots = [s for s in snapshots if s.symbol in instruments]
    stored = set(
        FundamentalsSnapshot.objects.filter(
            instrument__in={i.pk for i in instruments.values()}, as_of__in={s.as_of for s in snapshots}
        ).values_list("instrument_id", "as_of")
    )
    for snapshot in snapshots:
        if (instruments[snapshot.symbol].pk, snapshot.as_of) in stored:
            report.problems.append(
                RowProblem(snapshot.line, f"duplicate as_of {snapshot.as_of} for {snapshot.symbol}: already stored")
            )
    report.accepted = len(snapshots)

    def write() -> int:
        created = FundamentalsSnapshot.objects.bulk_create(
            FundamentalsSnapshot(instrument=instruments[s.symbol], as_of=s.as_of, source=s.source, **s.ratios)
            for s in snapshots
        )
        return len(created)

    return _finish(report, write, {}, actor_label)
