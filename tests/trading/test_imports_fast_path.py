"""The bar validator's fast path accepts exactly what the strict parser accepts, with the same
values, and leaves every refusal (and its wording) to the strict parser.

``StrictValidator`` is the reference: the same validator with the fast path switched off, so each
row is decided by ``_parse_bar`` alone, as before the fast path existed. Pure: no database.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trading.market.domain.csv_rows import BarRow, BarValidator, RowProblem
from vocabulary.dates import DateWindow

WINDOW = DateWindow(today=dt.date(2026, 3, 31), zone="Asia/Kolkata")


class StrictValidator(BarValidator):
    """The reference: every row through ``_parse_bar``."""

    def _accepted(self, line: int, row: Mapping[str, str]) -> BarRow | None:
        return None


def _both(rows: list[dict[str, str]]) -> tuple[list[BarRow | RowProblem], list[BarRow | RowProblem]]:
    fast, strict = BarValidator(WINDOW), StrictValidator(WINDOW)
    return (
        [fast.check(line, row) for line, row in enumerate(rows, start=2)],
        [strict.check(line, row) for line, row in enumerate(rows, start=2)],
    )


def _same(fast: BarRow | RowProblem, strict: BarRow | RowProblem) -> bool:
    """Equal, and equal to the digit: Decimal('1.5') == Decimal('1.5000'), but only the second is
    what the strict parser returns (and what a report cites)."""
    if fast != strict or type(fast) is not type(strict):
        return False
    if isinstance(fast, BarRow) and isinstance(strict, BarRow):
        return [str(value) for value in fast] == [str(value) for value in strict]
    return True


def assert_same(rows: list[dict[str, str]]) -> None:
    fast, strict = _both(rows)
    for row, got, expected in zip(rows, fast, strict, strict=True):
        assert _same(got, expected), (row, got, expected)


# --- the texts a file may hold -------------------------------------------------------------------


def _price_texts() -> st.SearchStrategy[str]:
    plain = st.builds(
        lambda whole, fraction: f"{whole}.{fraction}" if fraction else str(whole),
        st.integers(0, 10**15),
        st.text("0123456789", max_size=6),
    )
    near = st.sampled_from(["100", "100.00", "100.00005", "100.00015", "99.99995", "105", "99"])
    odd = st.sampled_from(
        [
            "",
            " 100 ",
            "-100",
            "+100",
            "0",
            "-0",
            "0.00004",
            "0.00005",
            "0.0001",
            "1e2",
            "1E+2",
            "1e999999999",
            "-1e999999999",
            "NaN",
            "sNaN",
            "Infinity",
            "-inf",
            "1_000",
            "１００",
            "١٠٠",
            "abc",
            "1.2.3",
            "99999999999999.9999",
            "99999999999999.99995",
            "100000000000000",
            "\x00",
        ]
    )
    return st.one_of(plain, near, near, odd)


def _volume_texts() -> st.SearchStrategy[str]:
    return st.one_of(
        st.integers(0, 2**64).map(str),
        st.sampled_from(
            [
                "",
                "0",
                "-1",
                "+5",
                " 5",
                "5.0",
                "5.5",
                "1e3",
                "1_000",
                "٥",
                "²",
                "9223372036854775807",
                "9223372036854775808",
                "000000000000000000012",
                "NaN",
                "Infinity",
            ]
        ),
    )


def _date_texts() -> st.SearchStrategy[str]:
    days = st.dates(min_value=dt.date(1985, 1, 1), max_value=dt.date(2027, 12, 31))
    return st.one_of(
        days.map(dt.date.isoformat),
        days.map(lambda day: day.strftime("%Y%m%d")),
        st.sampled_from(["", "2025-02-30", "2025-1-2", " 2025-01-02", "2025-W01-1", "0001-01-01", "x"]),
    )


def _symbol_texts() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(["RELIANCE", "reliance", "NSE:TCS", "TCS", "", "A" * 32, "A" * 33, "NSE:" + "B" * 33, "ß"]),
        st.text(min_size=0, max_size=6),
    )


ROWS = st.fixed_dictionaries(
    {
        "symbol": _symbol_texts(),
        "date": _date_texts(),
        "open": _price_texts(),
        "high": _price_texts(),
        "low": _price_texts(),
        "close": _price_texts(),
        "volume": _volume_texts(),
    }
)


@settings(max_examples=400, deadline=None)
@given(st.lists(ROWS, min_size=1, max_size=12))
def test_the_fast_path_decides_every_row_as_the_strict_parser_does(rows):
    assert_same(rows)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["RELIANCE", "TCS", "NSE:TCS"]),
            st.dates(min_value=dt.date(2025, 1, 1), max_value=dt.date(2025, 1, 20)),
            st.sampled_from(["99", "99.5", "100", "100.00005", "100.00015", "101"]),
            st.sampled_from(["99", "99.5", "100", "100.00005", "100.00015", "101"]),
            st.sampled_from(["99", "99.5", "100", "100.00005", "100.00015", "101"]),
            st.sampled_from(["99", "99.5", "100", "100.00005", "100.00015", "101"]),
        ),
        min_size=1,
        max_size=30,
    )
)
def test_remembered_symbols_and_dates_change_nothing_across_a_file(rows):
    """Mostly valid rows, symbols and dates repeating (the cache at work), prices rounding at the
    fourth decimal to either side of each other: duplicates, order and ranges judged alike."""
    assert_same(
        [
            {"symbol": s, "date": d.isoformat(), "open": o, "high": h, "low": lo, "close": c, "volume": "10"}
            for s, d, o, h, lo, c in rows
        ]
    )


def _row(**changes: str) -> dict[str, str]:
    row = {
        "symbol": "RELIANCE",
        "date": "2025-01-02",
        "open": "100",
        "high": "105",
        "low": "99",
        "close": "104",
        "volume": "1000",
    }
    return {**row, **changes}


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"open": "100.00005", "low": "100.00005"},  # rounds to even: 100.0000 both
        {"open": "100.00015", "low": "100.0002"},  # 100.0002 both
        {"open": "98.99995", "low": "99"},  # open rounds into the range
        {"low": "0.00004", "open": "0.00004"},  # rounds to zero: not positive
        {"low": "0.00005", "open": "0.0001", "close": "0.0001", "high": "0.0001"},
        {"high": "99999999999999.9999"},
        {"high": "99999999999999.99995"},  # too large before rounding
        {"volume": "9223372036854775807"},
        {"volume": "9223372036854775808"},
        {"volume": "999999999999999999"},
        {"volume": "1e3"},
        {"volume": "10.0"},
        {"volume": "+10"},
        {"volume": "٥"},
        {"open": "NaN"},
        {"close": "sNaN"},
        {"high": "Infinity"},
        {"low": "-Infinity"},
        {"date": "20250102"},
        {"date": "2099-01-01"},
        {"date": "1989-12-31"},
        {"symbol": "reliance"},
        {"symbol": ""},
        {"symbol": "X" * 33},
        {"symbol": "NUL\x00"},
    ],
)
def test_edge_rows_are_decided_alike(changes):
    assert_same([_row(**changes)])


def test_a_missing_column_fails_alike():
    """A mapping without a column (a provider's row, not a file's) raises the same KeyError."""
    row = _row()
    del row["close"]
    with pytest.raises(KeyError):
        BarValidator(WINDOW).check(2, row)
    with pytest.raises(KeyError):
        StrictValidator(WINDOW).check(2, row)


def test_accepted_prices_are_rounded_to_four_places():
    bar = BarValidator(WINDOW).check(2, _row(open="100.00005", low="99.5", close="104.12345"))
    assert isinstance(bar, BarRow)
    assert (str(bar.open), str(bar.high), str(bar.low), str(bar.close)) == (
        "100.0000",
        "105.0000",
        "99.5000",
        "104.1234",
    )
