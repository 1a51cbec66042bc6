from __future__ import annotations

import datetime as dt
import time
from decimal import Decimal
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from agents.clients import PROVIDERS
from trading.book.accounts import replay_account
from trading.models import ReplayJob, Strategy, StrategyRun
from trading.strategies.replay import ReplayDay
from trading.strategies.replay_jobs import replay_job_create, replay_job_resume, replay_job_run
from vocabulary.refusals import Refusal


class Command(BaseCommand):
    help = (
        "Replay a strategy's daily loop over history, each day strictly as of that day: run the pipeline, "
        "approve by a policy, execute, mark, close and review exactly as live. The track record is tagged as a "
        "replay and kept in the strategy's own replay account. The replay is a replay job (shown in the browser "
        "too), run here in process; --resume JOB_ID continues a cancelled or failed one after its last day."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--strategy", help="strategy name")
        parser.add_argument("--from", dest="start", type=dt.date.fromisoformat, help="YYYY-MM-DD")
        parser.add_argument("--to", dest="end", type=dt.date.fromisoformat, help="YYYY-MM-DD")
        parser.add_argument("--approve", default="all", help="all | none | conviction>=X (default all)")
        parser.add_argument("--provider", default="offline", choices=PROVIDERS)
        parser.add_argument(
            "--lessons-to-live",
            action="store_true",
            help="also write the replay's review lessons into live memory (tagged replay=true); by default only "
            "this replay's own runs recall them",
        )
        parser.add_argument(
            "--resume", type=int, metavar="JOB_ID", help="continue a cancelled or failed replay job after its last day"
        )
        parser.add_argument(
            "--plain",
            action="store_true",
            help="the plain path: each run reads and writes as a live run does (slower; the same results)",
        )
        parser.add_argument(
            "--workers",
            type=int,
            default=1,
            metavar="N",
            help="run each day's pipeline runs in N worker processes (fast path; the same results; a day is then "
            "written in steps, so a failed day cannot be resumed)",
        )

    def handle(self, *args, **options):
        if options["workers"] < 1:
            raise CommandError("--workers must be at least 1")
        if options["workers"] > 1 and options["plain"]:
            raise CommandError("--workers needs the fast path: drop --plain")
        job = self._resumed(options["resume"]) if options["resume"] is not None else self._created(options)
        days_left = job.days_total - job.days_done
        bar = tqdm(
            total=job.days_total,
            initial=job.days_done,
            unit="day",
            disable=options["verbosity"] == 0,
            file=self.stderr._out,
        )
        began = time.monotonic()
        done_here = 0

        def on_day(current: ReplayJob, day: ReplayDay) -> None:
            nonlocal done_here
            done_here += 1
            per_day = (time.monotonic() - began) / done_here
            left = per_day * (days_left - done_here)
            bar.set_postfix_str(
                f"{day.as_of} {day.decision} approved={day.approved} closed={day.closed} left≈{_duration(left)}"
            )
            bar.update()

        ended = replay_job_run(job.pk, fast=not options["plain"], on_day=on_day, workers=options["workers"])
        bar.close()
        if ended is None:
            raise CommandError(f"replay job {job.pk} was taken by another worker meanwhile")
        self._report(ended)

    def _created(self, options: dict[str, Any]) -> ReplayJob:
        for name, flag in (("strategy", "--strategy"), ("start", "--from"), ("end", "--to")):
            if not options[name]:
                raise CommandError(f"{flag} is required (or --resume JOB_ID)")
        try:
            chosen = Strategy.objects.get(name=options["strategy"])
        except Strategy.DoesNotExist:
            names = ", ".join(Strategy.objects.values_list("name", flat=True)) or "none yet (create one in the admin)"
            raise CommandError(f"no strategy named {options['strategy']!r}; strategies: {names}") from None
        if options["start"] > options["end"]:
            raise CommandError(f"--from {options['start']} is after --to {options['end']}")
        try:
            return replay_job_create(
                strategy=chosen,
                start=options["start"],
                end=options["end"],
                policy=options["approve"],
                provider=options["provider"],
                user=None,
                lessons_to_live=options["lessons_to_live"],
                send=False,
            )
        except Refusal as refusal:
            if "no bars" in refusal.message or "no sessions" in refusal.message:
                raise CommandError(
                    f"no bars for {chosen.name}'s universe between {options['start']} and {options['end']}"
                ) from None
            raise CommandError(refusal.message) from None

    def _resumed(self, job_id: int) -> ReplayJob:
        job = ReplayJob.objects.select_related("strategy").filter(pk=job_id).first()
        if job is None:
            raise CommandError(f"no replay job {job_id}")
        try:
            return replay_job_resume(job, None, send=False)
        except Refusal as refusal:
            raise CommandError(refusal.message) from None

    def _report(self, job: ReplayJob) -> None:
        chosen = job.strategy
        account = replay_account(chosen.name)
        if job.status == ReplayJob.Status.FAILED:
            raise CommandError(
                f"replay job {job.pk} failed after {job.days_done} of {job.days_total} day(s): {job.error}; "
                f"resume it with --resume {job.pk}"
            )
        if job.status == ReplayJob.Status.CANCELLED:
            self.stdout.write(
                f"Replay job {job.pk} cancelled after {job.days_done} of {job.days_total} day(s) "
                f"(last {job.last_day}); resume it with --resume {job.pk}."
            )
            return
        summary = job.summary
        runs = StrategyRun.objects.filter(strategy=chosen, is_replay=True)
        self.stdout.write(
            f"Replayed {chosen.name} over {job.days_total} session(s): "
            f"{runs.filter(decision='rebalance').count()} rebalance / {runs.filter(decision='hold').count()} hold; "
            f"{summary['positions']} position(s), {summary['closed']} closed, realised PnL "
            f"₹{Decimal(summary['realised_pnl']):,.2f} net of costs (account {account.name!r}; replay job {job.pk})."
        )


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"
