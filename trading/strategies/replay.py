"""Strategy runs: a pipeline run per instrument of the universe, then HOLD or REBALANCE.

Live, the runs are queued to the workers and the decision is taken when the last one finishes.
A history replay runs the same loop in process, one day at a time, strictly as of each day, and
decides approvals by a stated policy instead of a person.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import multiprocessing
import pickle
import re
from collections.abc import Callable, Generator, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from decimal import Decimal
from functools import partial
from typing import TYPE_CHECKING

from django.contrib.auth import get_user_model
from django.db import connection, transaction

from agents.domain.memory import replay_scope
from agents.models import MemoryEntry, ModelCall
from trading.access import APPROVER, ensure_desk_groups
from trading.audit import audit_record
from trading.book import broker
from trading.book.accounts import replay_account
from trading.book.approvals import DecisionRefused, thesis_approve
from trading.book.signals import replay_account_clearing, replay_position_closed
from trading.models import (
    Account,
    DailyBar,
    Instrument,
    Order,
    Position,
    Strategy,
    StrategyDirective,
    StrategyRun,
    Thesis,
)
from trading.pipeline.orchestrator import ReplayRuns, pipeline_run_create, pipeline_run_execute, replay_runs
from trading.pipeline.replay_cache import ReplayCache
from trading.strategies import replay_boot
from trading.strategies.runs import strategy_run_decide, strategy_run_open, strategy_run_proceed
from trading.strategies.signals import replay_cleared

if TYPE_CHECKING:
    from django.contrib.auth.models import User

REPLAY_USER = "replay-policy"
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ApprovalPolicy:
    """Which risk-approved theses a replay approves: ``all``, ``none`` or ``conviction>=X``."""

    min_conviction: Decimal | None
    approve: bool = True

    @classmethod
    def parse(cls, text: str) -> ApprovalPolicy:
        text = text.strip().lower().replace(" ", "")
        if text == "all":
            return cls(min_conviction=None)
        if text == "none":
            return cls(min_conviction=None, approve=False)
        match = re.fullmatch(r"conviction>=(0(\.\d+)?|1(\.0+)?)", text)
        if match:
            return cls(min_conviction=Decimal(match.group(1)))
        raise ValueError(f"approval policy {text!r}: use all, none or conviction>=X (0 ≤ X ≤ 1)")

    def approves(self, thesis: Thesis) -> bool:
        if not self.approve or not thesis.risk_approved:
            return False
        return self.min_conviction is None or thesis.conviction >= self.min_conviction


def _policy_user() -> User:
    """The approver of record for replays. It holds the approver role (permissions are checked
    exactly as for a person) but has no usable password, so nobody can log in as it."""
    user, created = get_user_model().objects.get_or_create(username=REPLAY_USER)
    if created:
        user.set_unusable_password()
        user.save()
    user.groups.add(ensure_desk_groups()[APPROVER])
    return user


def replay_sessions(strategy: Strategy, start: dt.date, end: dt.date) -> list[dt.date]:
    return list(
        DailyBar.objects.filter(instrument__in=strategy.universe.all(), date__gte=start, date__lte=end)
        .values_list("date", flat=True)
        .distinct()
        .order_by("date")
    )


def replay_clear(strategy: Strategy) -> None:
    """Forget the strategy's previous replay so a new one starts from the same clean account."""
    account = replay_account(strategy.name)
    # The reviews of its positions, and the lessons they wrote, belong to the layer above: it is
    # told first, and clears them before the positions go.
    replay_account_clearing.send(sender=Strategy, account=account)
    # Its lessons go with it: those in its own scope too.
    MemoryEntry.objects.filter(scope=replay_scope(account.pk)).delete()
    Position.objects.filter(account=account).delete()
    Order.objects.filter(account=account).delete()
    # Its runs' model calls go with them, except those that cost money: a call's record outlives its
    # run (detached), since the day's spend must still count it against the daily budget.
    ModelCall.objects.filter(run__strategy_run__strategy=strategy, run__is_replay=True, cost=0).delete()
    StrategyRun.objects.filter(strategy=strategy, is_replay=True).delete()
    # Its critiques' directives go with its runs (a new replay is critiqued afresh), and the layer
    # above clears the critiques themselves.
    StrategyDirective.objects.filter(strategy=strategy, is_replay=True).delete()
    replay_cleared.send(sender=Strategy, strategy=strategy)
    account.cash = account.capital
    account.save(update_fields=["cash"])


@dataclass
class ReplayDay:
    as_of: dt.date
    runs: int
    approved: int
    refused: list[str]
    filled: int
    closed: int
    decision: str


def _close_approval_window(run_ids: list[int], day: dt.date) -> None:
    """The replay's approval window is its own day: what the policy did not approve expires, as
    a live thesis does when nobody decides, so it holds no instrument the next day."""
    left = Thesis.objects.filter(run_id__in=run_ids, status=Thesis.Status.PENDING)
    # Newest first, as the theses' own order lists them; "newest" by the runs' order, which worker
    # processes do not keep in the rows' creation times.
    position = {run_id: index for index, run_id in enumerate(run_ids)}
    expiring = sorted(((position[run_id], pk) for pk, run_id in left.values_list("pk", "run_id")), reverse=True)
    for _, thesis_id in expiring:
        audit_record(
            actor_label=REPLAY_USER,
            action="thesis_expired",
            target=f"thesis {thesis_id}",
            reason=f"replay: not approved on {day}",
        )
    left.update(status=Thesis.Status.EXPIRED)


def _review_or_record(position: Position, *, lessons_to_live: bool = False) -> None:
    """Review a replay's closed position at once; a failed review is recorded, and the replay goes on."""
    try:
        replay_position_closed.send(sender=Position, position=position, lessons_to_live=lessons_to_live)
    except Exception as error:
        logger.exception("review of position %s failed", position.pk)
        audit_record(
            action="review_failed", target=f"position {position.pk}", reason=f"{type(error).__name__}: {error}"
        )


def replay_strategy(
    *,
    strategy: Strategy,
    start: dt.date,
    end: dt.date,
    policy: ApprovalPolicy,
    provider: str = "offline",
    progress: Callable[[ReplayDay], None] | None = None,
    lessons_to_live: bool = False,
    resume_after: dt.date | None = None,
    atomic_days: bool = False,
    fast: bool = False,
    workers: int = 1,
) -> Generator[ReplayDay, None, None]:
    """Run the strategy's daily loop over history. Each day: the book is marked on that day's bar
    (waiting orders fill at its open; stops, targets and horizons close positions and are reviewed
    at once), the critique pre-step runs (in process, when it fires), then the pipeline runs
    strictly as of that day and the policy decides approvals.

    Its lessons stay in its own memory scope, recalled by its own runs (with the live lessons of
    each day) and never by live runs, unless ``lessons_to_live`` writes them to live memory too
    (still tagged ``replay=true``).

    ``resume_after`` continues a replay that stopped after that day: nothing is cleared, and the
    days after it run on the account as the stopped replay left it. ``atomic_days`` writes each
    day in one transaction, so a day that fails leaves nothing and a resume redoes it whole.

    ``workers`` > 1 (fast path only) runs each day's pipeline runs in that many worker processes:
    they are independent (each reads the book as the day's book pass left it), while the book pass
    before them and the approvals after them stay in this process, in the sequential order, so the
    record is the same. A day is then written in steps (its runs commit before the approvals), so
    it cannot be one transaction: ``atomic_days`` must be False."""
    if workers > 1 and (not fast or atomic_days):
        raise ValueError("replay workers need the fast path and days not written in one transaction")
    if workers > 1 and connection.in_atomic_block:
        raise ValueError("replay workers cannot start inside a transaction: they read what it has not committed")
    if resume_after is None:
        replay_clear(strategy)
    account = replay_account(strategy.name)
    day_run = partial(
        _replay_day,
        strategy=strategy,
        account=account,
        approver=_policy_user(),
        policy=policy,
        provider=provider,
        review=partial(_review_or_record, lessons_to_live=lessons_to_live),
    )
    days = [day for day in replay_sessions(strategy, start, end) if resume_after is None or day > resume_after]
    mode: ReplayRuns | None = None
    if fast and days:
        # Read once for the whole window: the universe (it does not change while a replay runs)
        # and every input its runs read as of their day.
        instruments = list(strategy.universe.filter(is_active=True).order_by("symbol"))
        cache = ReplayCache(instruments, start=days[0], end=days[-1])
        mode = ReplayRuns(source=cache, quiet=provider == "offline", exclusive=atomic_days, account=account)
        day_run = partial(day_run, universe=instruments, cache=cache, mode=mode)
    with _run_pool(workers, mode) as pool:
        if pool is not None:
            day_run = partial(day_run, pool=pool)
        for day in days:
            with transaction.atomic() if atomic_days else contextlib.nullcontext():
                result = day_run(day)
                if progress:
                    progress(result)  # in the day's transaction: a day is stored with its progress or not at all
            yield result


# --- worker processes: a day's pipeline runs side by side -----------------------------------------

_worker_mode: ReplayRuns | None = None


@contextlib.contextmanager
def _run_pool(workers: int, mode: ReplayRuns | None) -> Iterator[ProcessPoolExecutor | None]:
    """``workers`` spawned processes that execute pipeline runs, or None for one process.

    Spawned, not forked (``replay_boot``): a forked child inherited the parent's threads, locks and
    sockets, and one stuck for good reading a Redis socket its parent had open. Each starts with
    this process's settings and the cache, sent once, and opens its own database connections."""
    if workers <= 1 or mode is None:
        yield None
        return
    worker_mode = ReplayRuns(source=mode.source, quiet=mode.quiet, exclusive=False, account=mode.account)
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=replay_boot.start,
        initargs=(replay_boot.settings_snapshot(), pickle.dumps(worker_mode)),
    )
    try:
        for started in [pool.submit(int) for _ in range(workers)]:
            started.result()  # all of them up (and any start-up error raised) before the first day
        yield pool
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def worker_start(mode: ReplayRuns) -> None:
    """A replay worker's state, set by ``replay_boot.start`` once Django is set up."""
    global _worker_mode
    _worker_mode = mode


def _runs_in_workers(
    pool: ProcessPoolExecutor, instruments: list[Instrument], day: dt.date, strategy_run: StrategyRun, provider: str
) -> list[int]:
    """The day's runs side by side in the workers; their ids in the instruments' order, as the
    sequential loop lists them (the first error met in that order is raised)."""
    pending = [pool.submit(_worker_run, instrument, day, strategy_run, provider) for instrument in instruments]
    return [future.result() for future in pending]


def _worker_run(instrument: Instrument, day: dt.date, strategy_run: StrategyRun, provider: str) -> int:
    """One pipeline run in a worker process, made and executed as the sequential loop does (not
    in an exclusive transaction: its stages commit as they finish). Returns its id."""
    if _worker_mode is None:
        raise RuntimeError("a replay worker runs only in a pool made by _run_pool")
    with replay_runs(_worker_mode):
        run = pipeline_run_create(
            instrument=instrument, as_of=day, provider=provider, strategy_run=strategy_run, is_replay=True
        )
        pipeline_run_execute(run.pk)
    return run.pk


def _replay_day(
    day: dt.date,
    *,
    strategy: Strategy,
    account: Account,
    approver: User,
    policy: ApprovalPolicy,
    provider: str,
    review: Callable[[Position], None],
    universe: list[Instrument] | None = None,
    cache: ReplayCache | None = None,
    mode: ReplayRuns | None = None,
    pool: ProcessPoolExecutor | None = None,
) -> ReplayDay:
    """One replay day. The plain path reads the universe and each instrument's bar from the
    database; the fast path is given them (``universe``, ``cache``) and runs its pipeline runs
    with the cache as their stage inputs (``mode``): the same questions, the same answers."""
    book = broker.positions_mark(as_of=day, account=account, on_close=review)
    strategy_run = StrategyRun.objects.create(strategy=strategy, as_of=day, is_replay=True)
    # The critique pre-step runs in process (a replay has nothing to wait on), then the day's
    # runs go on under the directives in force.
    strategy_run_open(strategy_run, replay=True)
    strategy_run_proceed(strategy_run.pk, reason="replay day")
    runs = []
    if universe is None:
        universe = list(strategy.universe.filter(is_active=True).order_by("symbol"))
    if pool is not None and cache is not None:
        priced = [instrument for instrument in universe if cache.has_bar(instrument, day)]
        runs = _runs_in_workers(pool, priced, day, strategy_run, provider)
    else:
        with replay_runs(mode) if mode is not None else contextlib.nullcontext():
            for instrument in universe:
                if cache is not None:
                    if not cache.has_bar(instrument, day):
                        continue
                elif not DailyBar.objects.filter(instrument=instrument, date=day).exists():
                    continue
                run = pipeline_run_create(
                    instrument=instrument, as_of=day, provider=provider, strategy_run=strategy_run, is_replay=True
                )
                pipeline_run_execute(run.pk)  # it reads its replay's memory scopes from the run itself
                runs.append(run.pk)
    approved, refused = _approve_by_policy(runs, day, policy=policy, approver=approver)
    _close_approval_window(runs, day)
    decided = strategy_run_decide(strategy_run)
    return ReplayDay(
        as_of=day,
        runs=len(runs),
        approved=approved,
        refused=refused,
        filled=book["filled"],
        closed=book["closed"],
        decision=decided.decision,
    )


def _approve_by_policy(
    runs: list[int], day: dt.date, *, policy: ApprovalPolicy, approver: User
) -> tuple[int, list[str]]:
    """The policy decides the day's theses in the runs' order (the universe's), whichever process
    made them first; one run's theses in the order it made them."""
    approved, refused = 0, []
    position = {run_id: index for index, run_id in enumerate(runs)}
    theses = Thesis.objects.filter(run_id__in=runs).select_related("instrument", "run")
    for thesis in sorted(theses, key=lambda thesis: (position[thesis.run_id], thesis.pk)):
        if not policy.approves(thesis):
            continue
        try:
            thesis_approve(thesis=thesis, user=approver, comment=f"replay policy on {day}", as_of=day, replay=True)
            approved += 1
        except DecisionRefused as refusal:
            refused.append(f"{thesis.instrument.symbol}: {refusal.reason}")
    return approved, refused
