"""``manage.py review``: run a retrospective by hand, keyed as the schedule keys it, so a review run
by hand and the same review run by beat are one review (a READY one is shown, not redone)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any, cast

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from reviews import triggers
from reviews.models import RetrospectiveReport
from trading.models import Account, Position, Strategy

Horizon = RetrospectiveReport.Horizon
PERIOD_HORIZONS = (Horizon.DAILY, Horizon.WEEKLY, Horizon.EPOCH)


class Command(BaseCommand):
    help = (
        "Run a retrospective review by hand: a period review of an account (daily, weekly, epoch), a position's "
        "retrospective or loss review, or a strategy's testament. Prints the report's figures and narrative."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--horizon", required=True, choices=[choice.value for choice in Horizon])
        parser.add_argument("--account", default=None, help="account name (default: the desk's paper account)")
        parser.add_argument("--end", type=dt.date.fromisoformat, help="last day of the period, YYYY-MM-DD")
        parser.add_argument("--start", type=dt.date.fromisoformat, help="first day (default: by the horizon)")
        parser.add_argument("--strategy", help="strategy name: one strategy's part of the book, or its testament")
        parser.add_argument("--position", type=int, help="position id, for a position or loss review")
        parser.add_argument("--json", action="store_true", help="print the whole hard part as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        horizon = options["horizon"]
        if horizon in PERIOD_HORIZONS:
            report = self._period_review(horizon, options)
        elif horizon == Horizon.TESTAMENT:
            report = triggers.on_strategy_retired(self._testament_strategy(options["strategy"]))
        else:
            report = self._position_review(horizon, options["position"])
        self._print(report, as_json=options["json"])

    def _account(self, name: str | None) -> Account:
        chosen = name or str(settings.ACCOUNT["NAME"])
        account = Account.objects.filter(name=chosen).first()
        if account is None:
            names = ", ".join(Account.objects.order_by("pk").values_list("name", flat=True)) or "none yet"
            raise CommandError(f"no account named {chosen!r}; accounts: {names}")
        return account

    def _testament_strategy(self, name: str | None) -> Strategy:
        strategy = self._strategy(name)
        if strategy is None:
            raise CommandError("a testament needs --strategy NAME")
        return strategy

    def _strategy(self, name: str | None) -> Strategy | None:
        if not name:
            return None
        strategy = Strategy.objects.filter(name=name).first()
        if strategy is None:
            names = ", ".join(Strategy.objects.values_list("name", flat=True)) or "none yet"
            raise CommandError(f"no strategy named {name!r}; strategies: {names}")
        return strategy

    def _period(self, horizon: str, start: dt.date | None, end: dt.date | None) -> tuple[dt.date, dt.date]:
        if horizon == Horizon.DAILY and end is None:
            session = triggers.previous_session(timezone.localdate())
            if session is None:
                raise CommandError("no bars yet: there is no session to review")
            return start or session[0], session[1]
        last = end or timezone.localdate()
        if horizon == Horizon.DAILY:
            session = triggers.previous_session(last + dt.timedelta(days=1))
            default_start = session[0] if session else last
        elif horizon == Horizon.WEEKLY:
            default_start = last - dt.timedelta(days=6)
        else:
            default_start = last - dt.timedelta(days=cast(int, settings.RETROSPECTIVE["EPOCH_INTERVAL_DAYS"]) - 1)
        first = start or default_start
        if first > last:
            raise CommandError(f"--start {first} is after --end {last}")
        return first, last

    def _period_review(self, horizon: str, options: dict[str, Any]) -> RetrospectiveReport:
        account = self._account(options["account"])
        strategy = self._strategy(options["strategy"])
        start, end = self._period(horizon, options["start"], options["end"])
        key = f"{horizon}:{account.pk}:" + (f"s{strategy.pk}:" if strategy else "") + end.isoformat()
        if options["start"] is not None:
            key += f":from:{start.isoformat()}"  # a period of its own: not the schedule's review
        return triggers.run_review(
            trigger_key=key, horizon=horizon, account=account, start=start, end=end, strategy=strategy
        )

    def _position_review(self, horizon: str, position_id: int | None) -> RetrospectiveReport:
        if position_id is None:
            raise CommandError(f"a {horizon} review needs --position ID")
        position = (
            Position.objects.select_related("account", "instrument", "thesis__run").filter(pk=position_id).first()
        )
        if position is None or position.closed_on is None:
            raise CommandError(f"position {position_id} does not exist or is not closed")
        return triggers.run_review(
            trigger_key=f"{horizon}:{position.pk}",
            horizon=horizon,
            account=position.account,
            start=position.opened_on if horizon == Horizon.POSITION else triggers.loss_period(position)[0],
            end=position.closed_on,
            position=position,
        )

    def _print(self, report: RetrospectiveReport, *, as_json: bool) -> None:
        hard = report.hard or {}
        attribution = hard.get("attribution") or {}
        actions = hard.get("actions") or {}
        self.stdout.write(
            f"{report.get_horizon_display()} review #{report.pk} [{report.trigger_key}] "
            f"{report.period_start} to {report.period_end}: {report.status} (attempt {report.attempts})"
        )
        if attribution:
            self.stdout.write(
                f"  net {attribution.get('net')} {hard.get('currency', '')}; {actions.get('entries')} entries, "
                f"{actions.get('exits')} exits, {actions.get('holds')} holds"
            )
        narrative = report.narrative or {}
        for label in ("what_worked", "what_failed"):
            for point in narrative.get(label) or []:
                self.stdout.write(f"  {label.replace('_', ' ')}: {point}")
        if narrative.get("hindsight"):
            self.stdout.write(f"  hindsight: {narrative['hindsight']}")
        for flag in report.ungrounded or []:
            self.stdout.write(f"  ungrounded: {flag.get('number')} in {flag.get('where')}")
        if report.error:
            self.stdout.write(f"  note: {report.error}")
        if as_json:
            self.stdout.write(json.dumps(hard, indent=2, sort_keys=True))
