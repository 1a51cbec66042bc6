from __future__ import annotations

from trading.management.commands._import_base import ImportCommand
from trading.market.imports import import_fundamentals


class Command(ImportCommand):
    help = "Import fundamentals snapshots from CSV. Rows are validated first; any problem writes nothing."
    importer = staticmethod(import_fundamentals)
    columns = "symbol,as_of,pe,pb,ev_ebitda,revenue_growth_pct,net_margin_pct[,source]"
