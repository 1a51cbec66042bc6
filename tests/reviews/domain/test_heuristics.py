"""The heuristic audit: the rule at each of its edges, the money unit, and reading citations."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reviews.domain.heuristics import (
    AuditSettings,
    HeuristicReport,
    Recommendation,
    audit_heuristic,
    extract_citations,
    heuristic_audit,
    outcomes_by_heuristic,
    recommend,
)

D = Decimal


def pnls(*values: str) -> list[Decimal]:
    return [D(value) for value in values]


def recommendation_for(*values: str, audit: AuditSettings | None = None) -> Recommendation:
    return audit_heuristic("H-1", pnls(*values), audit).recommendation


# --- the worked example: the spec's weekly review, in dollars (a unit of 1) ---------------------

IN_DOLLARS = AuditSettings(unit=D(1))


def test_the_weekly_review_example_reads_as_the_spec_reads_it() -> None:
    reports = heuristic_audit(
        {
            "H-3": pnls("3.00", "3.00", "3.00", "3.00", "1.20", "1.20", "-1.60", "-1.60"),
            "H-7": pnls("-4.80", "-3.60", "2.10"),
            "H-12": [],
            "H-15": pnls("2.50", "2.00", "2.00", "-2.50", "-2.50"),
        },
        IN_DOLLARS,
    )
    assert reports == (
        HeuristicReport("H-3", 8, 6, D("11.20"), D("0.7500"), D("1.40"), "KEEP"),
        HeuristicReport("H-7", 3, 1, D("-6.30"), D("0.3333"), D("-2.10"), "DEMOTE"),
        HeuristicReport("H-12", 0, 0, D("0.00"), None, None, "INSUFFICIENT_DATA"),
        HeuristicReport("H-15", 5, 3, D("1.50"), D("0.6000"), D("0.30"), "INVESTIGATE"),
    )


# --- the rule's edges, in the default unit of ₹1,000 -------------------------------------------


def test_the_defaults_are_the_specs_lines_in_thousands_of_rupees() -> None:
    audit = AuditSettings()
    assert (audit.min_citations, audit.demote_below, audit.investigate_below, audit.unit) == (
        3,
        D("-1.0"),
        D("0.5"),
        D(1000),
    )
    assert (audit.demote_line, audit.investigate_line) == (D("-1000.0"), D("500.0"))


def test_an_average_exactly_on_the_demote_line_is_investigated_not_demoted() -> None:
    assert recommendation_for("-1000.00", "-1000.00", "-1000.00") == "INVESTIGATE"
    assert recommendation_for("-1500.00", "-500.00", "-1000.00") == "INVESTIGATE"  # average -1,000.00


def test_a_paisa_below_the_demote_line_is_demoted() -> None:
    assert recommendation_for("-1000.00", "-1000.00", "-1000.03") == "DEMOTE"  # average -1,000.01


def test_an_average_exactly_on_the_investigate_line_is_kept() -> None:
    assert recommendation_for("500.00", "500.00", "500.00") == "KEEP"
    assert recommendation_for("2000.00", "-1000.00", "500.00") == "KEEP"  # average 500.00


def test_a_paisa_below_the_investigate_line_is_investigated() -> None:
    assert recommendation_for("500.00", "500.00", "499.97") == "INVESTIGATE"  # average 499.99


def test_exactly_the_minimum_citations_is_enough_to_judge() -> None:
    report = audit_heuristic("H-9", pnls("-5000.00", "-5000.00", "-5000.00"))
    assert (report.citations, report.average_pnl, report.recommendation) == (3, D("-5000.00"), "DEMOTE")


def test_one_citation_below_the_minimum_is_insufficient_however_large_the_loss() -> None:
    report = audit_heuristic("H-9", pnls("-50000.00", "-50000.00"))
    assert report == HeuristicReport("H-9", 2, 0, D("-100000.00"), D("0.0000"), D("-50000.00"), "INSUFFICIENT_DATA")
    assert recommendation_for("90000.00", "90000.00") == "INSUFFICIENT_DATA"


def test_an_uncited_heuristic_has_no_average_or_win_rate() -> None:
    assert audit_heuristic("H-12", []) == HeuristicReport("H-12", 0, 0, D("0.00"), None, None, "INSUFFICIENT_DATA")


def test_the_minimum_is_configurable() -> None:
    one = AuditSettings(min_citations=1)
    assert recommendation_for("-1000.01", audit=one) == "DEMOTE"
    assert recommendation_for("-1000.01", "0", audit=AuditSettings(min_citations=3)) == "INSUFFICIENT_DATA"


def test_the_reported_average_rounded_to_the_paisa_is_the_one_compared() -> None:
    # -3,000.01 / 3 = -1,000.0033...: reported as -1,000.00, exactly on the line, so not demoted.
    report = audit_heuristic("H-4", pnls("-1000.00", "-1000.00", "-1000.01"))
    assert (report.average_pnl, report.recommendation) == (D("-1000.00"), "INVESTIGATE")
    # -3,000.02 / 3 = -1,000.0066...: reported as -1,000.01, below the line.
    report = audit_heuristic("H-4", pnls("-1000.00", "-1000.01", "-1000.01"))
    assert (report.average_pnl, report.recommendation) == (D("-1000.01"), "DEMOTE")


# --- the money unit ---------------------------------------------------------------------------


def test_the_lines_scale_with_the_unit() -> None:
    losing = ("-1500.00", "-1500.00", "-1500.00")  # average -1,500.00
    assert recommendation_for(*losing, audit=AuditSettings(unit=D(1000))) == "DEMOTE"  # -1.5 units
    assert recommendation_for(*losing, audit=AuditSettings(unit=D(1500))) == "INVESTIGATE"  # -1.0: on the line
    assert recommendation_for(*losing, audit=AuditSettings(unit=D(10000))) == "INVESTIGATE"  # -0.15 units
    winning = ("600.00", "600.00", "600.00")  # average 600.00
    assert recommendation_for(*winning, audit=AuditSettings(unit=D(1000))) == "KEEP"  # 0.6 units
    assert recommendation_for(*winning, audit=AuditSettings(unit=D(1200))) == "KEEP"  # 0.5: on the line
    assert recommendation_for(*winning, audit=AuditSettings(unit=D(2000))) == "INVESTIGATE"  # 0.3 units
    assert recommendation_for(*winning, audit=AuditSettings(unit=D(1))) == "KEEP"  # 600 units


def test_a_unit_of_one_rupee_reads_the_lines_as_rupees() -> None:
    assert recommendation_for("-1.00", "-1.00", "-1.00", audit=AuditSettings(unit=D(1))) == "INVESTIGATE"
    assert recommendation_for("-1.01", "-1.01", "-1.01", audit=AuditSettings(unit=D(1))) == "DEMOTE"


# --- the record -------------------------------------------------------------------------------


def test_a_trade_that_made_exactly_nothing_is_no_win() -> None:
    report = audit_heuristic("H-2", pnls("0.00", "0.01", "-0.01"))
    assert (report.wins, report.win_rate, report.total_pnl, report.average_pnl) == (
        1,
        D("0.3333"),
        D("0.00"),
        D("0.00"),
    )


def test_the_win_rate_is_a_fraction_to_four_places_rounded_half_up() -> None:
    assert audit_heuristic("H-2", pnls("1", "1", "-1")).win_rate == D("0.6667")
    assert audit_heuristic("H-2", pnls("1", "1", "1", "1", "1", "1", "1", "-1")).win_rate == D("0.8750")


def test_the_audit_keeps_the_order_it_was_given_and_uses_the_defaults_when_not_told() -> None:
    reports = heuristic_audit({"H-9": pnls("1"), "H-1": pnls("1")})
    assert [report.code for report in reports] == ["H-9", "H-1"]


@pytest.mark.parametrize("bad", [1.5, D("NaN"), D("Infinity"), "12.00", None])
def test_a_citation_pnl_must_be_a_finite_decimal(bad: object) -> None:
    with pytest.raises(ValueError, match="H-5"):
        audit_heuristic("H-5", [D("1.00"), bad])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"min_citations": 0}, "min_citations"),
        ({"min_citations": True}, "min_citations"),
        ({"unit": D(0)}, "unit"),
        ({"unit": D(-1000)}, "unit"),
        ({"unit": 1000.0}, "unit"),
        ({"demote_below": -1.0}, "demote_below"),
        ({"investigate_below": D("NaN")}, "investigate_below"),
        ({"demote_below": D("0.6"), "investigate_below": D("0.5")}, "must not be above"),
    ],
)
def test_malformed_settings_are_refused(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        AuditSettings(**overrides)  # type: ignore[arg-type]


def test_equal_lines_leave_no_room_to_investigate() -> None:
    audit = AuditSettings(demote_below=D(0), investigate_below=D(0))
    assert recommendation_for("-0.03", "0", "0", audit=audit) == "DEMOTE"  # average -0.01
    assert recommendation_for("0", "0", "0", audit=audit) == "KEEP"


def test_recommend_without_an_average_is_insufficient() -> None:
    assert recommend(5, None, AuditSettings()) == "INSUFFICIENT_DATA"


# --- reading citations ------------------------------------------------------------------------

ACTIVE = frozenset({"H-7", "H-70", "H-3"})


@pytest.mark.parametrize(
    ("text", "valid", "unknown"),
    [
        ("Per heuristic H-7: concentrate when vol is low.", ("H-7",), ()),
        ("H-70 applies here.", ("H-70",), ()),  # not H-7
        ("Cited H-7, H-3; and (H-70).", ("H-7", "H-3", "H-70"), ()),
        ("h-7 is written in lower case, so it is no citation.", (), ()),
        ("H-7 first, then H-7 again, and H-7.", ("H-7",), ()),  # once per note
        ("H-3 and H-22 and H-3.", ("H-3",), ("H-22",)),
        ("H-99 and H-100", (), ("H-99", "H-100")),
        ("PH-7, H-7x, H-7_, xH-7 and H-7a are words, not codes.", (), ()),
        ("H- alone, H-x and H7 name nothing.", (), ()),
        ("H-07 is written with a leading zero: another code.", (), ("H-07",)),
        ("Line end H-3\nand start\nH-7", ("H-3", "H-7"), ()),
        ("—H-7— and «H-3»", ("H-7", "H-3"), ()),
        ("", (), ()),
    ],
)
def test_citations_are_read_as_whole_codes(text: str, valid: tuple[str, ...], unknown: tuple[str, ...]) -> None:
    assert extract_citations(text, ACTIVE) == (valid, unknown)


def test_a_code_glued_to_a_non_ascii_letter_is_no_citation() -> None:
    assert extract_citations("éH-7 and H-7é", ACTIVE) == ((), ())


def test_with_no_active_playbook_every_code_is_unknown() -> None:
    assert extract_citations("H-7 and H-3", set()) == ((), ("H-7", "H-3"))


def test_outcomes_are_gathered_once_per_trade_with_every_active_code_present() -> None:
    outcomes, unknown = outcomes_by_heuristic(
        [
            ("Thesis: H-7. Note: as H-7 said, and H-3.", D("1200.00")),
            ("H-3 only; also H-44.", D("-300.00")),
            ("Nothing cited.", D("50.00")),
            ("H-44 again, and H-8.", D("10.00")),
        ],
        ("H-3", "H-7", "H-70"),
    )
    assert outcomes == {"H-3": [D("1200.00"), D("-300.00")], "H-7": [D("1200.00")], "H-70": []}
    assert unknown == ("H-44", "H-8")


# --- invariants --------------------------------------------------------------------------------

RANK: dict[Recommendation, int] = {"DEMOTE": 0, "INVESTIGATE": 1, "KEEP": 2}
MONEY = st.integers(min_value=-1_000_000, max_value=1_000_000).map(lambda paise: D(paise) / 100)


@settings(max_examples=200, deadline=None)
@given(st.lists(MONEY, max_size=12), st.integers(min_value=1, max_value=6))
def test_the_record_adds_up(outcomes: list[Decimal], minimum: int) -> None:
    report = audit_heuristic("H-1", outcomes, AuditSettings(min_citations=minimum))
    assert report.citations == len(outcomes)
    assert report.total_pnl == sum(outcomes, D(0))
    assert 0 <= report.wins <= report.citations
    assert (report.recommendation == "INSUFFICIENT_DATA") is (len(outcomes) < minimum)
    if report.win_rate is not None:
        assert D(0) <= report.win_rate <= D(1)


@settings(max_examples=200, deadline=None)
@given(st.lists(MONEY, min_size=3, max_size=12), MONEY)
def test_a_citation_above_the_average_never_lowers_the_recommendation(outcomes: list[Decimal], extra: Decimal) -> None:
    before = audit_heuristic("H-1", outcomes)
    assert before.average_pnl is not None
    better = max(extra, before.average_pnl)
    after = audit_heuristic("H-1", [*outcomes, better])
    assert RANK[after.recommendation] >= RANK[before.recommendation]


CODES = st.integers(min_value=0, max_value=200).map(lambda number: f"H-{number}")
FILLER = st.sampled_from([" ", ", ", "; ", " and ", "\n", " (", ") ", ": "])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(CODES, FILLER), max_size=10), st.sets(CODES, max_size=10))
def test_every_code_written_apart_is_found_once_and_on_one_side(
    pieces: list[tuple[str, str]], active: set[str]
) -> None:
    text = "".join(code + filler for code, filler in pieces)
    valid, unknown = extract_citations(text, active)
    written = list(dict.fromkeys(code for code, _ in pieces))
    assert set(valid) == {code for code in written if code in active}
    assert set(unknown) == {code for code in written if code not in active}
    assert len(valid) == len(set(valid)) and len(unknown) == len(set(unknown))
    assert [code for code in written if code in active] == list(valid)  # order of first mention
