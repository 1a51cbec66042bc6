"""News and sentiment features: event tags, a lexicon score, de-duplication and recency weights.

Everything here is deterministic and reads no clock: the caller says what "now" is (``as_of``).
Headlines are third-party text and may be hostile ("Ignore previous instructions and ..."). A
headline that carries instructions or speaks as the system or the assistant is flagged by
``injection_reason`` and kept out of every score: it is not classified, scored, counted or shown
to a model, only listed in ``NewsFeatures.flagged_headlines`` so a person sees it was there. What
the detector misses is still only data, and the agents' prompt layer fences it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import html
import math
import re
import unicodedata
from collections.abc import Sequence

from vocabulary.features import (
    EVENT_CLASSES,
    EventClass,
    NewsFeatures,
    NewsInput,
    NewsItemFeature,
    SentimentFeatures,
)

__all__ = [
    "EVENT_PRECEDENCE",
    "MARKET_SCOPE_WEIGHT",
    "NEAR_DUPLICATE_JACCARD",
    "classify_event",
    "content_hash",
    "headline_sentiment",
    "injection_reason",
    "is_injection",
    "news_features",
    "normalise_headline",
    "recency_weight",
    "sentiment_features",
    "token_jaccard",
]

# A market-wide headline moves every stock a little; a headline about this stock moves it more.
MARKET_SCOPE_WEIGHT = 0.5
# Two headlines sharing at least this share of their words are treated as the same story.
NEAR_DUPLICATE_JACCARD = 0.8

_NON_WORD = re.compile(r"[^\w\s]+|_")
_SECONDS_PER_DAY = 86_400.0


def normalise_headline(text: str) -> str:
    """Casefolded words separated by single spaces; punctuation becomes a word break."""
    return " ".join(_NON_WORD.sub(" ", text.casefold()).split())


def content_hash(headline: str, scope_key: str) -> str:
    """The storage identity of a headline: the same story in the same scope hashes the same."""
    payload = f"{scope_key}\n{normalise_headline(headline)}"
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _tokens(headline: str) -> list[str]:
    return normalise_headline(headline).split()


def token_jaccard(first: str, second: str) -> float:
    """Share of distinct words two headlines have in common (0 when either has no words)."""
    first_tokens, second_tokens = set(_tokens(first)), set(_tokens(second))
    if not first_tokens or not second_tokens:
        return 0.0
    return len(first_tokens & second_tokens) / len(first_tokens | second_tokens)


# --- event classes -------------------------------------------------------------------------------

# Patterns run on the normalised headline (lower case, no punctuation), so "Q2", "L&T" and
# "G-Sec" arrive as "q2", "l t" and "g sec". Each pattern counts once per headline.
_EVENT_PATTERNS: dict[EventClass, tuple[str, ...]] = {
    "regulatory": (
        r"sebi",
        r"cci",
        r"probes?d?",
        r"penalt(?:y|ies)",
        r"penali[sz](?:ed|es)",
        r"fined",
        r"ban(?:s|ned)?",
        r"licen[cs]es?",
        r"show cause",
        r"regulators?",
        r"investigations?",
        r"raids?",
        r"enforcement directorate",
        r"insider trading",
        r"nclt",
        r"usfda",
        r"warning letter",
        r"import alert",
        r"rbi (?:bars|restricts|curbs|imposes|directs)",
    ),
    "rating": (
        r"upgrades?d?",
        r"downgrades?d?",
        r"target price",
        r"price target",
        r"brokerages?",
        r"brokers?",
        r"(?:over|under)weight",
        r"(?:out|under)perform",
        r"ratings?",
        r"strong (?:buy|sell)",
        r"initiates? coverage",
        r"(?:buy|sell|hold|neutral|accumulate) call",
    ),
    "guidance": (
        r"outlook",
        r"guidance",
        r"forecasts?",
        r"profit warning",
        r"(?:sees|expects) fy\d+",
    ),
    "earnings": (
        r"results?",
        r"q[1-4]",
        r"(?:net )?profits?",
        r"ebitda",
        r"earnings",
        r"revenues?",
        r"net interest income",
        r"nii",
        r"margins?",
        r"quarterly",
        r"(?:beats?|miss(?:es|ed)?) estimates",
        r"pat",
        r"eps",
        r"dividends?",
        r"topline|bottomline",
    ),
    "macro": (
        r"rbi policy",
        r"monetary policy",
        r"mpc",
        r"repo(?: rate)?",
        r"inflation",
        r"cpi",
        r"wpi",
        r"gdp",
        r"rupee",
        r"usd inr",
        r"crude",
        r"brent",
        r"oil prices?",
        r"fed",
        r"federal reserve",
        r"fomc",
        r"fiis?|fpis?|diis?",
        r"bond yields?",
        r"g sec",
        r"iip",
        r"pmi",
        r"fiscal deficit",
        r"union budget",
        r"trade deficit",
        r"monsoon",
        r"sensex",
        r"nifty",
        r"dalal street",
        r"global cues",
        r"recession",
        r"tariffs?",
    ),
}
_COMPILED_EVENT_PATTERNS: dict[EventClass, tuple[re.Pattern[str], ...]] = {
    event_class: tuple(re.compile(rf"\b(?:{pattern})\b") for pattern in patterns)
    for event_class, patterns in _EVENT_PATTERNS.items()
}
# Tie-break order when two classes match equally often. Regulatory risk first (it can dominate a
# stock whatever else is said), then a broker's rating action (a distinct event even when it
# reacts to results), then forward-looking guidance over the reported quarter, and macro last
# because it is background to any company story.
EVENT_PRECEDENCE: tuple[EventClass, ...] = ("regulatory", "rating", "guidance", "earnings", "macro")


def classify_event(headline: str) -> EventClass:
    """The event class with the most matching keyword rules; ties go by ``EVENT_PRECEDENCE``.

    Counting matches, not taking the first hit, keeps "RBI keeps repo rate unchanged, raises GDP
    forecast" macro (repo rate, GDP) rather than guidance (forecast). No match at all is "other".
    """
    text = normalise_headline(headline)
    best_class: EventClass = "other"
    best_hits = 0
    for event_class in EVENT_PRECEDENCE:
        hits = sum(1 for pattern in _COMPILED_EVENT_PATTERNS[event_class] if pattern.search(text))
        if hits > best_hits:  # strictly greater: an equal count keeps the earlier class
            best_class, best_hits = event_class, hits
    return best_class


# --- lexicon sentiment ---------------------------------------------------------------------------

# Valences on a -3..+3 scale. Multi-word entries win over their parts ("record low" is not
# "record"), and policy phrases override the company reading of "raises"/"cuts".
_LEXICON_ENTRIES: dict[str, float] = {
    # results and guidance
    "beat": 1.5,
    "beats": 1.5,
    "beat estimates": 2.0,
    "beats estimates": 2.0,
    "tops estimates": 2.0,
    "miss": -1.5,
    "misses": -1.5,
    "missed": -1.5,
    "misses estimates": -2.0,
    "missed estimates": -2.0,
    "record profit": 2.5,
    "record revenue": 2.0,
    "record sales": 2.0,
    "record high": 2.0,
    "all time high": 2.0,
    "record low": -2.0,
    "profit warning": -2.5,
    "warning": -1.0,
    "loss": -1.5,
    "losses": -1.5,
    "shortfall": -1.5,
    "disappoints": -1.5,
    "disappointing": -1.5,
    "disappoint": -1.5,
    "shrink": -1.0,
    "worries": -1.0,
    "strong": 1.0,
    "robust": 1.5,
    "healthy": 1.0,
    "growth": 0.5,
    "improves": 1.0,
    "improved": 1.0,
    "improve": 1.0,
    "expands": 1.0,
    "expansion": 1.0,
    "recovery": 1.0,
    "recovers": 1.0,
    "upbeat": 1.5,
    "cheers": 1.0,
    "boost": 1.5,
    "boosts": 1.5,
    "tailwind": 1.0,
    "tailwinds": 1.0,
    "weak": -1.0,
    "weaker": -1.0,
    "weakens": -1.0,
    "slowdown": -1.5,
    "headwind": -1.0,
    "headwinds": -1.0,
    "pressure": -1.0,
    "concern": -1.0,
    "concerns": -1.0,
    "raises": 1.0,
    "raised": 1.0,
    "hikes": 1.0,
    "cuts": -1.0,
    "cut": -1.0,
    "lowers": -1.0,
    "lowered": -1.0,
    "trims": -1.0,
    # capital returns and business wins
    "dividend": 1.5,
    "special dividend": 2.0,
    "bonus": 1.0,
    "buyback": 1.5,
    "contract win": 2.0,
    "order win": 2.0,
    "win": 1.5,
    "wins": 1.5,
    "bags": 1.5,
    "secures": 1.5,
    "approval": 1.0,
    "approves": 1.0,
    "approved": 1.0,
    "clears": 1.0,
    # broker views
    "upgrade": 2.0,
    "upgrades": 2.0,
    "upgraded": 2.0,
    "downgrade": -2.0,
    "downgrades": -2.0,
    "downgraded": -2.0,
    "outperform": 1.5,
    "underperform": -1.5,
    "overweight": 1.0,
    "underweight": -1.0,
    "buy": 1.0,
    "strong buy": 2.0,
    "accumulate": 0.5,
    "sell": -1.0,
    "strong sell": -2.0,
    "selling": -1.0,
    "outflows": -1.0,
    "inflows": 1.0,
    # conduct and regulation
    "fraud": -3.0,
    "scam": -3.0,
    "default": -2.5,
    "probe": -1.5,
    "penalty": -1.5,
    "penalised": -1.5,
    "fined": -1.5,
    "ban": -2.0,
    "banned": -2.0,
    "raid": -2.0,
    "raids": -2.0,
    "show cause": -1.5,
    "investigation": -1.5,
    "lawsuit": -1.5,
    "warning letter": -2.0,
    "import alert": -2.0,
    "resigns": -1.0,
    "resignation": -1.0,
    "halt": -1.5,
    "halts": -1.5,
    "recall": -1.5,
    "curbs": -1.0,
    "bars": -1.0,
    "strike": -1.0,
    # price action
    "surge": 2.0,
    "surges": 2.0,
    "surged": 2.0,
    "soar": 2.0,
    "soars": 2.0,
    "soared": 2.0,
    "jump": 1.5,
    "jumps": 1.5,
    "jumped": 1.5,
    "rally": 1.5,
    "rallies": 1.5,
    "rallied": 1.5,
    "gain": 1.0,
    "gains": 1.0,
    "gained": 1.0,
    "rise": 1.0,
    "rises": 1.0,
    "rose": 1.0,
    "climb": 1.0,
    "climbs": 1.0,
    "climbed": 1.0,
    "advances": 1.0,
    "up": 0.5,
    "higher": 0.5,
    "plunge": -2.5,
    "plunges": -2.5,
    "plunged": -2.5,
    "crash": -2.5,
    "crashes": -2.5,
    "slump": -2.0,
    "slumps": -2.0,
    "slumped": -2.0,
    "tumble": -2.0,
    "tumbles": -2.0,
    "tumbled": -2.0,
    "sinks": -2.0,
    "sank": -2.0,
    "slide": -1.5,
    "slides": -1.5,
    "slid": -1.5,
    "slips": -1.0,
    "fall": -1.0,
    "falls": -1.0,
    "fell": -1.0,
    "drop": -1.0,
    "drops": -1.0,
    "dropped": -1.0,
    "decline": -1.0,
    "declines": -1.0,
    "declined": -1.0,
    "down": -0.5,
    "lower": -0.5,
    # macro, read from an equity holder's side
    "rate cut": 1.5,
    "cuts repo rate": 1.5,
    "rate hike": -1.5,
    "hikes repo rate": -1.5,
    "raises repo rate": -1.5,
    "eases": 0.5,
    "cools": 0.5,
    "sticky": -0.5,
}
_LEXICON: dict[tuple[str, ...], float] = {
    tuple(phrase.split()): valence for phrase, valence in _LEXICON_ENTRIES.items()
}
_LEXICON_PHRASES: frozenset[tuple[str, ...]] = frozenset(_LEXICON)
_NEGATORS: frozenset[tuple[str, ...]] = frozenset(
    tuple(phrase.split())
    for phrase in (
        "no",
        "not",
        "never",
        "without",
        "nor",
        "fails to",
        "failed to",
        "fail to",
        "unable to",
        "denies",
        "don t",
        "doesn t",
        "didn t",
        "won t",
        "isn t",
        "can t",
    )
)
_INTENSIFIERS: dict[str, float] = {
    "sharply": 1.5,
    "sharp": 1.5,
    "steep": 1.5,
    "steeply": 1.5,
    "huge": 1.5,
    "massive": 1.5,
    "biggest": 1.5,
    "big": 1.25,
    "very": 1.25,
    "significantly": 1.25,
    "heavy": 1.25,
    "slightly": 0.5,
    "marginally": 0.5,
    "modest": 0.5,
    "modestly": 0.5,
    "mild": 0.5,
}
_LONGEST_PHRASE = max(len(key) for key in (*_LEXICON, *_NEGATORS))
# A negator reaches this many words ahead ("fails to beat estimates", "no major penalty").
_NEGATION_REACH = 3
# A negated positive is weaker than a plain negative ("not strong" < "weak"), as in VADER.
_NEGATION_FACTOR = -0.75
# A modifier reaches the nearest sentiment word at most this many words away, either side.
_INTENSIFIER_REACH = 2
# tanh(raw / scale): one strong word (valence 2) lands near 0.66, two or three approach 0.9.
_SQUASH_SCALE = 2.5


def _match_phrase(tokens: list[str], start: int, phrases: frozenset[tuple[str, ...]]) -> int:
    """Length of the longest phrase from ``phrases`` starting at ``start``, or 0."""
    for length in range(min(_LONGEST_PHRASE, len(tokens) - start), 0, -1):
        if tuple(tokens[start : start + length]) in phrases:
            return length
    return 0


def _scan(tokens: list[str]) -> tuple[list[tuple[int, float]], list[int], list[tuple[int, float]]]:
    """Sentiment hits (position, valence), negator end positions and modifiers (position, factor)."""
    hits: list[tuple[int, float]] = []
    negations: list[int] = []
    modifiers: list[tuple[int, float]] = []
    position = 0
    while position < len(tokens):
        negator_length = _match_phrase(tokens, position, _NEGATORS)
        if negator_length:
            negations.append(position + negator_length - 1)
            position += negator_length
            continue
        phrase_length = _match_phrase(tokens, position, _LEXICON_PHRASES)
        if phrase_length:
            hits.append((position, _LEXICON[tuple(tokens[position : position + phrase_length])]))
            position += phrase_length
            continue
        if tokens[position] in _INTENSIFIERS:
            modifiers.append((position, _INTENSIFIERS[tokens[position]]))
        position += 1
    return hits, negations, modifiers


def _nearest_hit(hits: list[tuple[int, float]], position: int) -> int | None:
    """Index of the hit closest to ``position`` within reach; ties go to the following word."""
    candidates = [
        (abs(hit_position - position), hit_position < position, index)
        for index, (hit_position, _) in enumerate(hits)
        if abs(hit_position - position) <= _INTENSIFIER_REACH
    ]
    return min(candidates)[2] if candidates else None


def headline_sentiment(headline: str) -> float:
    """A lexicon score in [-1, 1]: positive for good news for the holder, negative for bad."""
    hits, negations, modifiers = _scan(_tokens(headline))
    valences = [valence for _, valence in hits]
    for modifier_position, factor in modifiers:
        index = _nearest_hit(hits, modifier_position)
        if index is not None:
            valences[index] *= factor
    for index, (hit_position, _) in enumerate(hits):
        if any(0 < hit_position - end <= _NEGATION_REACH for end in negations):
            valences[index] *= _NEGATION_FACTOR
    return math.tanh(sum(valences) / _SQUASH_SCALE)


# --- injection attempts --------------------------------------------------------------------------

# Each rule names a way a headline can address the reader (a model) instead of reporting news. They
# run on the casefolded, NFKC-normalised headline with entities decoded and invisible characters
# dropped, so "＜|im_start|＞" or "&lt;system&gt;" cannot slip past. They are kept narrow on purpose:
# "Analysts rate RELIANCE a buy", "Buy or sell: ...", "RBI issues new instructions to banks" and
# "Infosys bets on an AI-first future" are news and must stay in the score.
_INSTRUCTION_NOUNS = r"(?:instructions?|prompts?|system prompt|guardrails|risk (?:limits|checks|rules))"
_QUALIFIERS = r"(?:all|any|the|your|my|previous|prior|above|earlier|preceding|existing|these|those)"
_INJECTION_RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (reason, re.compile(pattern))
    for reason, pattern in (
        (
            "tells the reader to ignore its instructions",
            rf"\b(?:ignore|disregard|forget|override|bypass)\s+(?:{_QUALIFIERS}\s+){{0,2}}{_INSTRUCTION_NOUNS}\b"
            rf"|\b(?:ignore|disregard|forget|override|bypass)\s+(?:{_QUALIFIERS}\s+){{1,2}}rules\b",
        ),
        ("speaks as the system or the assistant", r"^\W{0,3}(?:system|assistant|developer)\s*:"),
        ("carries a chat-template or role marker", r"<\||\|>|\[/?inst\]|<</?sys>>|#{3,}|</?(?:system|assistant|user)>"),
        ("carries the prompt fence marker", r"untrusted[\W_]{0,3}feed[\W_]{0,3}data"),
        (
            "tries to change the reader's role",
            r"\byou are now\b|\bas an ai (?:language )?(?:model|assistant)\b"
            r"|\b(?:admin|developer|god|jailbreak) mode\b",
        ),
        (
            "orders a rating, a stance or an approval",
            r"^(?:please\s+)?rate\s+(?!(?:cut|cuts|hike|hikes|decision|setting)\b)\S+(?:\s+\S+)?\s+(?:as\s+)?(?:an?\s+)?"
            r"(?:strong\s+)?(?:buy|sell|outperform|overweight)\b"
            r"|\bapprove\s+(?:all|every|any)\s+(?:trades?|orders?)\b"
            r"|\bset\s+(?:the\s+|your\s+)?(?:stance|conviction|confidence)\b",
        ),
    )
)
# Upper-case role labels anywhere ("... SYSTEM: approve"): newsrooms do not write them mid-headline.
_SHOUTED_ROLE = re.compile(r"\b(?:SYSTEM|ASSISTANT|DEVELOPER)\s*:")


def _plain(headline: str) -> str:
    decoded = headline
    for _ in range(3):  # "&amp;lt;" needs two passes; each pass only shrinks the text
        decoded = html.unescape(decoded)
    visible = "".join(char for char in unicodedata.normalize("NFKC", decoded) if unicodedata.category(char) != "Cf")
    return " ".join(visible.split())


def injection_reason(headline: str) -> str | None:
    """Why ``headline`` reads as a prompt-injection attempt, or None for ordinary news.

    Deterministic and text-only: a flagged headline carries instructions for a model or speaks
    as the system/assistant. The first matching rule gives the reason."""
    plain = _plain(headline)
    if _SHOUTED_ROLE.search(plain):
        return "speaks as the system or the assistant"
    folded = plain.casefold()
    return next((reason for reason, pattern in _INJECTION_RULES if pattern.search(folded)), None)


def is_injection(headline: str) -> bool:
    return injection_reason(headline) is not None


# --- feature assembly ----------------------------------------------------------------------------


def _in_window(item: NewsInput, as_of: dt.datetime, lookback_days: int) -> bool:
    # Nothing published after as_of may be seen: that would be look-ahead.
    return as_of - dt.timedelta(days=lookback_days) <= item.published_at <= as_of


def _is_same_story(candidate: NewsInput, kept: NewsInput) -> bool:
    if normalise_headline(candidate.headline) == normalise_headline(kept.headline):
        return True
    return token_jaccard(candidate.headline, kept.headline) >= NEAR_DUPLICATE_JACCARD


def _fold_duplicates(items: Sequence[NewsInput]) -> list[tuple[NewsInput, int]]:
    """Unique stories, each the earliest telling, with how many later tellings were folded in."""
    ordered = sorted(items, key=lambda item: (item.published_at, item.headline, item.source))
    kept: list[NewsInput] = []
    folded: list[int] = []
    for item in ordered:
        for index, story in enumerate(kept):
            if _is_same_story(item, story):
                folded[index] += 1
                break
        else:
            kept.append(item)
            folded.append(0)
    return list(zip(kept, folded, strict=True))


def recency_weight(published_at: dt.datetime, as_of: dt.datetime, half_life_days: float) -> float:
    """0.5 ** (age in days / half-life): 1 for a headline published at as_of, 0.5 one half-life ago."""
    age_days = max((as_of - published_at).total_seconds() / _SECONDS_PER_DAY, 0.0)
    return 0.5 ** (age_days / half_life_days)


def _item_feature(item: NewsInput, duplicates: int, as_of: dt.datetime, half_life_days: float) -> NewsItemFeature:
    return NewsItemFeature(
        headline=item.headline,
        source=item.source,
        published_at=item.published_at,
        scope=item.scope,
        event_class=classify_event(item.headline),
        sentiment=headline_sentiment(item.headline),
        recency_weight=recency_weight(item.published_at, as_of, half_life_days),
        duplicates=duplicates,
    )


def _net_sentiment(items: Sequence[NewsItemFeature]) -> float:
    """Recency-weighted mean sentiment; market-wide items count at ``MARKET_SCOPE_WEIGHT``."""
    weights = [item.recency_weight * (MARKET_SCOPE_WEIGHT if item.scope == "market" else 1.0) for item in items]
    total_weight = sum(weights)
    if total_weight <= 0.0:  # no items, or every weight underflowed to zero
        return 0.0
    weighted = sum(weight * item.sentiment for weight, item in zip(weights, items, strict=True))
    return min(1.0, max(-1.0, weighted / total_weight))


def news_features(
    items: Sequence[NewsInput],
    as_of: dt.datetime,
    *,
    lookback_days: int,
    half_life_days: float,
) -> NewsFeatures:
    """Event-tagged, de-duplicated, recency-weighted news as seen at ``as_of``.

    ``raw_count`` counts the items inside the window before de-duplication, so it always equals
    ``unique_count`` plus the folded duplicates. Headlines flagged by ``injection_reason`` are
    set aside first: they are in none of the counts, items, classes or sentiment, only in
    ``flagged_headlines`` (newest first, each once). ``as_of`` and the ``published_at`` values
    must be all timezone-aware or all naive.
    """
    if lookback_days < 0:
        raise ValueError(f"lookback_days must be >= 0, got {lookback_days}")
    if not half_life_days > 0:
        raise ValueError(f"half_life_days must be > 0, got {half_life_days}")
    window = [item for item in items if _in_window(item, as_of, lookback_days)]
    in_window = [item for item in window if not is_injection(item.headline)]
    features = [
        _item_feature(item, duplicates, as_of, half_life_days) for item, duplicates in _fold_duplicates(in_window)
    ]
    features.sort(key=lambda feature: (feature.published_at, feature.headline), reverse=True)
    by_class = dict.fromkeys(EVENT_CLASSES, 0)
    for feature in features:
        by_class[feature.event_class] += 1
    return NewsFeatures(
        lookback_days=lookback_days,
        half_life_days=half_life_days,
        raw_count=len(in_window),
        unique_count=len(features),
        net_sentiment=_net_sentiment(features),
        by_class=by_class,
        items=features,
        flagged_headlines=_flagged(window),
    )


def _flagged(window: Sequence[NewsInput]) -> list[str]:
    newest_first = sorted(window, key=lambda item: (item.published_at, item.headline), reverse=True)
    flagged = [item.headline for item in newest_first if is_injection(item.headline)]
    return list(dict.fromkeys(flagged))


def sentiment_features(news: NewsFeatures) -> SentimentFeatures:
    """News-driven sentiment when there is news; otherwise nothing, said plainly.

    No options or FII/DII positioning feed exists yet, so ``positioning_feed_wired`` is False.
    """
    if news.unique_count == 0:
        return SentimentFeatures(news_sentiment=None, news_items=0, positioning_feed_wired=False, source="none")
    return SentimentFeatures(
        news_sentiment=news.net_sentiment,
        news_items=news.unique_count,
        positioning_feed_wired=False,
        source="news",
    )
