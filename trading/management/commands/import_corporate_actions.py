"""``manage.py import_corporate_actions FILE [--dry-run]``: splits, bonuses and dividends from a CSV.

All or nothing, with the other imports' ``file:line: reason`` report (``trading.market.imports``):
every row is checked (``trading.market.domain.corporate_rows``), its symbol resolved, its ex-date
held to the instrument's exchange calendar; an action already stored with the same figures is
skipped (a file imported twice changes nothing), one stored with other figures is a problem
(correct it in the admin, where the change is kept in its history).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from django.utils import timezone

from trading.management.commands._import_base import ImportCommand
from trading.market import calendar
from trading.market.domain.corporate_rows import CORPORATE_ACTION_COLUMNS, CorporateActionRow, CorporateActionValidator
from trading.market.domain.csv_rows import RowProblem
from trading.market.imports import ImportReport, _import, _Kind
from trading.models import CorporateAction, Instrument
from vocabulary.dates import DATE_FLOOR

LOOK_AHEAD = dt.timedelta(days=366)


def _figures(kind: str, ratio_old: int | None, ratio_new: int | None, amount: Any) -> str:
    return f"amount {amount}" if kind == CorporateAction.Kind.DIVIDEND else f"ratio {ratio_old}:{ratio_new}"


def import_corporate_actions(
    path: Path, *, dry_run: bool = False, actor_label: str = "import_corporate_actions", actor: Any = None
) -> ImportReport:
    report = ImportReport(path=str(path), kind="corporate_action", dry_run=dry_run)
    first_line: dict[tuple[int, str, dt.date], int] = {}

    def placed(row: CorporateActionRow, instrument: Instrument) -> str | None:
        if calendar.is_session(instrument.exchange, row.ex_date):
            return None
        return f"ex_date {row.ex_date} ({row.ex_date:%A}) is not a session of {instrument.exchange}"

    def fresh(
        batch: list[tuple[CorporateActionRow, Instrument | None]],
    ) -> list[tuple[CorporateActionRow, Instrument | None]]:
        stored = {
            (instrument_id, kind, ex_date): (old, new, amount)
            for instrument_id, kind, ex_date, old, new, amount in CorporateAction.objects.filter(
                instrument__in={inst.pk for _, inst in batch if inst}, ex_date__in={row.ex_date for row, _ in batch}
            ).values_list("instrument_id", "kind", "ex_date", "ratio_old", "ratio_new", "amount")
        }
        kept: list[tuple[CorporateActionRow, Instrument | None]] = []
        for row, instrument in batch:
            assert instrument is not None  # every row names a symbol
            key = (instrument.pk, row.kind, row.ex_date)
            figures = (row.ratio_old, row.ratio_new, row.amount)
            if key in first_line:
                report.add_problem(
                    row.line, f"the same {row.kind} of {instrument} ex {row.ex_date} as line {first_line[key]}"
                )
                continue
            first_line[key] = row.line
            if key in stored:
                old, new, amount = stored[key]
                if (old, new, None if amount is None else amount.normalize()) == (
                    row.ratio_old,
                    row.ratio_new,
                    None if row.amount is None else row.amount.normalize(),
                ):
                    report.skip(row.line, f"this {row.kind} of {instrument} ex {row.ex_date} is already stored")
                else:
                    report.add_problem(
                        row.line,
                        f"a {row.kind} of {instrument} ex {row.ex_date} is already stored with "
                        f"{_figures(row.kind, old, new, amount)}, not {_figures(row.kind, *figures)}: "
                        "correct it in the admin",
                    )
                continue
            kept.append((row, instrument))
            report.instruments.add(str(instrument))
        return kept

    def build(row: CorporateActionRow, instrument: Instrument | None) -> CorporateAction:
        return CorporateAction(
            instrument=instrument,
            kind=row.kind,
            ex_date=row.ex_date,
            ratio_old=row.ratio_old,
            ratio_new=row.ratio_new,
            amount=row.amount,
            source=path.name[:100],
        )

    today = timezone.localdate()

    def check(line: int, raw: dict[str, str]) -> CorporateActionRow | RowProblem:
        return CorporateActionValidator(floor=DATE_FLOOR, latest=today + LOOK_AHEAD).check(line, raw)

    kind: _Kind[Any] = _Kind(
        check=check,
        fresh=fresh,
        build=build,
        model=CorporateAction,
        symbol_of=lambda row: row.symbol,
        placed=placed,
    )
    return _import(path, report, CORPORATE_ACTION_COLUMNS, kind, actor_label, actor)


class Command(ImportCommand):
    help = (
        "Import splits, bonuses and dividends from a CSV file. Every row is validated first; any problem "
        "means nothing is written. The book applies each action from its ex-date: a split or bonus adjusts "
        "history and open positions, a dividend pays the positions held into it."
    )
    importer = staticmethod(import_corporate_actions)
    columns = "symbol,exchange,kind (split, bonus or dividend),ex_date,ratio_old,ratio_new,amount (per share)"
