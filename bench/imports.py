"""Rows per second importing daily bars: N symbols × Y years, on the embedded database and on
PostgreSQL.

Run from the project root:

    .venv/bin/python bench/imports.py                          # 20 symbols × 2 years, embedded only
    .venv/bin/python bench/imports.py --symbols 500 --years 10 # the issue's target (~1.25M rows)
    DATABASE_URL=postgres://user@host:5432/desk .venv/bin/python bench/imports.py --symbols 500 --years 10

It writes one bars CSV in the desk's format (``--symbols`` synthetic NSE instruments, one bar per
NSE session of the last ``--years`` years, symbol by symbol as concatenated per-symbol files are)
and imports it with ``import_bars`` in a fresh child process per database: the dry run (read and
validate every row, sessions checked against the exchange calendar, quality figures) and the real
import (the same, written in one transaction). The embedded run uses a throwaway SQLite file in a
temp folder; when ``DATABASE_URL`` (or ``--postgres``) names a PostgreSQL server, a throwaway
database ``desk_bench_imports`` (or the ``desk_bench_imports…`` database ``--postgres`` names) is
created on it, used and dropped. Nothing touches the desk's data.

Wall-clock figures depend on what else the machine runs; each line also prints the CPU seconds the
importing process used and, for a PostgreSQL server on this machine, the CPU seconds its backend
spent on the import's connection (read from /proc): on a busy machine these say what the import
costs where the wall clock cannot.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))

LAST_DAY = dt.date(2026, 10, 30)
PREFIX = "ZZB"
BENCH_DB = "desk_bench_imports"


def _sessions(years: int) -> list[dt.date]:
    from trading.market.domain.calendar import sessions

    return sessions("NSE", LAST_DAY - dt.timedelta(days=round(365.25 * years)), LAST_DAY)


def write_file(path: Path, symbols: int, years: int) -> int:
    days = _sessions(years)
    rng = random.Random(7)
    rows = 0
    with path.open("w", newline="", encoding="utf-8") as handle:
        out = csv.writer(handle)
        out.writerow(["symbol", "date", "open", "high", "low", "close", "volume"])
        for n in range(symbols):
            close = 100.0 + n
            for day in days:
                open_ = close * (1 + rng.gauss(0, 0.004))
                close = max(1.0, close * (1 + rng.gauss(0.0003, 0.015)))
                high = max(open_, close) * (1 + abs(rng.gauss(0, 0.005)))
                low = min(open_, close) * (1 - abs(rng.gauss(0, 0.005)))
                out.writerow(
                    [
                        f"{PREFIX}{n:04d}",
                        day.isoformat(),
                        f"{open_:.2f}",
                        f"{high:.2f}",
                        f"{low:.2f}",
                        f"{close:.2f}",
                        rng.randint(10_000, 5_000_000),
                    ]
                )
                rows += 1
    return rows


# --- the child: one database ------------------------------------------------------------------------


def child(database: str, path: Path, symbols: int, data_dir: Path) -> dict:
    os.environ["DESK_DATA_DIR"] = str(data_dir)
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    for name in ("REDIS_URL", "REQUIRE_SERVICES"):
        os.environ.pop(name, None)
    if database == "embedded":
        os.environ.pop("DATABASE_URL", None)
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    from trading.market.imports import import_bars
    from trading.models import DailyBar, Instrument

    Instrument.objects.bulk_create(
        Instrument(symbol=f"{PREFIX}{n:04d}", exchange="NSE", name=f"Bench {n}") for n in range(symbols)
    )
    figures: dict = {"database": connection.vendor}
    server = _server_pid(connection)
    for mode in ("dry", "real"):
        started, cpu_started, server_started = time.perf_counter(), time.process_time(), _cpu_of(server)
        report = import_bars(path, dry_run=mode == "dry", actor_label="bench/imports.py")
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        server_cpu = _cpu_of(server) - server_started if server else None
        if not report.ok:
            raise SystemExit("\n".join(report.problem_lines()[:10]))
        figures[mode] = {
            "rows": report.rows_read,
            "seconds": round(elapsed, 2),
            "rows_per_s": round(report.rows_read / elapsed),
            "cpu_seconds": round(cpu, 2),
            "server_cpu_seconds": round(server_cpu, 2) if server_cpu is not None else None,
        }
    figures["stored"] = DailyBar.objects.count()
    return figures


def _server_pid(connection: object) -> int | None:
    """The PostgreSQL backend serving this connection, when it runs on this machine (its CPU time
    is then read from /proc: the server's share of the work)."""
    if getattr(connection, "vendor", "") != "postgresql":
        return None
    with connection.cursor() as cursor:  # type: ignore[attr-defined]
        cursor.execute("SELECT pg_backend_pid()")
        pid = int(cursor.fetchone()[0])
    return pid if Path(f"/proc/{pid}/stat").exists() else None


def _cpu_of(pid: int | None) -> float:
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _postgres_url(args: argparse.Namespace) -> str | None:
    """The throwaway database's URL: ``desk_bench_imports`` on the named server, or the database
    ``--postgres`` names when it starts with that (``desk_bench_imports_2``: two runs side by side
    on one server); never any other database, which may hold the desk's data."""
    url = args.postgres or os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        return None
    base, _, name = url.rpartition("/")
    return f"{base}/{name if args.postgres and name.startswith(BENCH_DB) else BENCH_DB}"


def _run_child(database: str, path: Path, symbols: int, env: dict[str, str]) -> dict:
    with tempfile.TemporaryDirectory(prefix="desk-bench-imports-") as data_dir:
        output = subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                database,
                "--file",
                str(path),
                "--symbols",
                str(symbols),
                "--data-dir",
                data_dir,
            ],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    return json.loads(output.strip().splitlines()[-1])


def _with_postgres(url: str, path: Path, symbols: int) -> dict:
    import psycopg
    from psycopg import sql

    base, _, name = url.rpartition("/")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        return _run_child("postgres", path, symbols, {**os.environ, "DATABASE_URL": url})
    finally:
        with psycopg.connect(f"{base}/postgres", autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--symbols", type=int, default=20)
    parser.add_argument("--years", type=int, default=2)
    parser.add_argument("--postgres", help="a PostgreSQL URL (default: DATABASE_URL when it is one)")
    parser.add_argument("--no-embedded", action="store_true", help="skip the SQLite run")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--data-dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.file, args.symbols, args.data_dir)))
        return

    with tempfile.TemporaryDirectory(prefix="desk-bench-imports-") as folder:
        path = Path(folder) / "bars.csv"
        started = time.perf_counter()
        rows = write_file(path, args.symbols, args.years)
        size_mb = path.stat().st_size / 1024 / 1024
        print(
            f"file: {args.symbols} symbols × {args.years} years = {rows:,} rows, {size_mb:.1f} MB "
            f"(written in {time.perf_counter() - started:.1f} s)"
        )
        runs = []
        if not args.no_embedded:
            runs.append(("embedded (SQLite)", lambda: _run_child("embedded", path, args.symbols, dict(os.environ))))
        url = _postgres_url(args)
        if url:
            runs.append((f"PostgreSQL ({url.rpartition('@')[2]})", lambda: _with_postgres(url, path, args.symbols)))
        else:
            print("PostgreSQL: skipped (set DATABASE_URL or --postgres to a postgres:// URL)")
        for label, run in runs:
            figures = run()
            for mode, text in (("dry", "dry run (validate only)"), ("real", "import (validate + write)")):
                f = figures[mode]
                server = f["server_cpu_seconds"]
                server_text = f", PostgreSQL backend CPU {server:.2f} s" if server is not None else ""
                print(
                    f"{label:<32} {text:<26} {f['rows']:>10,} rows  {f['seconds']:>7.2f} s  "
                    f"{f['rows_per_s']:>9,} rows/s  (importer CPU {f['cpu_seconds']:.2f} s{server_text})"
                )
            assert figures["stored"] == rows, figures


if __name__ == "__main__":
    main()
