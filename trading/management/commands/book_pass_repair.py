"""Delete an account's book-pass records after a date, so the daily pass processes those sessions again.

The daily pass (``book_catch_up``) records each session it processed (``BookPass``) and resumes
after the last one. A pass recorded on a bad date (a bar dated 9999-12-31 imported before dates
were checked) would hold the book back; ``book_catch_up`` now ignores passes dated after today,
and this command removes the bad records themselves:

    python manage.py book_pass_repair --account NAME --after 2026-11-20 [--dry-run]

It deletes the rows, nothing else: fills, marks and closes those passes made stay as they are
(the listing shows their counts, so an operator knows what to look at in the admin). The deletion
is audited (``book_pass_repair``) with the dates it removed.
"""

from __future__ import annotations

import datetime as dt

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from trading.audit import audit_record
from trading.models import Account, BookPass


class Command(BaseCommand):
    help = "Delete an account's book-pass records dated after --after (audited); --dry-run lists them only."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--account", required=True, help="the account's name, e.g. the live desk account")
        parser.add_argument("--after", required=True, help="keep passes on or before this date (YYYY-MM-DD)")
        parser.add_argument("--dry-run", action="store_true", help="list what would be deleted; delete nothing")

    def handle(self, *args, account: str, after: str, dry_run: bool, **options) -> None:
        day = _date(after)
        book = Account.objects.filter(name=account).first()
        if book is None:
            raise CommandError(f"no account named {account!r}")
        with transaction.atomic():
            passes = list(BookPass.objects.select_for_update().filter(account=book, date__gt=day).order_by("date"))
            for record in passes:
                self.stdout.write(
                    f"{record.date}: filled {record.filled}, closed {record.closed}, marked {record.marked}"
                    f" (recorded {record.done_at:%Y-%m-%d %H:%M})"
                )
            if dry_run:
                self.stdout.write(f"dry run: {len(passes)} book pass(es) after {day} would be deleted; nothing was.")
                return
            BookPass.objects.filter(pk__in=[record.pk for record in passes]).delete()
            audit_record(
                actor_label="manage.py book_pass_repair",
                action="book_pass_repair",
                target=f"account {book.name}",
                reason=f"book passes after {day} deleted",
                details={"after": day.isoformat(), "deleted": [record.date.isoformat() for record in passes]},
            )
        self.stdout.write(self.style.SUCCESS(f"deleted {len(passes)} book pass(es) of {book.name} after {day}."))


def _date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise CommandError(f"--after {text!r} is not a date (YYYY-MM-DD)") from None
