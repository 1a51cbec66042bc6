from __future__ import annotations

import datetime as dt
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from trading.management.commands._import_base import print_report
from trading.market.imports import market_data_settings
from trading.market.providers import ProviderError, provider_for
from trading.market.providers.fetch import fetch_bars
from trading.models import Instrument


class Command(BaseCommand):
    help = (
        "Fetch daily bars (and splits and dividends) from the market-data provider for the instruments named, "
        "from the day after each one's last bar (or --since). Bars are validated like a file import: any "
        "problem and nothing of that instrument is written. Needs the optional extra: "
        "pip install -r requirements-data.txt."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("symbols", nargs="+", help="SYMBOL or EXCHANGE:SYMBOL of stored instruments")
        parser.add_argument("--since", type=dt.date.fromisoformat, help="first date to fetch (YYYY-MM-DD)")
        parser.add_argument(
            "--provider",
            default="",
            help="the provider (default: DESK_MARKET_DATA_PROVIDER, else yahoo)",
        )

    def handle(self, *args: Any, symbols: list[str], since: dt.date | None, provider: str, **options: Any) -> None:
        name = provider or market_data_settings().provider or "yahoo"
        try:
            source = provider_for(name)
        except ProviderError as error:
            raise CommandError(str(error)) from None
        instruments = [self._instrument(text) for text in symbols]
        failed = 0
        for instrument in instruments:
            try:
                result = fetch_bars(
                    provider=source, instrument=instrument, since=since, actor_label="manage.py fetch_bars"
                )
            except ProviderError as error:  # the optional package is missing: no other symbol will do better
                raise CommandError(str(error)) from None
            if result.error:
                failed += 1
                self.stderr.write(f"{instrument}: {result.error}")
                continue
            assert result.report is not None
            print_report(self, result.report, verbose=options["verbosity"] > 1)
            for line in result.actions_added:
                self.stdout.write(f"corporate action added: {line}")
            if not result.report.ok:
                failed += 1
                self.stderr.write(result.report.summary())
            else:
                self.stdout.write(self.style.SUCCESS(f"{instrument}: {result.report.summary()}"))
        if failed:
            raise CommandError(f"{failed} of {len(instruments)} instrument(s) were not updated")

    @staticmethod
    def _instrument(text: str) -> Instrument:
        exchange, _, symbol = text.strip().upper().rpartition(":")
        matches = Instrument.objects.filter(symbol=symbol)
        if exchange:
            matches = matches.filter(exchange=exchange)
        found = list(matches[:3])
        if len(found) == 1:
            return found[0]
        if found:
            raise CommandError(f"{text} is listed on {', '.join(i.exchange for i in found)}: write EXCHANGE:{symbol}")
        raise CommandError(f"unknown symbol {text}: add it first (manage.py import_instruments)")
