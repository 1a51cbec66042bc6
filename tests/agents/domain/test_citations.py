"""Indicator values a note cites are read and checked against the bundle; pure, no database."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agents.domain import citations
from agents.domain.citations import check_citations, extract_citations, mismatch_warnings
from agents.domain.llm import ModelRequest
from agents.roles import AnalystNote, OfflineModel, run_analysts
from tests.agents.roles.builders import BULLISH, SYMBOL, FakeClient, choose, make_bundle
from tests.demo_bundles import demo_bundle, demo_symbols


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("RSI(14)=99", [("rsi_14", "99")]),
        ("RSI 14 at 32.4", [("rsi_14", "32.4")]),
        ("rsi_14=32.4", [("rsi_14", "32.4")]),
        ("RSI is at 58", [("rsi_14", "58")]),
        ("ATR 12.3", [("atr_14", "12.3")]),
        ("ATR(14)=12.50", [("atr_14", "12.50")]),
        ("SMA50 2450", [("sma_50", "2450")]),
        ("the 200-day moving average at Rs. 2,310", [("sma_200", "Rs. 2,310")]),
        ("close ₹2,450.50", [("last_close", "₹2,450.50")]),
        ("prev close 745", [("prev_close", "745")]),
        ("MACD 5.0", [("macd_line", "5.0")]),
        (
            "MACD hist +2.00 (line +5.00, signal +3.00)",
            [("macd_hist", "+2.00"), ("macd_line", "+5.00"), ("macd_signal", "+3.00")],
        ),
        (
            "close 750.00 vs Bollinger 720.00 / 740.00 / 760.00",
            [("bb_lower", "720.00"), ("bb_middle", "740.00"), ("bb_upper", "760.00"), ("last_close", "750.00")],
        ),
        ("support 735.00 (support_distance_pct +2.00)", [("support", "735.00"), ("support_distance_pct", "+2.00")]),
        (
            "EMA20 742.00 > SMA50 720.00 > SMA200 700.00",
            [("ema_20", "742.00"), ("sma_50", "720.00"), ("sma_200", "700.00")],
        ),
    ],
)
def test_it_reads_the_indicator_values_a_text_cites(text: str, expected: list[tuple[str, str]]) -> None:
    assert extract_citations(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "RSI above 70 is overbought",
        "RSI 14 below 30",  # 14 is the period, and nothing is cited
        "RSI(14) falls under 40",
        "close 2% above SMA50",
        "close below support",
        "rsi_14=n/a",
        "net_sentiment=+0.30 over 2 unique items (2 raw)",
        "P/E 12.50, revenue growth +14.50%",
    ],
)
def test_it_reads_nothing_where_no_indicator_value_is_cited(text: str) -> None:
    assert extract_citations(text) == []


# Every spelling of a name the reader knows, in both cases, and what may stand around them.
NAME_SPELLINGS = [
    "RSI", "rsi_14", "RSI(14)", "ATR 14", "atr", "SMA50", "sma_200", "DMA 20", "200-day moving average",
    "50 day SMA", "20-day EMA", "EMA20", "MACD", "macd_hist", "MACD histogram", "MACD signal line", "macd line",
    "BB upper", "bb_middle", "BB lower", "upper Bollinger band", "Bollinger middle", "lower bollinger",
    "swing high", "Swing_Low", "prev close", "Previous Close", "last close", "Close", "last price",
    "closing price", "Support", "resistance", "support distance pct", "Resistance_Distance",
]  # fmt: skip
FILLERS = ["", " ", "=", ": ", " at ", " is ", " near ", " of ", " ~", " ≈ "]
NUMBERS = ["32.4", "2,450.50", "₹745", "Rs. 2,310", "-1.20", "+2.00", "70", "14", "3%", "12x", "5 days"]
OTHERS = [" ", ", ", ". ", "(", ")", " / ", "above", "x", "9", ".", "_", "é", "n/a", "\n"]


@given(st.lists(st.sampled_from(NAME_SPELLINGS + FILLERS + NUMBERS + OTHERS), max_size=14).map("".join))
def test_the_quick_first_character_check_changes_no_match(text: str) -> None:
    """The reader tries a position only when a name can start there; without that check it finds
    exactly the same names, values and places."""
    unchecked = re.compile(citations._NAMED.pattern.replace(f"(?=[{citations.NAME_STARTS}])", "", 1), re.I)
    assert unchecked.pattern != citations._NAMED.pattern

    def found(pattern: re.Pattern[str]) -> list[tuple[int, int, dict[str, str | None]]]:
        return [(match.start(), match.end(), match.groupdict()) for match in pattern.finditer(text)]

    assert found(citations._NAMED) == found(unchecked)


def test_every_spelling_of_a_name_starts_with_a_character_the_check_lets_through() -> None:
    for spelling in NAME_SPELLINGS:
        assert spelling[0].lower() in citations.NAME_STARTS, spelling
        assert extract_citations(f"{spelling} 12.5"), spelling


def test_a_text_read_again_gives_a_list_of_its_own() -> None:
    first = extract_citations("RSI 14 at 32.4")
    first.append(("atr_14", "1"))

    assert extract_citations("RSI 14 at 32.4") == [("rsi_14", "32.4")]


def _note(*evidence: str, summary: str = "A view.") -> AnalystNote:
    return AnalystNote(
        role="technical", symbol=SYMBOL, stance=0.2, confidence=0.6, summary=summary, evidence=list(evidence)
    )


@pytest.mark.parametrize(
    ("cited", "ok"),
    [
        ("RSI 32", True),  # printed without decimals: anything 31.5-32.5 rounds to it
        ("RSI 32.4", True),
        ("RSI 33", False),
        ("RSI 32.0", False),  # 0.4 off: more than 1% (0.32) and than its rounding (0.05)
        ("close 2460", True),  # within 1% of 2450.5
        ("close 2480", False),
    ],
)
def test_a_citation_matches_within_one_percent_or_its_own_rounding(cited: str, ok: bool) -> None:
    bundle = make_bundle({**BULLISH, "rsi_14": 32.4, "last_close": 2450.5})
    check = check_citations(_note(cited), bundle)
    assert [citation.ok for citation in check.citations] == [ok]
    assert check.mismatches == (0 if ok else 1)


def test_a_value_the_bundle_never_had_is_a_mismatch() -> None:
    bundle = make_bundle({**BULLISH, "sma_200": None})
    [citation] = check_citations(_note("SMA200 700.00"), bundle).citations
    assert (citation.actual, citation.ok) == (None, False)


def hostile_rsi(request: ModelRequest, answer: dict[str, Any]) -> dict[str, Any]:
    if request.role != "technical":
        return answer
    return answer | {
        "summary": "RSI(14)=99: wildly overbought, sell now.",
        "evidence": ["RSI 99", *answer["evidence"]],
    }


def test_a_fake_analyst_citing_rsi_99_against_a_bundle_at_32_4_is_flagged() -> None:
    bundle = make_bundle({**BULLISH, "rsi_14": 32.4})
    technical = run_analysts(choose(FakeClient(patch=hostile_rsi)), bundle)["technical"]
    assert isinstance(technical, AnalystNote)
    check = check_citations(technical, bundle)
    assert check.mismatches == 1  # "RSI(14)=99" and "RSI 99" are one figure, checked once
    assert mismatch_warnings({"technical": check}) == ["technical note cites RSI(14) 99; the bundle says 32.4"]
    stored = {"technical": check.model_dump(mode="json")}
    assert mismatch_warnings(stored) == mismatch_warnings({"technical": check})


@pytest.mark.parametrize("symbol", demo_symbols())
def test_the_offline_models_honest_notes_cite_no_number_the_demo_bundle_contradicts(symbol: str) -> None:
    bundle = demo_bundle(symbol)
    notes = run_analysts(choose(OfflineModel()), bundle)
    checks = {role: check_citations(note, bundle) for role, note in notes.items() if isinstance(note, AnalystNote)}
    assert sum(check.mismatches for check in checks.values()) == 0, mismatch_warnings(checks)
    assert len(checks["technical"].citations) >= 10  # the checker really read the technical note
