from __future__ import annotations

import re
from typing import Any

from django.core.management.base import CommandError, CommandParser

from trading.management.commands._import_base import ImportCommand
from trading.market.domain.file_formats import FORMATS
from trading.market.imports import BarOptions, import_bars


class Command(ImportCommand):
    help = (
        "Import daily bars from a CSV file: the desk's format, an NSE bhavcopy (UDiFF) or a Yahoo Finance "
        "export, told from the header. Every row is validated first (a bar on a day the exchange is closed "
        "is refused); any problem means nothing is written."
    )
    importer = staticmethod(import_bars)
    columns = "symbol,date,open,high,low,close,volume (or a bhavcopy, or a Yahoo export)"

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--format", choices=FORMATS, help="the file's format (default: told from its header)")
        parser.add_argument(
            "--series", default="EQ", help="bhavcopy: the series to read, comma-separated (default: EQ)"
        )
        parser.add_argument(
            "--symbol",
            default="",
            help="Yahoo export: the file's symbol (default: the file name, RELIANCE.NS.csv is NSE:RELIANCE)",
        )
        parser.add_argument(
            "--create-missing",
            action="store_true",
            help="create unknown symbols as instruments with their exchange's defaults (reported)",
        )
        parser.add_argument(
            "--exchange", default="NSE", help="--create-missing: the exchange of a bare symbol (default: NSE)"
        )
        parser.add_argument(
            "--currency",
            default="",
            help="--create-missing: the currency of created instruments (needed outside NSE and BSE)",
        )

    def importer_options(self, options: dict[str, Any]) -> dict[str, Any]:
        currency = options["currency"].strip().upper()
        if currency and not re.fullmatch(r"[A-Z]{3}", currency):
            raise CommandError(f"--currency {currency!r} is not a three-letter code (ISO 4217, e.g. USD)")
        series = frozenset(part.strip().upper() for part in options["series"].split(",") if part.strip())
        return {
            "options": BarOptions(
                file_format=options["format"],
                series=series or frozenset({"EQ"}),
                symbol=options["symbol"],
                create_missing=options["create_missing"],
                exchange=options["exchange"].strip().upper() or "NSE",
                currency=currency,
            )
        }
