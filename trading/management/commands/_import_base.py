from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from trading.market.imports import ImportFileError, ImportReport


class ImportCommand(BaseCommand):
    """Shared shape of the CSV importers: validate everything, print a report, write all or nothing."""

    importer: Callable[..., ImportReport]
    columns: str = ""

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path, help=f"CSV file with a header row: {self.columns}")
        parser.add_argument("--dry-run", action="store_true", help="validate and report; write nothing")

    def importer_options(self, options: dict[str, Any]) -> dict[str, Any]:
        """Extra keyword arguments for the importer, from the command's own options."""
        return {}

    def handle(self, *args: Any, path: Path, dry_run: bool, **options: Any) -> None:
        try:
            report = type(self).importer(
                path,
                dry_run=dry_run,
                actor_label=f"manage.py {self._command_name()}",
                **self.importer_options(options),
            )
        except ImportFileError as error:
            raise CommandError(str(error)) from None
        print_report(self, report, verbose=options["verbosity"] > 1 or dry_run)
        if not report.ok:
            raise CommandError(report.summary())
        self.stdout.write(self.style.SUCCESS(report.summary()))

    def _command_name(self) -> str:
        return type(self).__module__.rsplit(".", 1)[-1]


def print_report(command: BaseCommand, report: ImportReport, *, verbose: bool) -> None:
    """Problems on stderr; what was (or would be) created and updated, skipped rows when asked,
    and the data-quality findings on stdout."""
    for line in report.problem_lines():
        command.stderr.write(line)
    if verbose:
        for line in report.skipped_lines():
            command.stdout.write(line)
    else:
        skipped = len(report.skipped) + sum(report.skipped_counts.values())
        if skipped:
            command.stdout.write(f"{report.path}: {skipped} row(s) skipped (-v 2 lists them)")
    for line in report.note_lines():
        command.stdout.write(line)
    if report.ok:
        for line in report.quality_lines():
            command.stdout.write(f"quality: {line}")
