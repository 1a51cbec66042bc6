"""How fast the exchange calendar answers (``trading.market.calendar``), since the book pass, the
fills, the horizon count and every import ask it per row or per position.

Run from the project root:

    .venv/bin/python bench/exchange_calendar.py [--repeat N]

Printed: the time to build the NSE/BSE (XBOM) calendar once per process, then microseconds per
call of ``is_session``, ``sessions_between`` (a six-month span), ``next_session`` and
``sessions`` (a year), inside and outside the package's range (the weekdays fallback). Pure: no
database, no Django settings.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from trading.market.domain import calendar


def _per_call(label: str, call: Callable[[], object], repeat: int) -> None:
    started = time.perf_counter()
    for _ in range(repeat):
        call()
    elapsed = time.perf_counter() - started
    print(f"{label:<52} {elapsed / repeat * 1e6:10.2f} µs/call")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=100_000)
    args = parser.parse_args()
    started = time.perf_counter()
    import exchange_calendars  # noqa: F401  # the package and pandas, imported once per process

    imported = time.perf_counter() - started
    started = time.perf_counter()
    built = calendar.calendar_for("NSE")
    build = time.perf_counter() - started
    assert built is not None
    print(f"exchange_calendars (and pandas) imported in {imported * 1000:.0f} ms")
    print(f"XBOM calendar built in {build * 1000:.0f} ms: {len(built.days)} sessions, {built.first} to {built.last}")
    inside, later = dt.date(2025, 6, 2), dt.date(2025, 12, 1)
    outside, outside_later = dt.date(2027, 6, 1), dt.date(2027, 12, 1)
    n = args.repeat
    _per_call("is_session (inside the range)", lambda: calendar.is_session("NSE", inside), n)
    _per_call("sessions_between, six months (inside)", lambda: calendar.sessions_between("NSE", inside, later), n)
    _per_call("next_session (inside)", lambda: calendar.next_session("NSE", inside), n)
    _per_call(
        "sessions, one year (inside)", lambda: calendar.sessions("NSE", inside, inside.replace(year=2026)), n // 10
    )
    _per_call(
        "sessions_between, six months (weekdays fallback)",
        lambda: calendar.sessions_between("NSE", outside, outside_later),
        n // 10,
    )


if __name__ == "__main__":
    main()
