"""How fast the approval queue and a thesis page answer, with 100 and with 10,000 theses stored.

Run from the project root:

    .venv/bin/python bench/book.py [--quick] [--requests N] [--concurrency C] [--server daphne|runserver]

Everything happens in a throwaway SQLite database under a fresh temp directory (removed at the end
unless ``--keep``). The bench seeds the demo market, runs the pipeline for real once per demo
instrument (so a thesis page has a full stage record, a chart and risk checks to show), then:

1. Fills the table to 100 theses (copies of the real ones, as ``_bulk_theses`` in the tests do:
   a few dozen pending on several instruments, the rest expired, rejected or refused by risk),
   counts the SQL queries each page makes through ``django.test.Client`` in process, starts a real
   server (daphne, as the desk runs it) on 127.0.0.1 with the same environment, logs an approver
   in through the login form, and drives a bounded load: N requests per page from C threads, each
   keeping its HTTP/1.1 connection alive (plus a short one-at-a-time pass: the service time).
2. Fills the table to 10,000 theses (300 pending) while the server keeps running, and repeats
   the query counts and the load.

Pages: ``/theses/`` (the queue: pending, the default), ``/theses/?status=all`` (every thesis
sorted by conviction, paginated: what grows with the table) and ``/theses/<id>/`` (a real pending
thesis, seen by an approver: chart, stage record, staleness check, decide buttons).
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.client import HTTPConnection, HTTPException, HTTPResponse
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import urlencode

PROJECT_ROOT = Path(__file__).resolve().parent.parent
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))

from bench.pipeline import (  # noqa: E402 - needs the project root on sys.path
    cpu_count,
    cpu_model,
    load_average,
    percentile,
    use_throwaway_database,
)

HOST = "127.0.0.1"
USERNAME = "bench-approver"
PASSWORD = "bench only, in a throwaway database"
SIZES = ((100, 40), (10_000, 300))  # (theses stored, of which pending)
DECIDED = ("expired", "rejected", "risk_rejected")  # statuses the non-pending copies cycle through
SERVER_START_TIMEOUT_S = 60
REQUEST_TIMEOUT_S = 30


@dataclass(frozen=True)
class Page:
    label: str
    path: str


# --- data ------------------------------------------------------------------------------------------


def approver_user() -> object:
    from django.contrib.auth import get_user_model

    from trading.access import APPROVER, ensure_desk_groups

    user = get_user_model().objects.create_user(username=USERNAME, password=PASSWORD)
    user.groups.add(ensure_desk_groups()[APPROVER])
    return user


def real_theses() -> list[object]:
    """One real offline run per demo instrument on the demo's last session, with roomy limits (as
    the tests' ``pending_thesis``) so the risk engine passes most of them."""
    from decimal import Decimal

    from trading.book.accounts import default_account
    from trading.market.demo_seed import seed_demo
    from trading.models import Account, DailyBar, Instrument, Thesis
    from trading.pipeline.orchestrator import pipeline_run_create, pipeline_run_execute

    seed_demo()
    account = default_account()
    Account.objects.filter(pk=account.pk).update(max_notional_pct=Decimal("100"), exposure_cap_pct=Decimal("500"))
    as_of = DailyBar.objects.latest("date").date
    for instrument in Instrument.objects.filter(is_active=True):
        pipeline_run_execute(pipeline_run_create(instrument=instrument, as_of=as_of, provider="offline").pk)
    return list(Thesis.objects.select_related("instrument", "run").order_by("id"))


def copies(templates: Sequence[object], count: int, statuses: Sequence[str]) -> None:
    """``count`` theses copied from ``templates`` (cycled), each on a run of its own, in bulk."""
    from trading.models import PipelineRun, Thesis

    if count <= 0:
        return
    picks = list(itertools.islice(itertools.cycle(templates), count))
    runs = PipelineRun.objects.bulk_create(
        (
            PipelineRun(instrument=t.instrument, as_of=t.run.as_of, provider="offline", status="completed")
            for t in picks
        ),
        batch_size=2_000,
    )
    Thesis.objects.bulk_create(
        (
            Thesis(
                run=run,
                account_id=t.account_id,
                instrument=t.instrument,
                direction=t.direction,
                conviction=t.conviction,
                entry=t.entry,
                stop=t.stop,
                target=t.target,
                horizon_sessions=t.horizon_sessions,
                quantity=t.quantity,
                risk_amount=t.risk_amount,
                notional=t.notional,
                risk_approved=status != "risk_rejected" and t.risk_approved,
                risk_checks=t.risk_checks,
                payload=t.payload,
                status=status,
                expires_at=t.expires_at,
            )
            for t, run, status in zip(picks, runs, itertools.cycle(statuses), strict=False)
        ),
        batch_size=2_000,
    )


def fill_to(total: int, pending: int, templates: Sequence[object], pending_templates: Sequence[object]) -> None:
    """Top the table up to ``total`` theses of which ``pending`` wait for a person."""
    from trading.models import Thesis

    new_pending = pending - Thesis.objects.filter(status="pending").count()
    copies(pending_templates, new_pending, ["pending"])
    copies(templates, total - Thesis.objects.count(), DECIDED)


def thesis_counts() -> tuple[int, int]:
    from trading.models import Thesis

    return Thesis.objects.count(), Thesis.objects.filter(status="pending").count()


# --- SQL queries per page, in process ---------------------------------------------------------------


@dataclass(frozen=True)
class PageQueries:
    count: int
    db_ms: float  # the database's share of the request: every query timed as it executes
    slowest_ms: float
    slowest_sql: str


@dataclass
class QueryTimer:
    """A ``connection.execute_wrapper``: each query's ms, in order (the debug cursor rounds to 1 ms)."""

    ms: list[float] = field(default_factory=list)

    def __call__(
        self, execute: Callable[..., object], sql: str, params: object, many: bool, context: dict[str, object]
    ) -> object:
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.ms.append((time.perf_counter() - started) * 1000)


def page_queries(captured: Sequence[dict[str, str]], timer: QueryTimer) -> PageQueries:
    if len(timer.ms) != len(captured):
        raise SystemExit(f"{len(captured)} queries captured but {len(timer.ms)} timed")
    slowest_ms, slowest_sql = max(zip(timer.ms, (query["sql"] for query in captured), strict=True), default=(0, ""))
    return PageQueries(len(captured), sum(timer.ms), slowest_ms, slowest_sql)


def query_counts(pages: Sequence[Page], user: object) -> dict[str, PageQueries]:
    """Queries per page through the test client (one request first, so lazy first-use work is not
    counted), with the same logged-in approver."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client()
    client.force_login(user)
    counts = {}
    for page in pages:
        client.get(page.path)
        timer = QueryTimer()
        with CaptureQueriesContext(connection) as captured, connection.execute_wrapper(timer):
            response = client.get(page.path)
        if response.status_code != 200:
            raise SystemExit(f"{page.path} answered {response.status_code} in process")
        counts[page.label] = page_queries(captured.captured_queries, timer)
    return counts


# --- the server ------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def server_command(server: str, port: int) -> list[str]:
    if server == "daphne":
        return [sys.executable, "-m", "daphne", "-b", HOST, "-p", str(port), "config.asgi:application"]
    return [sys.executable, "manage.py", "runserver", "--noreload", "--nothreading", f"{HOST}:{port}"]


@contextmanager
def running_server(server: str, log_path: Path) -> Iterator[int]:
    """The server as a subprocess with this process's environment (the temp DESK_DATA_DIR and the
    rest), stopped (its own process only) on the way out."""
    port = free_port()
    with log_path.open("w") as log:
        process = subprocess.Popen(
            server_command(server, port), cwd=PROJECT_ROOT, env=dict(os.environ), stdout=log, stderr=subprocess.STDOUT
        )
        try:
            wait_until_serving(process, port, log_path)
            yield port
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def wait_until_serving(process: subprocess.Popen, port: int, log_path: Path) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server exited with {process.returncode}:\n{log_path.read_text()[-3000:]}")
        try:
            connection = HTTPConnection(HOST, port, timeout=2)
            connection.request("GET", "/login/")
            if connection.getresponse().status == 200:
                connection.close()
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"the server did not answer within {SERVER_START_TIMEOUT_S} s:\n{log_path.read_text()[-3000:]}")


def cookies_of(response: HTTPResponse) -> dict[str, str]:
    jar = SimpleCookie()
    for header in response.headers.get_all("Set-Cookie") or []:
        jar.load(header)
    return {name: morsel.value for name, morsel in jar.items()}


def log_in(port: int) -> str:
    """The approver logs in through the form, as a person would: GET for the CSRF token, POST."""
    connection = HTTPConnection(HOST, port, timeout=REQUEST_TIMEOUT_S)
    connection.request("GET", "/login/")
    response = connection.getresponse()
    csrf_cookie = cookies_of(response)["csrftoken"]
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', response.read().decode())
    if token is None:
        raise SystemExit("no CSRF token in the login form")
    form = {"username": USERNAME, "password": PASSWORD, "csrfmiddlewaretoken": token.group(1), "next": "/theses/"}
    headers = {"Content-Type": "application/x-www-form-urlencoded", "Cookie": f"csrftoken={csrf_cookie}"}
    connection.request("POST", "/login/", body=urlencode(form), headers=headers)
    response = connection.getresponse()
    response.read()
    session = cookies_of(response).get("sessionid")
    connection.close()
    if response.status != 302 or not session:
        raise SystemExit(f"login failed: {response.status}")
    return f"sessionid={session}; csrftoken={csrf_cookie}"


# --- the load ----------------------------------------------------------------------------------------


@dataclass
class Load:
    requests: int = 0
    latencies: list[float] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    connections: int = 0
    body_bytes: int = 0
    elapsed_s: float = 0.0

    def merge(self, other: Load) -> None:
        self.latencies += other.latencies
        self.statuses += other.statuses
        self.errors += other.errors
        self.connections += other.connections
        self.body_bytes += other.body_bytes


def one_client(port: int, path: str, cookie: str, next_index: Iterator[int], limit: int, stop_at: float) -> Load:
    """One thread: a kept-alive connection, requests until the shared count or the deadline."""
    load = Load()
    connection = HTTPConnection(HOST, port, timeout=REQUEST_TIMEOUT_S)
    try:
        while next(next_index) < limit and time.monotonic() < stop_at:
            if connection.sock is None:
                load.connections += 1
            started = time.perf_counter()
            try:
                connection.request("GET", path, headers={"Cookie": cookie})
                response = connection.getresponse()
                body = response.read()
            except (OSError, HTTPException) as error:
                load.errors[type(error).__name__] += 1
                connection.close()
                continue
            load.latencies.append(time.perf_counter() - started)
            load.statuses[response.status] += 1
            load.body_bytes += len(body)
            if response.will_close:
                connection.close()
    finally:
        connection.close()
    return load


def drive(port: int, path: str, cookie: str, requests: int, concurrency: int, time_limit_s: float) -> Load:
    """``requests`` GETs of ``path`` from ``concurrency`` threads, stopped early at the time limit."""
    counter = itertools.count()
    lock = threading.Lock()

    def next_index() -> Iterator[int]:
        while True:
            with lock:
                index = next(counter)
            yield index

    total = Load()
    started = time.perf_counter()
    stop_at = time.monotonic() + time_limit_s
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        futures = [
            pool.submit(one_client, port, path, cookie, next_index(), requests, stop_at) for _ in range(concurrency)
        ]
        for future in futures:
            total.merge(future.result())
    total.elapsed_s = time.perf_counter() - started
    total.requests = len(total.latencies) + sum(total.errors.values())
    return total


def check_page(port: int, page: Page, cookie: str) -> None:
    """A logged-in GET must answer 200 with the page, not the login form."""
    connection = HTTPConnection(HOST, port, timeout=REQUEST_TIMEOUT_S)
    connection.request("GET", page.path, headers={"Cookie": cookie})
    response = connection.getresponse()
    body = response.read().decode()
    connection.close()
    if response.status != 200 or ('name="csrfmiddlewaretoken"' in body and "<h1>Log in</h1>" in body):
        raise SystemExit(f"{page.path}: {response.status}, not the page (is the session cookie accepted?)")


# --- printing -----------------------------------------------------------------------------------------


def load_line(label: str, concurrency: int, load: Load) -> str:
    if not load.latencies:
        return f"  {label:<24} C={concurrency}: no answers; errors {dict(load.errors)}"
    ms = [value * 1000 for value in load.latencies]
    problems = {str(k): v for k, v in load.statuses.items() if k != 200} | dict(load.errors)
    return (
        f"  {label:<24} C={concurrency} {load.requests:>5} req {load.requests / load.elapsed_s:>7.1f} req/s  "
        f"p50 {percentile(ms, 50):>7.1f}  p95 {percentile(ms, 95):>7.1f}  p99 {percentile(ms, 99):>7.1f}  "
        f"max {max(ms):>7.1f} ms  {load.body_bytes / len(ms) / 1024:>5.0f} KiB  "
        f"{load.connections} conn{'  NOT 200: ' + str(problems) if problems else ''}"
    )


def print_header(data_dir: Path, args: argparse.Namespace) -> None:
    print(
        f"Machine: {cpu_count()} cores ({cpu_model()}), Python {platform.python_version()}, "
        f"SQLite {sqlite3.sqlite_version} (WAL, synchronous=NORMAL); {load_average()}"
    )
    print(
        f"Settings: throwaway DB {data_dir / 'desk.sqlite3'}; DEBUG off; server {args.server} on {HOST} "
        f"(one process; Django runs sync views on one thread); load generator in this process, "
        f"{args.requests} requests per page at C={args.concurrency} and {args.serial_requests} at C=1, "
        f"each page stopped after {args.time_limit:.0f} s{'; --quick' if args.quick else ''}"
    )


def print_queries(counts: dict[int, dict[str, PageQueries]]) -> None:
    sizes = sorted(counts)
    print("\nSQL queries per page (django.test.Client in process, logged-in approver, after one warm-up request)")
    print("and the time the database took for them (each query timed as it executes):")
    print(f"  {'page':<24} " + " ".join(f"{f'{size:,} theses':>22}" for size in sizes) + "  constant")
    for label in counts[sizes[0]]:
        cells = [counts[size][label] for size in sizes]
        print(
            f"  {label:<24} "
            + " ".join(f"{f'{cell.count} queries, {cell.db_ms:.2f} ms':>22}" for cell in cells)
            + f"  {'yes' if len({cell.count for cell in cells}) == 1 else 'NO'}"
        )
    print(f"  slowest query of each page at {sizes[-1]:,} theses, and SQLite's plan for it:")
    for label, cell in counts[sizes[-1]].items():
        print(f"    {label:<22} {cell.slowest_ms:6.2f} ms  {shorten(cell.slowest_sql)}")
        print(f"    {'':<22}    plan: {query_plan(cell.slowest_sql)}")


def shorten(sql: str, width: int = 140) -> str:
    """The SELECT list is long and tells little: keep its start, and FROM onwards (the end if long)."""
    sql = re.sub(r"\s+", " ", sql)
    head, _, tail = sql.partition(" FROM ")
    text = f"{head[:30]}... FROM {tail}" if tail and len(head) > 30 else sql
    return text if len(text) <= width else f"{text[:60]} ... {text[-(width - 65) :]}"


def query_plan(sql: str) -> str:
    """EXPLAIN QUERY PLAN of a captured query (its parameters are already inlined by Django)."""
    from django.db import DatabaseError, connection

    try:
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN QUERY PLAN {sql}")
            return "; ".join(row[-1] for row in cursor.fetchall())
    except DatabaseError as error:
        return f"unavailable ({error})"


# --- entry point ----------------------------------------------------------------------------------------


def pages_for(thesis: object) -> list[Page]:
    return [
        Page("/theses/", "/theses/"),
        Page("/theses/?status=all", "/theses/?status=all"),
        Page(f"/theses/{thesis.pk}/", f"/theses/{thesis.pk}/"),
    ]


def measure_size(port: int, cookie: str, pages: Sequence[Page], args: argparse.Namespace, fill_s: float) -> None:
    stored, pending = thesis_counts()
    print(f"\n{stored:,} theses stored, {pending:,} pending (table filled in {fill_s:.1f} s); latency in ms:")
    for page in pages:
        check_page(port, page, cookie)
        drive(port, page.path, cookie, 5, 1, args.time_limit)  # warm-up, not reported
        if args.serial_requests:
            serial = drive(port, page.path, cookie, args.serial_requests, 1, args.time_limit)
            print(load_line(page.label, 1, serial))
        loaded = drive(port, page.path, cookie, args.requests, args.concurrency, args.time_limit)
        print(load_line(page.label, args.concurrency, loaded))


def bench(args: argparse.Namespace, data_dir: Path) -> None:
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    print_header(data_dir, args)
    started = time.perf_counter()
    user = approver_user()
    templates = real_theses()
    pending_templates = [t for t in templates if t.status == "pending"]
    if not pending_templates:
        raise SystemExit("no real thesis passed the risk engine; nothing to put in the queue")
    target = pending_templates[0]
    pages = pages_for(target)
    instruments = sorted({t.instrument.symbol for t in pending_templates})
    print(
        f"Seeded the demo and ran the pipeline once per instrument in {time.perf_counter() - started:.1f} s: "
        f"{len(templates)} real theses, {len(pending_templates)} pending, copied for the pending theses "
        f"({', '.join(instruments)}); thesis page: #{target.pk} {target.instrument.symbol} {target.direction} "
        f"(a real run, {target.run.stages.count()} stages)"
    )
    counts: dict[int, dict[str, PageQueries]] = {}
    with running_server(args.server, data_dir / "server.log") as port:
        cookie = log_in(port)
        print(f"Server {args.server} on {HOST}:{port}; approver {USERNAME!r} logged in through the login form")
        for total, pending in SIZES:
            filled = time.perf_counter()
            fill_to(total, pending, templates, pending_templates)
            fill_s = time.perf_counter() - filled
            counts[total] = query_counts(pages, user)
            measure_size(port, cookie, pages, args, fill_s)
    print_queries(counts)
    print_server_problems(data_dir / "server.log")


def print_server_problems(log_path: Path) -> None:
    lines = [line for line in log_path.read_text().splitlines() if "ERROR" in line or "Traceback" in line]
    print(f"Server log: {len(lines)} error line(s){': ' + lines[0] if lines else ''}")


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=500, help="requests per page at --concurrency")
    parser.add_argument("--concurrency", type=int, default=4, help="client threads, each with its own connection")
    parser.add_argument("--serial-requests", type=int, default=100, help="requests per page one at a time (0: none)")
    parser.add_argument("--time-limit", type=float, default=120.0, help="seconds at most per page and pass")
    parser.add_argument("--server", choices=("daphne", "runserver"), default="daphne")
    parser.add_argument("--quick", action="store_true", help="100 requests per page, 30 one at a time")
    parser.add_argument("--keep", action="store_true", help="keep the temp directory (its path is printed)")
    args = parser.parse_args()
    if args.quick:
        args.requests, args.serial_requests = 100, 30
    if args.requests < 1 or args.concurrency < 1 or args.serial_requests < 0:
        parser.error("--requests and --concurrency must be at least 1, --serial-requests at least 0")
    return args


def main() -> None:
    args = parse_arguments()
    started = time.perf_counter()
    data_dir = Path(tempfile.mkdtemp(prefix="desk-bench-book-"))
    os.environ["DEBUG"] = "0"  # the server inherits this environment: no query log, no debug pages
    os.environ.pop("ALLOWED_HOSTS", None)  # the default allows 127.0.0.1 and the test client's host
    try:
        use_throwaway_database(data_dir)
        bench(args, data_dir)
    finally:
        if args.keep:
            print(f"\nKept {data_dir}")
        else:
            shutil.rmtree(data_dir, ignore_errors=True)
    print(f"\nBench took {time.perf_counter() - started:.0f} s; {load_average()} at the end.")


if __name__ == "__main__":
    main()
