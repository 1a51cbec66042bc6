"""How fast the approval queue and a thesis page answer, with 100 and with 10,000 theses stored,
from one web process and from several.

Run from the project root:

    .venv/bin/python bench/book.py [--quick] [--requests N] [--concurrency 1,4,8] [--workers 1,N]
                                   [--server desk|daphne|runserver]

Everything happens in a throwaway SQLite database under a fresh temp directory (removed at the end
unless ``--keep``). The bench seeds the demo market, runs the pipeline for real once per demo
instrument (so a thesis page has a full stage record, a chart and risk checks to show), collects
the static files as ``./desk up`` does (hashed, compressed), then:

1. Fills the table to 100 theses (copies of the real ones, as ``_bulk_theses`` in the tests do:
   a few dozen pending on several instruments, the rest expired, rejected or refused by risk),
   counts the SQL queries each page makes through ``django.test.Client`` in process, and drives a
   bounded load against each server: N requests per page from C threads for each C, each thread
   keeping its HTTP/1.1 connection alive.
2. Fills the table to 10,000 theses (300 pending) while the servers keep running, and repeats.

The servers are started the way ``./desk up`` starts them (``./desk serve``: gunicorn with
DESK_WEB_WORKERS uvicorn workers), one with a single worker (before: one process, as the single
daphne was) and one with N (after; N defaults to ./desk's default, one per core up to 8), both on
127.0.0.1 with the same environment, an approver logged in to each through the login form.

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
import signal
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
from contextlib import ExitStack, contextmanager
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
SERVER_START_TIMEOUT_S = 120
TARGET_P95_MS = 100.0
TARGET_CONCURRENCY = 8
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


def desk_default_workers() -> int:
    """What ./desk serve starts without DESK_WEB_WORKERS: one per core, at most 8."""
    return min(cpu_count(), 8)


def server_command(server: str, port: int) -> list[str]:
    if server == "desk":
        return [str(PROJECT_ROOT / "desk"), "serve"]
    if server == "daphne":
        return [sys.executable, "-m", "daphne", "-b", HOST, "-p", str(port), "config.asgi:application"]
    return [sys.executable, "manage.py", "runserver", "--noreload", "--nothreading", f"{HOST}:{port}"]


@contextmanager
def running_server(server: str, workers: int, log_path: Path) -> Iterator[int]:
    """The server as a subprocess with this process's environment (the temp DESK_DATA_DIR and the
    rest) in a process group of its own (gunicorn's workers are its children), stopped with that
    group on the way out."""
    port = free_port()
    env = {**os.environ, "DESK_HOST": HOST, "DESK_PORT": str(port), "DESK_WEB_WORKERS": str(workers)}
    with log_path.open("w") as log:
        process = subprocess.Popen(
            server_command(server, port),
            cwd=PROJECT_ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            wait_until_serving(process, port, log_path)
            yield port
        finally:
            stop_group(process)


def stop_group(process: subprocess.Popen) -> None:
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


@dataclass
class RunningServer:
    label: str  # "1 worker", "4 workers"
    port: int
    cookie: str = ""


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


def print_header(data_dir: Path, args: argparse.Namespace) -> None:
    print(
        f"Machine: {cpu_count()} cores ({cpu_model()}), Python {platform.python_version()}, "
        f"SQLite {sqlite3.sqlite_version} (WAL, synchronous=NORMAL); {load_average()}"
    )
    server = "./desk serve (gunicorn, uvicorn workers)" if args.server == "desk" else args.server
    print(
        f"Settings: throwaway DB {data_dir / 'desk.sqlite3'}; DEBUG off; static files hashed and compressed; "
        f"server {server} on {HOST} with {' and '.join(str(w) for w in args.workers)} worker process(es) "
        f"(each runs Django's sync views one at a time); load generator in this process (it shares the cores), "
        f"{args.requests} requests per page and concurrency ({args.serial_requests} at C=1), "
        f"each stopped after {args.time_limit:.0f} s{'; --quick' if args.quick else ''}"
    )


def latency_cell(load: Load) -> str:
    if not load.latencies:
        return f"{'no answers':>26}"
    ms = [value * 1000 for value in load.latencies]
    bad = sum(v for k, v in load.statuses.items() if k != 200) + sum(load.errors.values())
    cell = f"{percentile(ms, 50):6.1f} {percentile(ms, 95):7.1f} {load.requests / load.elapsed_s:6.1f}/s"
    return f"{cell}{f' {bad} bad' if bad else '':>7}"


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


def measure_size(
    servers: Sequence[RunningServer], pages: Sequence[Page], args: argparse.Namespace, fill_s: float
) -> dict[tuple[str, str, int], Load]:
    """Every page on every server at every concurrency; prints a table: p50 and p95 in ms, req/s."""
    stored, pending = thesis_counts()
    print(f"\n{stored:,} theses stored, {pending:,} pending (table filled in {fill_s:.1f} s)")
    header = "".join(f"{f'C={c}: p50 p95 ms, req/s':>33}" for c in args.concurrency)
    print(f"  {'page':<22} {'server':<10}{header}")
    results: dict[tuple[str, str, int], Load] = {}
    for page in pages:
        for server in servers:
            check_page(server.port, page, server.cookie)
            widest = max(args.concurrency)
            drive(server.port, page.path, server.cookie, 2 * widest, widest, 30)  # warm-up, not reported
            cells = []
            for concurrency in args.concurrency:
                count = args.serial_requests if concurrency == 1 else args.requests
                load = drive(server.port, page.path, server.cookie, count, concurrency, args.time_limit)
                results[(page.label, server.label, concurrency)] = load
                cells.append(f"{latency_cell(load):>33}")
            print(f"  {page.label:<22} {server.label:<10}{''.join(cells)}", flush=True)
    return results


def print_target(results: dict[tuple[str, str, int], Load], servers: Sequence[RunningServer]) -> None:
    """The issue's target: p95 at most 100 ms at concurrency 8 with 10,000 theses stored."""
    after = servers[-1].label
    print(f"\nTarget p95 <= {TARGET_P95_MS:.0f} ms at C={TARGET_CONCURRENCY}, 10,000 theses, {after}:")
    for (page, server, concurrency), load in results.items():
        if server != after or concurrency != TARGET_CONCURRENCY or not load.latencies:
            continue
        p95 = percentile([value * 1000 for value in load.latencies], 95)
        before = results.get((page, servers[0].label, concurrency))
        was = f" (was {percentile([v * 1000 for v in before.latencies], 95):.1f} ms with {servers[0].label})"
        print(
            f"  {page:<22} p95 {p95:6.1f} ms{was if before and before.latencies else ''}: "
            f"{'met' if p95 <= TARGET_P95_MS else 'NOT met'}"
        )


def bench(args: argparse.Namespace, data_dir: Path) -> None:
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("collectstatic", interactive=False, verbosity=0)  # as ./desk up does, before the servers
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
    with ExitStack() as stack:
        servers = []
        for workers in args.workers:
            label = f"{workers} worker{'s' if workers != 1 else ''}"
            log = data_dir / f"server-{workers}.log"
            port = stack.enter_context(running_server(args.server, workers, log))
            servers.append(RunningServer(label, port, log_in(port)))
        print(
            "Servers: "
            + "; ".join(f"{server.label} on {HOST}:{server.port}" for server in servers)
            + f"; approver {USERNAME!r} logged in to each through the login form"
        )
        results: dict[tuple[str, str, int], Load] = {}
        for total, pending in SIZES:
            filled = time.perf_counter()
            fill_to(total, pending, templates, pending_templates)
            fill_s = time.perf_counter() - filled
            counts[total] = query_counts(pages, user)
            results = measure_size(servers, pages, args, fill_s)
        print_target(results, servers)
    print_queries(counts)
    for workers in args.workers:
        print_server_problems(data_dir / f"server-{workers}.log")


def print_server_problems(log_path: Path) -> None:
    lines = [line for line in log_path.read_text().splitlines() if "ERROR" in line or "Traceback" in line]
    print(f"Server log: {len(lines)} error line(s){': ' + lines[0] if lines else ''}")


def positive_list(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{text!r}: whole numbers separated by commas") from error
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: at least one number, each at least 1")
    return values


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=300, help="requests per page at each concurrency above 1")
    parser.add_argument(
        "--concurrency", type=positive_list, default=[1, 4, 8], help="client threads, comma-separated (1,4,8)"
    )
    parser.add_argument(
        "--workers",
        type=positive_list,
        default=None,
        help=f"web worker processes per server, comma-separated: before,after (default 1,{desk_default_workers()})",
    )
    parser.add_argument("--serial-requests", type=int, default=100, help="requests per page at concurrency 1")
    parser.add_argument("--time-limit", type=float, default=120.0, help="seconds at most per page and pass")
    parser.add_argument("--server", choices=("desk", "daphne", "runserver"), default="desk")
    parser.add_argument("--quick", action="store_true", help="100 requests per page, 30 one at a time")
    parser.add_argument("--keep", action="store_true", help="keep the temp directory (its path is printed)")
    args = parser.parse_args()
    if args.quick:
        args.requests, args.serial_requests = 100, 30
    if args.requests < 1 or args.serial_requests < 1:
        parser.error("--requests and --serial-requests must be at least 1")
    if args.workers is None:
        args.workers = [1, desk_default_workers()]
    if args.server != "desk":
        args.workers = [1]  # daphne and runserver are one process
    return args


def main() -> None:
    args = parse_arguments()
    started = time.perf_counter()
    data_dir = Path(tempfile.mkdtemp(prefix="desk-bench-book-"))
    os.environ["DEBUG"] = "0"  # the server inherits this environment: no query log, no debug pages
    os.environ["STATIC_ROOT"] = str(data_dir / "staticfiles")  # collected here, as ./desk up collects
    os.environ["DESK_STATIC_HASHED"] = "1"
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
