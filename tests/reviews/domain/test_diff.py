"""The diff between two hard parts of one horizon: pure, on small hand-checked parts."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from reviews.domain.diff import DiffInputError, diff_hard_parts


def part(**sections: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "currency": "INR",
        "attribution": {
            "gains": "1000.00",
            "losses": "-400.00",
            "slippage": "-10.00",
            "costs": {"brokerage": "-40.00", "stt": "-12.50"},
            "costs_total": "-52.50",
            "manual": "0.00",
            "unrealised": "25.00",
            "inference": "-2.50",
            "net": "560.00",
            "operational_cost": "-55.00",
            "risk_adjusted": "1.40",
        },
        "actions": {"entries": 3, "exits": 2, "holds": 40, "rejected": 1, "exits_by_reason": {"stop": 1, "target": 1}},
        "accuracy": {
            "analysts": [{"role": "technical", "calls": 4, "right": 3, "rate": "0.7500"}],
            "debate": {"calls": 4, "right": 2, "rate": "0.5000"},
            "levels": {"theses": 2, "target_hit": 1, "stop_hit": 1, "neither": 0, "hit_rate": "1.0000"},
            "forecast": {"resolved": 4, "inside": 3, "coverage": "0.7500"},
        },
        "inaction": {"positions": 2, "beaten_by_inaction": 1, "superiority": "0.5000"},
        "heuristics": [
            {"code": "H-2", "citations": 4, "recommendation": "KEEP"},
            {"code": "H-10", "citations": 3, "recommendation": "INVESTIGATE"},
        ],
        "effectiveness": {"score": "0.6000"},
    }
    for name, value in sections.items():
        base[name] = value
    return base


def by_key(changes, key):
    return next(change for change in changes if change.key == key)


def test_each_money_figure_changes_by_the_later_less_the_earlier():
    later = part()
    later["attribution"] = {**later["attribution"], "gains": "1500.25", "net": "1060.25"}

    diff = diff_hard_parts(part(), later)

    assert by_key(diff.money, "gains").change == Decimal("500.25")
    assert diff.net.before == Decimal("560.00") and diff.net.after == Decimal("1060.25")
    assert diff.net.change == Decimal("500.25")
    assert by_key(diff.money, "losses").change == Decimal("0.00")
    assert diff.currency == "INR"


def test_charge_lines_follow_the_cost_model_order_and_a_line_one_side_lacks_has_no_change():
    later = part()
    later["attribution"] = {**later["attribution"], "costs": {"stt": "-20.00", "brokerage": "-40.00", "gst": "-7.20"}}

    diff = diff_hard_parts(part(), later)

    keys = [change.key for change in diff.money]
    assert keys.index("slippage") < keys.index("costs.brokerage") < keys.index("costs.stt") < keys.index("costs.gst")
    assert keys.index("costs.gst") < keys.index("costs_total")
    assert by_key(diff.money, "costs.stt").change == Decimal("-7.50")
    gst = by_key(diff.money, "costs.gst")
    assert gst.before is None and gst.after == Decimal("-7.20") and gst.change is None
    assert gst.label == "GST"


def test_actions_and_exit_reasons_are_counted_on_both_sides():
    later = part(
        actions={"entries": 1, "exits": 4, "holds": 45, "rejected": 0, "exits_by_reason": {"stop": 3, "horizon": 1}}
    )

    diff = diff_hard_parts(part(), later)

    assert by_key(diff.actions, "entries").change == -2
    assert by_key(diff.actions, "holds").change == 5
    assert by_key(diff.actions, "exits_by_reason.stop").change == 2
    target = by_key(diff.actions, "exits_by_reason.target")
    assert target.before == 1 and target.after is None and target.change is None
    assert by_key(diff.actions, "exits_by_reason.horizon").label == "Exits by horizon"


def test_accuracy_rates_change_in_shares_and_scores_are_not_shares():
    later = part()
    later["accuracy"]["debate"] = {"calls": 5, "right": 4, "rate": "0.8000"}
    later["inaction"] = {"positions": 4, "beaten_by_inaction": 3, "superiority": "0.7500"}
    later["accuracy"]["analysts"] = [{"role": "news", "calls": 2, "right": 0, "rate": "0.0000"}]

    diff = diff_hard_parts(part(), later)

    assert by_key(diff.rates, "accuracy.debate.rate").change == Decimal("0.3000")
    assert by_key(diff.rates, "inaction.superiority").change == Decimal("0.2500")
    technical = by_key(diff.rates, "accuracy.analysts.technical.rate")
    news = by_key(diff.rates, "accuracy.analysts.news.rate")
    assert technical.after is None and news.before is None and news.after == Decimal("0")
    score = by_key(diff.rates, "effectiveness.score")
    assert score.is_share is False and score.change == Decimal("0")


def test_only_heuristics_whose_recommendation_moved_are_listed_in_code_order():
    later = part(
        heuristics=[
            {"code": "H-10", "citations": 5, "recommendation": "DEMOTE"},
            {"code": "H-2", "citations": 6, "recommendation": "KEEP"},
            {"code": "H-7", "citations": 1, "recommendation": "INSUFFICIENT_DATA"},
        ]
    )

    diff = diff_hard_parts(part(), later)

    assert [(c.code, c.before, c.after) for c in diff.heuristics] == [
        ("H-7", None, "INSUFFICIENT_DATA"),
        ("H-10", "INVESTIGATE", "DEMOTE"),
    ]
    assert diff.heuristics[1].citations_before == 3 and diff.heuristics[1].citations_after == 5


def test_a_heuristic_dropped_from_the_later_audit_is_listed_as_gone():
    later = part(heuristics=[{"code": "H-2", "citations": 4, "recommendation": "KEEP"}])

    (gone,) = diff_hard_parts(part(), later).heuristics

    assert (gone.code, gone.before, gone.after, gone.citations_after) == ("H-10", "INVESTIGATE", None, None)


def test_a_section_missing_on_one_side_reads_as_not_there_rather_than_zero():
    earlier = part()
    del earlier["accuracy"]
    del earlier["attribution"]

    diff = diff_hard_parts(earlier, part())

    assert diff.net.before is None and diff.net.change is None
    assert by_key(diff.rates, "accuracy.debate.rate").before is None
    assert by_key(diff.rates, "accuracy.debate.rate").after == Decimal("0.5000")


def test_two_empty_parts_diff_to_nothing_changed():
    diff = diff_hard_parts({}, {})

    assert diff.heuristics == ()
    assert all(change.change is None for change in diff.money)


def test_reports_in_different_currencies_are_refused():
    with pytest.raises(DiffInputError, match="different currencies"):
        diff_hard_parts(part(), part(currency="USD"))


@pytest.mark.parametrize(
    ("section", "value", "field"),
    [
        ("attribution", {"net": "lots"}, "attribution.net"),
        ("attribution", {"net": "NaN"}, "attribution.net"),
        ("attribution", {"net": 12.5}, "attribution.net"),
        ("inaction", {"superiority": "1.2000"}, "inaction.superiority"),
        ("actions", {"entries": -1}, "actions.entries"),
        ("actions", {"entries": True}, "actions.entries"),
        ("actions", "many", "actions"),
    ],
)
def test_a_damaged_figure_is_refused_with_the_side_and_field_named(section, value, field):
    damaged = part(**{section: value})

    with pytest.raises(DiffInputError, match=rf"later hard part's {field}"):
        diff_hard_parts(part(), damaged)


def test_a_heuristic_row_without_a_recommendation_is_refused():
    damaged = part(heuristics=[{"code": "H-2", "citations": 4}])

    with pytest.raises(DiffInputError, match=r"heuristics\[H-2\] has no recommendation"):
        diff_hard_parts(damaged, part())


def test_a_factory_report_diffed_with_itself_changes_nothing():
    from tests.factories.reviews import hard_part

    hard = hard_part()

    diff = diff_hard_parts(hard, hard)

    assert diff.heuristics == ()
    assert {change.change for change in diff.money} == {Decimal("0.00")}
    assert {change.change for change in diff.actions} == {0}
