from __future__ import annotations

from trading.management.commands._import_base import ImportCommand
from trading.market.imports import import_news


class Command(ImportCommand):
    help = "Import news from a CSV file. Every row is validated first; any problem means nothing is written."
    importer = staticmethod(import_news)
    columns = "symbol (blank or * for market-wide),headline,source,published_at[,url]"
