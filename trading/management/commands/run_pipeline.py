from __future__ import annotations

import datetime as dt

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents.clients import PROVIDERS
from agents.recording import run_totals
from trading.market import selectors
from trading.pipeline.orchestrator import pipeline_run_create, pipeline_run_execute
from trading.pipeline.presenters import run_summary_lines


class Command(BaseCommand):
    help = "Run stages 1-7 for one instrument synchronously and print a readable summary."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("symbol", help="RELIANCE or NSE:RELIANCE")
        parser.add_argument("--as-of", type=dt.date.fromisoformat, help="YYYY-MM-DD (default: the latest bar)")
        parser.add_argument("--provider", choices=PROVIDERS, default=None, help="default: LLM_PROVIDER (offline)")

    def handle(self, *args, symbol: str, as_of: dt.date | None, provider: str | None, **options) -> None:
        from django.conf import settings
        from django.http import Http404

        try:
            instrument = selectors.instrument_by_symbol(symbol)
        except Http404:
            raise CommandError(f"unknown instrument {symbol}") from None
        as_of = as_of or selectors.bar_dates(instrument)[1]
        if as_of is None:
            raise CommandError(f"{instrument.symbol} has no bars")
        run = pipeline_run_create(instrument=instrument, as_of=as_of, provider=provider or settings.LLM["PROVIDER"])
        run = pipeline_run_execute(run.pk)
        for line in run_summary_lines(run, run_totals(run)):
            self.stdout.write(line)
        if run.status == run.Status.FAILED:
            raise CommandError(f"run {run.pk} failed: {run.failure_reason}")
