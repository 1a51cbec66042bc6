from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from trading.market.demo_seed import SeedRefused, seed_demo


class Command(BaseCommand):
    help = (
        "Load the deterministic demo universe: twelve NSE large caps with over three years of daily bars, "
        "news of every event class (a few hostile on purpose), macro series and fundamentals for some."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--seed", type=int, default=7, help="random seed (default 7)")
        parser.add_argument("--reset", action="store_true", help="delete the demo universe first, then load it again")

    def handle(self, *args, seed: int, reset: bool, **options) -> None:
        try:
            report = seed_demo(seed=seed, reset=reset)
        except SeedRefused as refusal:
            raise CommandError(f"--reset refused: {refusal}") from None
        self.stdout.write(self.style.SUCCESS(report.summary()) if report.seeded else report.summary())
