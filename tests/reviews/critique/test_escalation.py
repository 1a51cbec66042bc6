"""Escalation across critiques: a finding flagged before and still present escalates and says since
when; a resolved one is acknowledged; a recurring one escalates from its first flag; the trajectory
reads the findings' scores."""

from __future__ import annotations

from reviews.domain.escalation import escalate, past_critique, trajectory
from tests.reviews.critique.critic_packs import DETECTORS, finding


def findings(**scores: float) -> list[dict]:
    """Seven findings; a detector given a score of 0.5 or more fired."""
    return [finding(key, fired=scores.get(key, 0.0) >= 0.5, score=scores.get(key, 0.0)) for key, _, _ in DETECTORS]


def by_detector(result) -> dict:
    return {escalation.detector: escalation for escalation in result.escalations}


def test_a_first_critique_has_only_new_findings_and_no_trajectory() -> None:
    result = escalate(findings(overconfidence=0.7), [])

    assert [(e.detector, e.status) for e in result.escalations] == [("overconfidence", "new")]
    assert result.trajectory == "first"
    assert result.minimum_severity == "advisory"


def test_escalation_across_three_critiques() -> None:
    first = findings(overconfidence=0.7, narrative_as_quant=0.6, paralysis_or_churn=0.55)
    second = findings(overconfidence=0.8, narrative_as_quant=0.1, paralysis_or_churn=0.6)
    third = findings(overconfidence=0.9, paralysis_or_churn=0.2, single_signal_fixation=0.6)
    earlier = [past_critique(1, first), past_critique(2, second)]

    result = by_detector(escalate(third, earlier))

    persisting = result["overconfidence"]
    assert persisting.status == "persisting" and persisting.escalates
    assert (persisting.first_flagged, persisting.reviews_ago, persisting.times_flagged) == (1, 2, 2)
    assert "first flagged 2 reviews ago and still unresolved" in persisting.text

    resolved = result["paralysis_or_churn"]
    assert resolved.status == "resolved" and not resolved.escalates
    assert "acknowledged" in resolved.text

    assert result["single_signal_fixation"].status == "new"
    assert "narrative_as_quant" not in result  # resolved at the second, quiet since: nothing to say
    assert escalate(third, earlier).minimum_severity == "directive"


def test_a_finding_that_comes_back_escalates_from_its_first_flag() -> None:
    earlier = [
        past_critique(4, findings(frozen_parameters=0.6)),
        past_critique(5, findings()),
    ]

    escalation = by_detector(escalate(findings(frozen_parameters=0.7), earlier))["frozen_parameters"]

    assert escalation.status == "recurring" and escalation.escalates
    assert (escalation.first_flagged, escalation.reviews_ago) == (4, 2)
    assert "back now" in escalation.text


def test_an_unbroken_run_counts_from_where_it_began() -> None:
    earlier = [
        past_critique(1, findings(overconfidence=0.6)),
        past_critique(2, findings()),
        past_critique(3, findings(overconfidence=0.6)),
    ]

    escalation = by_detector(escalate(findings(overconfidence=0.6), earlier))["overconfidence"]

    assert (escalation.status, escalation.first_flagged, escalation.reviews_ago) == ("persisting", 3, 1)
    assert "first flagged 1 review ago" in escalation.text
    assert escalation.times_flagged == 2


def test_the_trajectory_reads_the_mean_score_across_critiques() -> None:
    worse = escalate(findings(overconfidence=0.9, narrative_as_quant=0.9), [past_critique(1, findings())])
    better = escalate(findings(), [past_critique(1, findings(overconfidence=0.9, narrative_as_quant=0.9))])
    same = escalate(findings(overconfidence=0.6), [past_critique(1, findings(overconfidence=0.7))])

    assert (worse.trajectory, better.trajectory, same.trajectory) == ("deteriorating", "improving", "stagnating")
    assert worse.burdens == (0.0, round(1.8 / 7, 4))
    assert trajectory([0.5]) == "first"


def test_escalation_figures_are_offered_to_the_grounding_check() -> None:
    earlier = [past_critique(1, findings(overconfidence=0.6)), past_critique(2, findings(overconfidence=0.6))]

    figures = escalate(findings(overconfidence=0.6), earlier).figures()

    assert figures["escalation.overconfidence.reviews_ago"] == 2
    assert figures["escalation.overconfidence.first_flagged"] == 1
