from __future__ import annotations

from trading.imports import import_bars
from trading.management.commands._import_base import ImportCommand


class Command(ImportCommand):
    help = "Import bars from a CSV file. Every row is validated first; any problem means nothing is written."
    importer = staticmethod(import_bars)
    columns = "symbol,date,open,high,low,close,volume"
