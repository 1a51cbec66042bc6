"""How long the runs page takes as the history grows: 1,000 and then 10,000 runs stored.

Run from the project root:

    .venv/bin/python bench/runs_page.py [--quick] [--repeat N] [--calls-per-run K] [--postgres URL] [--keep]

A throwaway SQLite database in a fresh temp directory (removed at the end unless ``--keep``), or,
with ``--postgres postgres://user@host:5432/desk_bench_runs``, a PostgreSQL database of that name
created for the bench and dropped after it (it must not exist). Runs are bulk-inserted with K model
calls each (prompt, system and reply of realistic length, since the sums read those rows), and the
page ``/runs/`` is fetched through ``django.test.Client`` in process by a logged-in viewer: the
median of N fetches after two warm-ups, with the query count, for two shapes of the same page:

- ``old``: the model calls summed for every run, then sorted and cut to one page (the shape
  before; kept here only, by replacing ``selectors.run_page`` in the bench process);
- ``new``: the page of runs first (a count, then fifty runs), then the sums for those runs only
  (``selectors.run_page``).

The selector alone (the rows the page shows, no template) is timed the same way.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from unittest import mock

PROJECT_ROOT = Path(__file__).resolve().parent.parent
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))

from bench.pipeline import cpu_count, cpu_model, use_throwaway_database  # noqa: E402 - needs the project root

SIZES = (1_000, 10_000)
BATCH = 500
SYSTEM_TEXT = "You are a careful analyst on an Indian equities desk. " * 10  # ~550 characters
PROMPT_TEXT = "close 2,841.35; SMA50 2,790.10; RSI14 58.2; ATR14 41.7; headline: results beat. " * 18  # ~1.5 kB
REPLY_TEXT = '{"stance": "bullish", "confidence": 0.62, "evidence": ["RSI 58", "ATR 41.7"]} ' * 8


# --- database -----------------------------------------------------------------------------------


@contextmanager
def postgres_database(url: str) -> Iterator[None]:
    """Creates the database named in ``url``, points Django at it, drops it afterwards."""
    import psycopg
    from psycopg import sql

    base, _, name = url.rpartition("/")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    os.environ["DATABASE_URL"] = url
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    try:
        import django

        django.setup()
        yield
    finally:
        from django.db import connections

        connections.close_all()
        with psycopg.connect(f"{base}/postgres", autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


# --- data ---------------------------------------------------------------------------------------


def seed_runs(instrument: object, count: int, calls_per_run: int) -> None:
    from agents.models import ModelCall
    from trading.models import PipelineRun

    roles = ("news", "technical", "fundamental", "sentiment", "bull", "bear", "manager", "trader")
    for start in range(0, count, BATCH):
        runs = PipelineRun.objects.bulk_create(
            PipelineRun(instrument=instrument, as_of=dt.date(2026, 11, 20), provider="offline", status="completed")
            for _ in range(min(BATCH, count - start))
        )
        ModelCall.objects.bulk_create(
            ModelCall(
                run=run,
                role=roles[n % len(roles)],
                symbol="RELIANCE",
                tier="default",
                provider="offline",
                model="rules",
                prompt_key=f"{run.pk}-{n}",
                system=SYSTEM_TEXT,
                prompt=PROMPT_TEXT,
                reply=REPLY_TEXT,
                input_tokens=900 + n,
                output_tokens=140,
                cost=Decimal("0.0042"),
                ok=True,
            )
            for run in runs
            for n in range(calls_per_run)
        )


def analyze() -> None:
    """Fresh planner statistics, as a live database has: right after a bulk insert PostgreSQL's
    planner still believes the tables are empty until autovacuum gets round to them."""
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")


def viewer_client() -> object:
    from django.contrib.auth import get_user_model
    from django.test import Client

    from trading.access import VIEWER, ensure_desk_groups

    user = get_user_model().objects.create_user(username="bench-viewer", password="bench only")
    user.groups.add(ensure_desk_groups()[VIEWER])
    client = Client()
    client.force_login(user)
    return client


# --- the two shapes -----------------------------------------------------------------------------


def old_run_rows(*, with_replays: bool, limit: int = 100) -> list:
    """The page's query before: every run's calls summed, then sorted and cut."""
    from decimal import Decimal

    from django.db.models import Sum

    from trading.models import PipelineRun
    from trading.pipeline.selectors import RunRow

    runs = PipelineRun.objects.select_related("instrument", "thesis")
    if not with_replays:
        runs = runs.filter(is_replay=False)
    runs = runs.annotate(
        tokens=Sum("model_calls__input_tokens") + Sum("model_calls__output_tokens"), cost=Sum("model_calls__cost")
    ).order_by("-created_at", "-id")[:limit]
    return [RunRow(run=r, tokens=r.tokens or 0, cost=r.cost or Decimal(0)) for r in runs]


def median_ms(action: Callable[[], object], repeat: int) -> float:
    for _ in range(2):
        action()
    timings = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        timings.append((time.perf_counter() - started) * 1000)
    return statistics.median(timings)


def queries_of(action: Callable[[], object]) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        action()
    return len(captured.captured_queries)


def measure(client: object, repeat: int) -> dict[str, tuple[float, float, int]]:
    """shape -> (page ms, selector ms, page queries)"""
    from trading.pipeline import selectors

    new_run_rows = selectors.run_rows

    def old_page(filters: object, number: int, *, per_page: int = selectors.RUNS_PER_PAGE) -> tuple:
        """The page as it was: the latest runs with every run's sums, no count."""
        from django.core.paginator import Paginator

        rows = old_run_rows(with_replays=getattr(filters, "kind", "live") != "live", limit=per_page)
        return Paginator(rows, per_page).get_page(1), rows

    def page() -> None:
        response = client.get("/runs/")
        assert response.status_code == 200, response.status_code

    results = {}
    for shape, rows, page_of in (("old", old_run_rows, old_page), ("new", new_run_rows, selectors.run_page)):
        with mock.patch.object(selectors, "run_page", page_of):
            assert [r.tokens for r in rows(with_replays=False)] == [r.tokens for r in new_run_rows(with_replays=False)]
            results[shape] = (
                median_ms(page, repeat),
                median_ms(lambda rows=rows: rows(with_replays=False), repeat),
                queries_of(page),
            )
    return results


# --- main ---------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="100 and 1,000 runs, 5 fetches")
    parser.add_argument("--repeat", type=int, default=15, help="fetches per measurement (median)")
    parser.add_argument("--calls-per-run", type=int, default=6)
    parser.add_argument("--postgres", metavar="URL", help="a PostgreSQL database to create, use and drop")
    parser.add_argument("--keep", action="store_true", help="keep the SQLite temp directory")
    args = parser.parse_args()
    sizes = (100, 1_000) if args.quick else SIZES
    repeat = 5 if args.quick else args.repeat

    data_dir = Path(tempfile.mkdtemp(prefix="bench-runs-page-"))
    try:
        if args.postgres:
            os.environ["DESK_DATA_DIR"] = str(data_dir)
            for name in ("REDIS_URL", "REQUIRE_SERVICES"):
                os.environ.pop(name, None)
            with postgres_database(args.postgres):
                run(sizes, repeat, args.calls_per_run, "PostgreSQL")
        else:
            use_throwaway_database(data_dir)
            run(sizes, repeat, args.calls_per_run, "SQLite")
    finally:
        if args.keep and not args.postgres:
            print(f"kept {data_dir}")
        else:
            shutil.rmtree(data_dir, ignore_errors=True)


def run(sizes: tuple[int, ...], repeat: int, calls_per_run: int, engine: str) -> None:
    from django.core.management import call_command

    from trading.models import Instrument

    call_command("migrate", verbosity=0)
    instrument = Instrument.objects.create(symbol="RELIANCE", exchange="NSE", name="Reliance Industries")
    client = viewer_client()
    print(f"runs page: {engine}, {calls_per_run} model calls per run, median of {repeat} fetches after 2 warm-ups")
    print(f"machine: {cpu_model()}, {cpu_count()} CPUs, Python {sys.version.split()[0]}")
    print(f"{'runs':>7} {'calls':>7}  {'shape':<5} {'page ms':>9} {'selector ms':>12} {'queries':>8}")
    stored = 0
    for size in sizes:
        seed_runs(instrument, size - stored, calls_per_run)
        stored = size
        analyze()
        for shape, (page_ms, selector_ms, queries) in measure(client, repeat).items():
            calls = size * calls_per_run
            print(f"{size:>7,} {calls:>7,}  {shape:<5} {page_ms:>9.1f} {selector_ms:>12.1f} {queries:>8}")


if __name__ == "__main__":
    main()
