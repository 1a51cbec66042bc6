from __future__ import annotations

from trading.management.commands._import_base import ImportCommand
from trading.market.imports import import_instruments


class Command(ImportCommand):
    help = (
        "Import instruments from a CSV file. A new exchange:symbol is created, a known one updated where the "
        "file differs (reported); every row is validated first and any problem means nothing is written."
    )
    importer = staticmethod(import_instruments)
    columns = "symbol,exchange,name,sector,tick_size,lot_size,currency[,isin]"
