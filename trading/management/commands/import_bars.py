from __future__ import annotations

from trading.management.commands._import_base import ImportCommand
from trading.market.imports import import_bars


class Command(ImportCommand):
    help = "Import bars from a CSV file. Every row is validated first; any problem means nothing is written."
    importer = staticmethod(import_bars)
    columns = "symbol,date,open,high,low,close,volume"
