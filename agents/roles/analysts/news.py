"""The news analyst: how bullish or bearish the recent headlines are for the stock, by event class.

Headlines are third-party text: the prompt fences them, and the offline rules weigh each one only
through the numbers code computed for it (class, sentiment, recency, scope) and cite it by its
number (h1, h2, …), never by its words. Flagged headlines (ones carrying instructions for a model)
reach no request at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agents.domain.llm import ModelRequest
from agents.roles._base import (
    Evidence,
    base_evidence,
    build_request,
    clamp,
    fenced,
    fmt,
    header,
    lean,
    pairs,
    signed,
)
from agents.roles.analysts.note import (
    AnalystNote,
    Factor,
    Playbook,
    abstain,
    blend,
    cite_playbook,
    empty_note,
    macro_evidence,
    macro_section,
    offline_note,
    ranked,
    task_line,
)
from vocabulary.features import FeatureBundle

JOB = "You are the News Analyst. Rate how bullish or bearish the recent news is for the stock, by event class."
MAX_HEADLINES = 10


# --- the prompt ----------------------------------------------------------------------------------


def _news_evidence(bundle: FeatureBundle) -> dict[str, Any]:
    news = bundle.news.model_dump(mode="json")
    news["items"] = news["items"][:MAX_HEADLINES]
    # Flagged headlines carry instructions for a model: no request ever carries their text.
    news.pop("flagged_headlines", None)
    return news


def _headline_line(index: int, item: Mapping[str, Any]) -> str:
    return (
        f"h{index} class={item['event_class']} sentiment={signed(item['sentiment'])} "
        f"recency_weight={fmt(item['recency_weight'])} scope={item['scope']} duplicates={item['duplicates']} "
        f"published={str(item['published_at'])[:10]} source={item['source']} | {item['headline']}"
    )


def _news_section(news: Mapping[str, Any]) -> str:
    totals = {
        key: news[key] for key in ("half_life_days", "lookback_days", "net_sentiment", "raw_count", "unique_count")
    }
    numbered = list(enumerate(news["items"], start=1))
    feature_lines = [_headline_line(index, item) for index, item in numbered]
    raw_lines = [f"h{index}: {item['headline']}" for index, item in numbered]
    return (
        f"news features: {pairs(totals)}\n"
        f"by_class: {pairs(news['by_class'])}\n"
        "items (most recent first; headline after the bar):\n"
        f"{fenced(feature_lines)}\n"
        "raw headlines:\n"
        f"{fenced(raw_lines)}"
    )


def news_request(bundle: FeatureBundle, *, memory_block: str = "", playbook: Playbook = ()) -> ModelRequest:
    news = _news_evidence(bundle)
    macro = macro_evidence(bundle)
    evidence = {**base_evidence(bundle), "news": news, "macro": macro}
    sections = [
        header(bundle),
        _news_section(news),
        macro_section(macro),
        task_line("news", bundle.symbol, "Rate the news by event class; cite the headline (h1, h2, …) or feature."),
    ]
    return build_request(
        "news", JOB, bundle.symbol, AnalystNote, sections, evidence, memory_block=memory_block, playbook=playbook
    )


# --- code's abstention ---------------------------------------------------------------------------


def news_abstention(bundle: FeatureBundle) -> AnalystNote | None:
    """No headline in the window: abstain, saying how many flagged headlines were kept out."""
    if bundle.news.unique_count > 0:
        return None
    flagged = len(bundle.news.flagged_headlines)
    withheld = f" ({flagged} flagged headline(s) carrying instructions were kept out)" if flagged else ""
    return abstain(
        "news",
        bundle.symbol,
        f"Abstaining: no headline in the {bundle.news.lookback_days}-day window{withheld}.",
        [f"unique_count=0 over lookback_days={bundle.news.lookback_days}", f"flagged_headlines={flagged}"],
    )


# --- the offline rules ---------------------------------------------------------------------------

# Results and broker actions move a stock more than background macro news does.
CLASS_WEIGHTS: dict[str, float] = {
    "earnings": 1.5,
    "rating": 1.5,
    "guidance": 1.3,
    "regulatory": 1.3,
    "other": 1.0,
    "macro": 0.7,
}
MARKET_SCOPE_WEIGHT = 0.5
MAX_CITED_HEADLINES = 6


def _item_weight(item: Evidence) -> float:
    scope = MARKET_SCOPE_WEIGHT if item["scope"] == "market" else 1.0
    return item["recency_weight"] * scope * CLASS_WEIGHTS.get(item["event_class"], 1.0)


def _headline_citation(index: int, item: Evidence) -> str:
    # Cited by number, class and score, never by text: the words are the feed's, not evidence.
    return (
        f"h{index}: {item['event_class']}, sentiment {signed(item['sentiment'])}, "
        f"recency_weight {fmt(item['recency_weight'])}, {str(item['published_at'])[:10]}"
    )


def _class_factors(items: Sequence[Evidence]) -> list[Factor]:
    factors: list[Factor] = []
    for event_class in sorted({item["event_class"] for item in items}):
        members = [item for item in items if item["event_class"] == event_class]
        weight = sum(_item_weight(item) for item in members)
        if weight <= 0:
            continue
        score = sum(_item_weight(item) * item["sentiment"] for item in members) / weight
        point = (
            f"{event_class.capitalize()} news leans {lean(score)} "
            f"({len(members)} {'item' if len(members) == 1 else 'items'}, weighted {signed(round(score, 2))})"
        )
        factors.append(Factor(event_class, score, weight, point, ()))
    return factors


def _news_citations(news: Evidence) -> list[str]:
    """The totals, then the headlines that moved the score most (by weight × |sentiment|)."""
    counts = " ".join(f"{name}={count}" for name, count in sorted(news["by_class"].items()) if count)
    numbered = list(enumerate(news["items"], start=1))
    strongest = sorted(numbered, key=lambda pair: (-_item_weight(pair[1]) * abs(pair[1]["sentiment"]), pair[0]))
    headlines = [_headline_citation(index, item) for index, item in strongest[:MAX_CITED_HEADLINES]]
    return [_news_totals(news), f"by_class {counts}", *headlines]


def _news_totals(news: Evidence) -> str:
    return (
        f"net_sentiment={signed(news['net_sentiment'])} over {news['unique_count']} unique items "
        f"({news['raw_count']} raw)"
    )


def news_note(symbol: str, evidence: Evidence) -> AnalystNote:
    """Half the net sentiment, half the event-weighted score; more agreeing stories, more confidence."""
    news = evidence["news"]
    if not news["items"]:
        return empty_note("news", symbol, "No news in the lookback window.", [_news_totals(news)])
    classes = _class_factors(news["items"])
    if not classes:  # every recency weight has decayed to zero
        return empty_note("news", symbol, "The news in the window is too old to weigh.", [_news_totals(news)])
    net = news["net_sentiment"]
    event_weighted, agreement = blend(classes)
    stance = 0.5 * net + 0.5 * event_weighted
    # More unique stories that agree make a surer read; one headline is a thin one.
    depth = min(1.0, news["unique_count"] / 5)
    confidence = round(clamp(0.1 + 0.6 * depth * (0.4 + 0.6 * agreement), 0.1, 0.8), 2)
    order = ranked(classes)
    note = offline_note(
        "news",
        symbol,
        stance=stance,
        confidence=confidence,
        summary=f"News stance {signed(round(stance, 2))} ({lean(stance)}): {order[0].point}.",
        key_points=[*[factor.point for factor in order][:6], f"Recency-weighted {_news_totals(news)}"],
        subscores={"net_sentiment": net, "event_weighted": event_weighted} | {f.name: f.score for f in classes},
        evidence=_news_citations(news),
        time_horizon="days",
    )
    return cite_playbook(note, evidence)
