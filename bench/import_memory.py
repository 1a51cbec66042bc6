"""Peak memory and speed of ``import_bars`` on a large file, on the desk's current database.

Run from the project root:

    .venv/bin/python bench/import_memory.py [--rows 1000000] [--symbols 400] [--modes dry,real]

It writes a bars CSV of ``--rows`` valid rows (``--symbols`` synthetic instruments, one row per
instrument per weekday, dates ending 2025-12-31) to a temp directory, then imports it in a fresh
child process per mode, because ``ru_maxrss`` is a high-water mark for the whole process:

- ``dry``: ``import_bars(path, dry_run=True)``: read and validate every row, write nothing;
- ``real``: ``import_bars(path)``: validate and write every row in one transaction.

Each child prints its resident memory right after Django started (the floor nothing can go
under), its peak resident memory (``resource.getrusage(RUSAGE_SELF).ru_maxrss``) and the rows per
second of the import itself.

The database is whatever the settings point at (``DATABASE_URL``, else the SQLite file in
``DESK_DATA_DIR``), migrated beforehand. The bench makes its own instruments on the exchange
``BENCH`` and deletes them and their bars at the end; the import's audit events are kept, as every
import's are. Point ``DESK_DATA_DIR`` at a scratch folder to keep it off the desk's data.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))

EXCHANGE = "BENCH"
LAST_DAY = dt.date(2025, 12, 31)


def _setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def _symbols(count: int) -> list[str]:
    return [f"ZZBENCH{i:04d}" for i in range(count)]


def _weekdays_back(last: dt.date, count: int) -> list[dt.date]:
    days, day = [], last
    while len(days) < count:
        if day.weekday() < 5:
            days.append(day)
        day -= dt.timedelta(days=1)
    return days[::-1]


def write_csv(path: Path, rows: int, symbols: list[str]) -> int:
    """Date-major, like a daily feed: every instrument's bar for a day, then the next day."""
    days = _weekdays_back(LAST_DAY, -(-rows // len(symbols)))
    written = 0
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["symbol", "date", "open", "high", "low", "close", "volume"])
        for day_index, day in enumerate(days):
            for symbol_index, symbol in enumerate(symbols):
                if written == rows:
                    return written
                base = 100 + (day_index * 7 + symbol_index * 13) % 900
                writer.writerow(
                    [
                        symbol,
                        day.isoformat(),
                        f"{base}.25",
                        f"{base + 3}.5",
                        f"{base - 2}.75",
                        f"{base + 1}",
                        1000 + day_index,
                    ]
                )
                written += 1
    return written


def make_instruments(symbols: list[str]) -> None:
    from trading.models import Instrument

    Instrument.objects.bulk_create(
        [Instrument(symbol=s, exchange=EXCHANGE, name=f"bench {s}", currency="INR") for s in symbols],
        ignore_conflicts=True,
    )


def remove_instruments() -> None:
    from trading.models import DailyBar, Instrument

    DailyBar.objects.filter(instrument__exchange=EXCHANGE)._raw_delete(DailyBar.objects.db)
    Instrument.objects.filter(exchange=EXCHANGE).delete()


def child(mode: str, path: Path) -> None:
    _setup_django()
    from trading.market.imports import import_bars

    floor = _peak_rss_mb()
    started = time.perf_counter()
    report = import_bars(path, dry_run=mode == "dry", actor_label="bench/import_memory.py")
    elapsed = time.perf_counter() - started
    status = "ok" if report.ok else f"{len(report.problems)} problem(s): {report.problem_lines()[:3]}"
    rows = report.rows_read
    print(
        f"{mode:>4}: {rows:>9,} rows in {elapsed:7.1f} s = {rows / elapsed:>9,.0f} rows/s; "
        f"peak RSS {_peak_rss_mb():7.1f} MB (after Django setup {floor:6.1f} MB); "
        f"written {report.written:,}; {status}"
    )
    if mode == "real":
        from trading.models import DailyBar

        DailyBar.objects.filter(instrument__exchange=EXCHANGE)._raw_delete(DailyBar.objects.db)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--symbols", type=int, default=400)
    parser.add_argument("--modes", default="dry,real", help="comma-separated: dry, real")
    parser.add_argument("--child", nargs=2, metavar=("MODE", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]))
        return

    _setup_django()
    from django.db import connection

    symbols = _symbols(args.symbols)
    with tempfile.TemporaryDirectory(prefix="desk-import-bench-") as folder:
        path = Path(folder) / "bars.csv"
        started = time.perf_counter()
        rows = write_csv(path, args.rows, symbols)
        size_mb = path.stat().st_size / 1e6
        print(f"database: {connection.vendor} {connection.settings_dict['NAME']}")
        took = time.perf_counter() - started
        print(f"file: {rows:,} rows, {size_mb:.1f} MB, {len(symbols)} symbols, written in {took:.1f} s")
        remove_instruments()
        make_instruments(symbols)
        try:
            for mode in args.modes.split(","):
                subprocess.run([sys.executable, __file__, "--child", mode, str(path)], check=True)
        finally:
            remove_instruments()


if __name__ == "__main__":
    main()
