from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from trading.market.imports import ImportFileError, ImportReport


class ImportCommand(BaseCommand):
    """Shared shape of the CSV importers: validate everything, print a report, write all or nothing."""

    importer: Callable[..., ImportReport]
    columns: str = ""

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path, help=f"CSV file with a header row: {self.columns}")
        parser.add_argument("--dry-run", action="store_true", help="validate and report; write nothing")

    def handle(self, *args, path: Path, dry_run: bool, **options) -> None:
        try:
            report = type(self).importer(path, dry_run=dry_run, actor_label=f"manage.py {self._command_name()}")
        except ImportFileError as error:
            raise CommandError(str(error)) from None
        for line in report.problem_lines():
            self.stderr.write(line)
        if options["verbosity"] > 1 or dry_run:
            for line in report.skipped_lines():
                self.stdout.write(line)
        if not report.ok:
            raise CommandError(report.summary())
        self.stdout.write(self.style.SUCCESS(report.summary()))

    def _command_name(self) -> str:
        return type(self).__module__.rsplit(".", 1)[-1]
