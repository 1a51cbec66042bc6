"""``manage.py research_replay JOURNAL``: re-run a research session from its journal and check that
every decision is reproduced; exits with an error at the first one that is not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from research.journal import replay_journal


class Command(BaseCommand):
    help = (
        "Replay a research session from its JSONL journal (its data, settings and proposals) and check that "
        "every keep/discard decision, figure, the stop and the shortlist come out the same."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("journal", help="path of the session's journal (session_<id>.jsonl)")

    def handle(self, *args: Any, journal: str, **options: Any) -> None:
        path = Path(journal)
        if not path.is_file():
            raise CommandError(f"no journal at {path}")
        try:
            report = replay_journal(path)
        except ValueError as error:
            raise CommandError(str(error)) from None
        if not report.ok:
            raise CommandError(str(report))
        self.stdout.write(self.style.SUCCESS(str(report)))
