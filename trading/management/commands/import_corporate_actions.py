"""``manage.py import_corporate_actions FILE [--dry-run]``: splits, bonuses and dividends from a CSV
(``trading.market.imports.import_corporate_actions``)."""

from __future__ import annotations

from trading.management.commands._import_base import ImportCommand
from trading.market.imports import import_corporate_actions


class Command(ImportCommand):
    help = (
        "Import splits, bonuses and dividends from a CSV file. Every row is validated first; any problem "
        "means nothing is written. The book applies each action from its ex-date: a split or bonus adjusts "
        "history and open positions, a dividend pays the positions held into it."
    )
    importer = staticmethod(import_corporate_actions)
    columns = "symbol,exchange,kind (split, bonus or dividend),ex_date,ratio_old,ratio_new,amount (per share)"
