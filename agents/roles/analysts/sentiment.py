"""The sentiment analyst: the temperature of investor positioning (options, FII/DII flows).

Positioning only. News tone is the news analyst's vote; reading the same headlines again here
would put one signal family into calibration twice. No positioning feed is wired yet, so today
this analyst always abstains before any model is asked.
"""

from __future__ import annotations

from typing import Any

from agents.domain.llm import ModelRequest
from agents.roles._base import Evidence, base_evidence, build_request, fmt, header, pairs
from agents.roles.analysts.note import (
    AnalystNote,
    Playbook,
    abstain,
    empty_note,
    macro_citations,
    macro_evidence,
    macro_section,
    task_line,
)
from vocabulary.features import FeatureBundle

JOB = (
    "You are the Sentiment Analyst. Estimate the temperature of investor positioning from the "
    "positioning data you are given; no options or FII/DII flows are given unless listed, so do not "
    "invent them: lower your confidence instead. News tone is the News Analyst's vote, not yours."
)


# --- the prompt ----------------------------------------------------------------------------------


def _positioning(bundle: FeatureBundle) -> dict[str, Any]:
    """The sentiment block without news tone: that is the news analyst's vote, and handing it here
    again would let one signal family vote twice in calibration."""
    return {"positioning_feed_wired": bundle.sentiment.positioning_feed_wired}


def sentiment_request(bundle: FeatureBundle, *, memory_block: str = "", playbook: Playbook = ()) -> ModelRequest:
    sentiment = _positioning(bundle)
    macro = macro_evidence(bundle)
    evidence = {**base_evidence(bundle), "sentiment": sentiment, "macro": macro}
    sections = [
        header(bundle),
        f"positioning features: {pairs(sentiment)}",
        macro_section(macro),
        task_line("sentiment", bundle.symbol, "Read investor positioning only; do not re-count news tone."),
    ]
    return build_request(
        "sentiment", JOB, bundle.symbol, AnalystNote, sections, evidence, memory_block=memory_block, playbook=playbook
    )


# --- code's abstention ---------------------------------------------------------------------------


def sentiment_abstention(bundle: FeatureBundle) -> AnalystNote | None:
    """Without a positioning feed the sentiment analyst always abstains, news or no news.

    News tone is already the news analyst's vote. Re-reading the same headlines as "sentiment"
    would put one signal family into calibration twice: two agreeing votes where there is one
    piece of evidence, and a smaller haircut than the panel deserves."""
    if bundle.sentiment.positioning_feed_wired:
        return None
    return abstain(
        "sentiment",
        bundle.symbol,
        "Abstaining: no options or FII/DII positioning feed is wired. News tone is the news analyst's vote "
        "already; counting it here again would double one signal family in calibration.",
        ["positioning_feed_wired=false", f"news_items={bundle.sentiment.news_items} (the news analyst's vote)"],
    )


# --- the offline rules ---------------------------------------------------------------------------


def sentiment_note(symbol: str, evidence: Evidence) -> AnalystNote:
    """Positioning only. News tone is the news analyst's vote; reading it again here would count one
    signal family twice in calibration. The bundle carries no positioning figures yet, so this note
    stays neutral (and without a wired feed the analyst abstains before any model is asked)."""
    sentiment = evidence["sentiment"]
    wired = f"positioning_feed_wired={fmt(sentiment['positioning_feed_wired'])}"
    return empty_note(
        "sentiment",
        symbol,
        "No positioning figures to read; news tone is the news analyst's vote and is not re-counted.",
        [wired, *macro_citations(evidence.get("macro", []))],
    )
