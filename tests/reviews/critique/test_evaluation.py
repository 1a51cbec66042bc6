"""The critique's evaluation harness on hand-made critiques: quality (the share of cited figures and
ids found in the evidence pack, and the ids invented) and impact (each fired detector's score then
against the following runs: from a later critique in the window, else recomputed as of the last of
those runs), and ``manage.py critique_eval`` printing both per critique."""

from __future__ import annotations

import datetime as dt
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from reviews.critique.evaluation import (
    critique_evaluate,
    critique_impact,
    critique_quality,
    strategy_evaluate,
)
from tests.reviews.critique.web_rows import critique_for, finding, findings, pack, runs_for, strategy_named

PACK = pack(
    figures={"loops.overconfidence.gap": 0.18, "performance.win_rate": 0.42}, ids={"runs": [7, 8], "positions": [3]}
)


# --- quality (pure) ---------------------------------------------------------------------------


def test_a_critique_citing_only_what_the_pack_holds_scores_one():
    directive = {
        "diagnosis": "Stated conviction sits 0.18 above the win rate of 42%.",
        "evidence": ["Runs 7 and 8 took the same side; position 3 lost."],
    }
    quality = critique_quality(directive, PACK)
    assert (quality.figures_cited, quality.ids_cited) == (2, 3)
    assert quality.score == 1.0
    assert quality.invented_ids == ()


def test_invented_ids_and_unfound_figures_are_listed_and_lower_the_share():
    directive = {
        "diagnosis": "Conviction is 0.18 too high; run 7 shows it.",
        "evidence": ["Position 99 lost 12.5% in a week.", "Run 404 and run 405 echo it."],
        "required_actions": [{"kind": "free_form", "text": "Explain run 404.", "params": {}}],
    }
    quality = critique_quality(directive, PACK)
    assert quality.invented_ids == ("run 404", "position 99", "run 405")  # actions are read before evidence
    assert quality.unfound_figures == ("12.5%",)
    # Found: 0.18 and run 7; cited: two figures and five ids (run 404 twice).
    assert (quality.figures_cited, quality.figures_found, quality.ids_cited, quality.ids_found) == (2, 1, 5, 1)
    assert quality.score == pytest.approx(2 / 7)


def test_a_threshold_the_directive_sets_is_not_an_ungrounded_figure():
    directive = {
        "diagnosis": "Run 8 concentrated the book.",
        "required_actions": [
            {"kind": "reduce_concentration", "text": "Below 20% of capital.", "params": {"max_pct": 20}}
        ],
    }
    assert critique_quality(directive, PACK).score == 1.0


def test_escalation_counts_earlier_critiques_and_loop_numbers_are_what_the_critic_was_given():
    directive = {"diagnosis": "Loop 5 was first flagged 3 reviews ago, in critique 1; critique 4 never happened."}
    escalations = [{"detector": "overconfidence", "reviews_ago": 3, "times_flagged": 2, "escalates": True}]
    quality = critique_quality(directive, PACK, escalations=escalations, earlier=[1, 2])
    assert quality.invented_ids == ("critique 4",)
    assert quality.unfound_figures == ()
    assert critique_quality(directive, PACK).unfound_figures == ("3",)  # without the escalation: not given


def test_a_critique_that_cites_nothing_has_no_quality_score():
    assert critique_quality({"diagnosis": "Something feels off."}, PACK).score is None


# --- impact (pure) ----------------------------------------------------------------------------


def test_each_fired_detector_is_compared_with_its_later_score():
    then = findings({"overconfidence": 0.7, "single_signal_fixation": 0.9, "paralysis_or_churn": 0.6})
    later = findings({"overconfidence": 0.3, "single_signal_fixation": 0.95, "paralysis_or_churn": 0.6})
    impact = critique_impact(then, later, "critique #2")
    verdicts = {item.detector: item.verdict for item in impact.detectors}
    assert verdicts == {
        "single_signal_fixation": "worse",
        "overconfidence": "improved",
        "paralysis_or_churn": "unchanged",
    }
    assert impact.score == pytest.approx(1 / 3)
    assert {item.source for item in impact.detectors} == {"critique #2"}


def test_a_quiet_detector_is_not_judged_and_nothing_later_gives_no_score():
    then = findings({"overconfidence": 0.7})
    impact = critique_impact(then, None, "")
    assert [item.detector for item in impact.detectors] == ["overconfidence"]
    assert impact.detectors[0].verdict == "no later data"
    assert impact.score is None


def test_a_detector_missing_later_counts_as_no_data():
    impact = critique_impact([finding("overconfidence", score=0.8)], [finding("frozen_parameters", score=0.1)], "x")
    assert impact.detectors[0].after is None and impact.score is None


# --- the rows ---------------------------------------------------------------------------------


@pytest.fixture
def trajectory(db):
    """Three critiques of a strategy over 40 runs: overconfidence fired at run 12, eased by run 18,
    gone by run 35 (outside a 10-run window of run 18)."""
    strategy = strategy_named()
    runs_for(strategy, 40)
    first = critique_for(
        strategy,
        run_count=12,
        scores={"overconfidence": 0.7, "single_signal_fixation": 0.8},
        diagnosis="Conviction is 0.18 above the win rate; run 7 and run 99 show it.",
        evidence_pack=PACK,
    )
    second = critique_for(
        strategy, sequence=2, run_count=18, scores={"overconfidence": 0.55, "single_signal_fixation": 0.85}
    )
    third = critique_for(strategy, sequence=3, run_count=35, scores={})
    return strategy, first, second, third


def test_impact_reads_the_latest_later_critique_within_the_window(trajectory):
    _strategy, first, _second, _third = trajectory
    evaluation = critique_evaluate(first, horizon_runs=10, findings_at=_never)
    by_detector = {item.detector: item for item in evaluation.impact.detectors}
    assert by_detector["overconfidence"].verdict == "improved"
    assert by_detector["overconfidence"].after == 0.55
    assert by_detector["single_signal_fixation"].verdict == "worse"
    assert by_detector["overconfidence"].source == "critique #2 (6 runs later)"
    assert evaluation.quality.invented_ids == ("run 99",)
    assert evaluation.quality.score == pytest.approx(2 / 3)


def test_without_a_later_critique_the_detectors_are_recomputed_as_of_the_nth_run(trajectory):
    strategy, _first, second, _third = trajectory
    asked: list[tuple[dt.date, bool]] = []

    def recomputed(for_strategy, as_of, is_replay):
        assert for_strategy == strategy
        asked.append((as_of, is_replay))
        return findings({"overconfidence": 0.2, "single_signal_fixation": 0.1})

    evaluation = critique_evaluate(second, horizon_runs=5, findings_at=recomputed)
    assert asked == [(second.as_of + dt.timedelta(days=5), False)]
    assert {item.verdict for item in evaluation.impact.detectors} == {"improved"}
    assert evaluation.impact.score == 1.0
    assert "recomputed as of" in evaluation.impact.detectors[0].source


def test_the_last_critique_with_no_later_runs_has_no_impact_yet(db):
    strategy = strategy_named()
    runs_for(strategy, 12)
    critique = critique_for(strategy, run_count=12, scores={"overconfidence": 0.7})
    evaluation = critique_evaluate(critique, findings_at=_never)
    assert evaluation.impact.score is None
    assert evaluation.impact.detectors[0].verdict == "no later data"


def test_a_failed_critique_is_listed_but_not_scored(db):
    strategy = strategy_named()
    critique_for(strategy, status="failed", error="the critic timed out")
    (evaluation,) = strategy_evaluate(strategy, is_replay=False, findings_at=_never)
    assert evaluation.quality.score is None and evaluation.impact.score is None
    assert evaluation.notes == ("not evaluated: failed",)


def test_the_command_prints_both_scores_per_critique(trajectory):
    out = StringIO()
    call_command("critique_eval", "--strategy", "Momentum", "--runs", "10", stdout=out)
    text = out.getvalue()
    assert "Momentum: 3 live critique(s), impact over 10 runs" in text
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("#"))
    assert "quality" in header and "impact" in header
    first = next(line for line in lines if line.startswith("1 "))
    assert "67%" in first and "run 99" in first and "overconfidence 0.70→0.55 improved" in first
    assert "mean quality" in text


def test_the_command_reads_replay_critiques_apart(trajectory):
    out = StringIO()
    call_command("critique_eval", "--strategy", "Momentum", "--replay", stdout=out)
    assert "no history replay critique to evaluate" in out.getvalue()


def test_the_command_refuses_an_unknown_strategy(db):
    with pytest.raises(CommandError, match="no strategy named 'Nope'"):
        call_command("critique_eval", "--strategy", "Nope")


def _never(*_args):
    raise AssertionError("the detectors were recomputed though a later critique was in the window")
