from __future__ import annotations

import datetime as dt

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from agents.clients import PROVIDERS
from trading.book.accounts import replay_account
from trading.models import Position, Strategy, StrategyRun
from trading.strategies.replay import ApprovalPolicy, replay_sessions, replay_strategy


class Command(BaseCommand):
    help = (
        "Replay a strategy's daily loop over history, each day strictly as of that day: run the pipeline, "
        "approve by a policy, execute, mark, close and review exactly as live. The track record is tagged as a "
        "replay and kept in the strategy's own replay account."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--strategy", required=True, help="strategy name")
        parser.add_argument("--from", dest="start", required=True, type=dt.date.fromisoformat, help="YYYY-MM-DD")
        parser.add_argument("--to", dest="end", required=True, type=dt.date.fromisoformat, help="YYYY-MM-DD")
        parser.add_argument("--approve", default="all", help="all | none | conviction>=X (default all)")
        parser.add_argument("--provider", default="offline", choices=PROVIDERS)
        parser.add_argument(
            "--lessons-to-live",
            action="store_true",
            help="also write the replay's review lessons into live memory (tagged replay=true); by default only "
            "this replay's own runs recall them",
        )

    def handle(
        self,
        *args,
        strategy: str,
        start: dt.date,
        end: dt.date,
        approve: str,
        provider: str,
        lessons_to_live: bool = False,
        **options,
    ):
        try:
            chosen = Strategy.objects.get(name=strategy)
        except Strategy.DoesNotExist:
            names = ", ".join(Strategy.objects.values_list("name", flat=True)) or "none yet (create one in the admin)"
            raise CommandError(f"no strategy named {strategy!r}; strategies: {names}") from None
        if start > end:
            raise CommandError(f"--from {start} is after --to {end}")
        try:
            policy = ApprovalPolicy.parse(approve)
        except ValueError as error:
            raise CommandError(str(error)) from None
        days = replay_sessions(chosen, start, end)
        if not days:
            raise CommandError(f"no bars for {chosen.name}'s universe between {start} and {end}")
        bar = tqdm(total=len(days), unit="day", disable=options["verbosity"] == 0, file=self.stderr._out)
        days_run = replay_strategy(
            strategy=chosen, start=start, end=end, policy=policy, provider=provider, lessons_to_live=lessons_to_live
        )
        for day in days_run:
            bar.set_postfix_str(f"{day.as_of} {day.decision} approved={day.approved} closed={day.closed}")
            bar.update()
        bar.close()
        account = replay_account(chosen.name)
        positions = Position.objects.filter(account=account)
        closed = positions.filter(status=Position.Status.CLOSED)
        realised = sum((p.realised_pnl for p in closed), start=0)
        runs = StrategyRun.objects.filter(strategy=chosen, is_replay=True)
        self.stdout.write(
            f"Replayed {chosen.name} over {len(days)} session(s): "
            f"{runs.filter(decision='rebalance').count()} rebalance / {runs.filter(decision='hold').count()} hold; "
            f"{positions.count()} position(s), {closed.count()} closed, realised PnL ₹{realised:,.2f} net of costs "
            f"(account {account.name!r})."
        )
