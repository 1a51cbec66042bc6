"""The offline model's debate reads as prose a person can scan: each case is a claim, its two or three
strongest pieces of evidence in words with their figures, and its risk, every figure taken from the
notes; the manager says its verdict in its own words and never repeats a case's sentences."""

from __future__ import annotations

import re

import pytest

from agents.roles import BearCase, BullCase, DebateResult, anchors_from_bundle, rebut_cases
from agents.roles.manager import manager_request
from agents.roles.researchers import bear_request, bull_request
from tests.agents.roles.builders import (
    BAD_NEWS,
    BEARISH,
    BULLISH,
    FORGED,
    FUNDAMENTALS,
    GOOD_NEWS,
    FakeClient,
    ask,
    choose,
    forged_bundle,
    make_bundle,
    offline_notes,
)

BUNDLES = {
    "mixed": lambda: make_bundle(BULLISH, items=BAD_NEWS),
    "bullish": lambda: make_bundle(BULLISH, items=GOOD_NEWS, fundamentals=FUNDAMENTALS),
    "bearish": lambda: make_bundle(BEARISH, items=BAD_NEWS, expected_move_pct=-2.0),
}
NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?")
SENTENCE = re.compile(r"(?<=[.!?])\s")


def _debate(name: str) -> tuple[list, BullCase, BearCase, DebateResult]:
    bundle = BUNDLES[name]()
    notes = offline_notes(bundle)
    bull, bear = ask(bull_request(notes, bundle)), ask(bear_request(notes, bundle))
    assert isinstance(bull, BullCase) and isinstance(bear, BearCase)
    verdict = ask(manager_request(notes, bull, bear, anchors=anchors_from_bundle(bundle)))
    assert isinstance(verdict, DebateResult)
    return notes, bull, bear, verdict


def _prose(text: str) -> str:
    return text.split(" Playbook: ")[0]


def _figures_in_notes(notes) -> set[float]:
    figures: set[float] = set()
    for note in notes:
        figures |= {round(note.stance, 2), round(note.confidence, 2)}
        for text in (note.summary, *note.key_points, *note.evidence):
            figures |= {round(float(n), 2) for n in NUMBER.findall(text)}
    return figures


@pytest.mark.parametrize("name", sorted(BUNDLES))
def test_each_case_is_a_claim_its_evidence_and_its_risk_in_a_few_short_sentences(name: str) -> None:
    _, bull, bear, _ = _debate(name)
    for case, direction in ((bull, "LONG"), (bear, "SHORT")):
        sentences = SENTENCE.split(_prose(case.argument))
        assert 3 <= len(sentences) <= 4, sentences
        assert sentences[0].startswith(f"{direction} RELIANCE: ")
        assert sentences[1].startswith(("The evidence: ", "The least opposed reading is "))
        assert sentences[-1].startswith("The risk: ")
        # In words: no comparison signs, and no chain of notes quoted one after another.
        assert " > " not in case.argument and " < " not in case.argument
        assert "stance +" not in case.argument.replace("(stance +", "") and "Against the" not in case.argument


def test_a_case_names_at_most_three_pieces_of_evidence_strongest_first() -> None:
    notes, _, bear, _ = _debate("bearish")
    evidence = SENTENCE.split(_prose(bear.argument))[1]

    pieces = evidence.removeprefix("The evidence: ").rstrip(".").split("; ")
    assert len(pieces) == 3
    technical = next(note for note in notes if note.role == "technical")
    # The strongest note (technical) leads; the other bearish note's lead point comes before technical's second.
    assert pieces[0] == "trend down: close 650.00 below SMA20 660.00" and technical.key_points[0].startswith(
        "Trend down"
    )
    assert pieces[1].startswith("and regulatory news") or pieces[1].startswith("regulatory news")


@pytest.mark.parametrize("name", sorted(BUNDLES))
def test_every_figure_in_the_prose_comes_from_the_notes(name: str) -> None:
    notes, bull, bear, verdict = _debate(name)
    known = _figures_in_notes(notes) | {float(len(notes)), *range(0, len(notes) + 1)}
    for text in (_prose(bull.argument), _prose(bear.argument)):
        assert {round(float(n), 2) for n in NUMBER.findall(text)} - known == set(), text
    mean = sum(n.confidence * n.stance for n in notes) / sum(n.confidence for n in notes)
    assert f"{mean:+.2f}" in verdict.manager_rationale  # the verdict's mean stance, computed from the notes


def test_the_prose_follows_the_inputs_not_a_template() -> None:
    _, bull_up, _, _ = _debate("bullish")
    _, _, bear_down, _ = _debate("bearish")

    assert "close 750.00 above SMA20 740.00" in bull_up.argument
    assert "close 650.00 below SMA20 660.00" in bear_down.argument


@pytest.mark.parametrize("name", sorted(BUNDLES))
def test_the_manager_says_its_verdict_in_its_own_words(name: str) -> None:
    _, bull, bear, verdict = _debate(name)
    rationale = _prose(verdict.manager_rationale)
    first = SENTENCE.split(rationale)[0]

    assert first.startswith(f"{verdict.winner} RELIANCE: ") and "mean stance" in first
    for case in (bull, bear):
        for sentence in SENTENCE.split(_prose(case.argument)):
            assert sentence not in rationale, sentence
    assert len(rationale) < 400  # a verdict, not a transcript


def test_a_rebutted_case_stays_prose_and_answers_by_the_weight_of_the_readings() -> None:
    bundle = BUNDLES["mixed"]()
    notes = offline_notes(bundle)
    bull, bear = ask(bull_request(notes, bundle)), ask(bear_request(notes, bundle))
    rebutted_bull, rebutted_bear = rebut_cases(choose(FakeClient()), bull, bear)  # type: ignore[arg-type]

    assert rebutted_bull.argument.startswith(_prose(bull.argument))
    assert (
        "our technical reading (stance +0.68, confidence 0.85) outweighs it, 0.58 against 0.20"
        in rebutted_bull.argument
    )
    assert "does not outweigh it, 0.20 against 0.58" in rebutted_bear.argument
    assert not re.search(r"'[^']{12,}'", rebutted_bull.argument)  # no quoted notes


def test_a_forged_headline_never_reaches_the_prose() -> None:
    bundle = forged_bundle()
    notes = offline_notes(bundle)
    bull, bear = ask(bull_request(notes, bundle)), ask(bear_request(notes, bundle))
    verdict = ask(manager_request(notes, bull, bear))  # type: ignore[arg-type]

    for text in (bull.argument, bear.argument, verdict.manager_rationale):  # type: ignore[attr-defined]
        assert "approve every trade" not in text and FORGED[:20] not in text
