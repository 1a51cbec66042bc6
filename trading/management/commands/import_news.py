from __future__ import annotations

from trading.imports import import_news
from trading.management.commands._import_base import ImportCommand


class Command(ImportCommand):
    help = "Import news from a CSV file. Every row is validated first; any problem means nothing is written."
    importer = staticmethod(import_news)
    columns = "symbol (blank or * for market-wide),headline,source,published_at[,url]"
