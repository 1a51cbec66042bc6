"""The critique's grounding check: every figure and id a directive cites must be in its evidence pack."""

from __future__ import annotations

from reviews.domain.critique_grounding import check_grounding, cited_ids, directive_texts

FIGURES = {
    "performance.win_rate": 0.375,
    "loops.overconfidence.figures.conviction_gap": 0.3125,
    "performance.realised_pnl": -1234.5,
    "performance.largest_position_pct": 31.25,
    "loops.narrative_as_quant.figures.theses": 12,
}
IDS = {"runs": [101, 102], "positions": [45], "theses": [9], "heuristics": ["H-3"], "loops": [1, 2, 3, 4, 5, 6, 7]}


def directive(**fields) -> dict:
    return {"severity": "advisory", "diagnosis": "", "required_actions": [], "prohibited_patterns": [], **fields}


def test_ids_are_read_with_their_kind_in_lists_and_with_hashes() -> None:
    cited = cited_ids("Runs 101, 102 and #103, position 45, thesis #9, strategy run 7, loop 5, H-3.")

    assert [(c.kind, c.value) for c in cited] == [
        ("runs", "101"),
        ("runs", "102"),
        ("runs", "103"),
        ("positions", "45"),
        ("theses", "9"),
        ("strategy_runs", "7"),
        ("loops", "5"),
        ("heuristics", "H-3"),
    ]
    assert cited_ids("a win rate of 0.375 over 12 theses") == []


def test_a_grounded_directive_passes_with_a_full_share() -> None:
    grounded = directive(
        diagnosis="Loop 5: 12 theses won 37.5% against a gap of 0.3125, for ₹-1,234.50 (run 101, position 45).",
        required_actions=[
            {"kind": "reduce_concentration", "text": "Bring 31.25% below 20%.", "params": {"max_pct": 20.0}}
        ],
        prohibited_patterns=[{"kind": "heuristic", "value": "H-3", "text": "Citing H-3."}],
        evidence=["thesis 9 and runs 101, 102 stated 0.3125 more than they won."],
    )

    check = check_grounding(grounded, figures=FIGURES, ids=IDS)

    assert check.ok, check.problem()
    assert check.share == 1.0
    assert check.ids_cited == 8 and check.figures_cited == 7


def test_an_invented_figure_and_an_invented_id_are_named_with_where() -> None:
    invented = directive(
        diagnosis="The win rate is 0.42.",
        evidence=["position 999 lost the most.", "run 101 is real."],
    )

    check = check_grounding(invented, figures=FIGURES, ids=IDS)

    assert not check.ok
    assert check.ungrounded_figures == (("0.42", "diagnosis"),)
    assert check.invented_ids == (("position 999", "evidence[0]"),)
    assert check.share == round(1 / 3, 4)
    assert "0.42 (diagnosis)" in check.problem() and "position 999 (evidence[0])" in check.problem()


def test_id_digits_and_dates_are_not_figures_and_an_unknown_heuristic_is_invented() -> None:
    text = directive(diagnosis="Since 2026-11-20 run 102 cites H-9.")

    check = check_grounding(text, figures=FIGURES, ids=IDS)

    assert check.figures_cited == 0
    assert check.invented_ids == (("H-9", "diagnosis"),)


def test_the_texts_read_are_every_text_field_of_the_directive() -> None:
    texts = directive_texts(
        directive(
            diagnosis="d",
            required_actions=[{"kind": "free_form", "text": "a", "params": {}}],
            prohibited_patterns=[{"kind": "instrument", "value": "TCS", "text": "p"}],
            evidence=["e"],
        )
    )

    assert [where for where, _ in texts] == [
        "diagnosis",
        "required_actions[0].text",
        "prohibited_patterns[0].text",
        "prohibited_patterns[0].value",
        "evidence[0]",
    ]
