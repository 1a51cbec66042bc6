"""The agent stages the orchestrator calls: analysts, bull/bear cases, rebuttals, the judge, the trader.

Each stage builds its requests (``prompts``), asks through ``structured_call`` with the ticker and
fence guards as validation, and returns pydantic outputs or raises ``StageFailed``. The calls of
one stage run in threads: they wait on the network, not on the CPU. Calibration, price anchoring
and the thesis validator are the orchestrator's (``trading.domain``); nothing here trusts a number
a model restated.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TypeVar

from pydantic import BaseModel

from agents.domain.hygiene import fence_guard, ticker_guard
from agents.domain.llm import (
    Budget,
    CallRecord,
    ModelChoice,
    ModelError,
    NullRecorder,
    Recorder,
    RetryPolicy,
    StageFailed,
    structured_call,
)
from agents.domain.offline import OFFLINE_MODEL, reviewer_draft
from agents.domain.prompts import (
    ANALYST_ROLES,
    analyst_request,
    bear_rebuttal_request,
    bear_request,
    bull_rebuttal_request,
    bull_request,
    manager_request,
    reviewer_request,
    self_critique_request,
    trader_request,
)
from agents.domain.schemas import (
    AnalystNote,
    BearCase,
    BullCase,
    DebateResult,
    Direction,
    ModelRequest,
    Outcome,
    SignalEvolution,
    TradeReview,
    TradeReviewDraft,
    TradeThesis,
)
from vocabulary.features import FeatureBundle

__all__ = [
    "ABSTAIN_CONFIDENCE",
    "ABSTAIN_MODEL",
    "CONFIDENCE_FLOOR",
    "DEEP_CONVICTION",
    "QUORUM",
    "AnalystResult",
    "ReviewFacts",
    "abstention",
    "assemble_review",
    "build_cases",
    "judge",
    "judged_cases",
    "memory_tags",
    "memory_text",
    "propose_thesis",
    "quorum_met",
    "rebut_cases",
    "review_trade",
    "run_analysts",
    "successful_notes",
]

T = TypeVar("T", bound=BaseModel)
First = TypeVar("First")
Second = TypeVar("Second")
AnalystResult = AnalystNote | StageFailed

CONFIDENCE_FLOOR = 0.40
ABSTAIN_CONFIDENCE = 0.15
ABSTAIN_MODEL = "deterministic-abstain"
DEEP_CONVICTION = 0.75
QUORUM = 3
OFFLINE_PROVIDER = "offline"
MODEL_USED_CHARS = 200
MAX_POINT_CHARS = 400  # the schema's limit on one point
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


class _ReplyModel:
    """Forwards every record and remembers which model gave the accepted reply (for ``model_used``)."""

    def __init__(self, inner: Recorder) -> None:
        self.inner = inner
        self.model = ""

    def record(self, call: CallRecord) -> None:
        self.inner.record(call)
        if call.ok:
            self.model = call.model


def _guard(symbol: str, *, role: str | None = None, other_symbols: Collection[str] = ()) -> Callable[[BaseModel], None]:
    """Validation for ``structured_call``: right instrument, no fence markers, and the asked role."""

    def check(output: BaseModel) -> None:
        ticker_guard(symbol, output, other_symbols=other_symbols, check_text=bool(other_symbols))
        fence_guard(output)
        if role is not None and getattr(output, "role", role) != role:
            raise ValueError(f"role is {getattr(output, 'role', None)!r} but this call asked the {role} analyst")

    return check


def _ask(
    choice: ModelChoice,
    request: ModelRequest,
    schema: type[T],
    *,
    recorder: Recorder,
    budget: Budget | None,
    retry: RetryPolicy | None,
    validate: Callable[[BaseModel], None],
) -> tuple[T, str]:
    """One structured call; returns the output and the model that answered. Never leaks a ModelError."""
    seen = _ReplyModel(recorder)
    try:
        output = structured_call(choice, request, schema, recorder=seen, budget=budget, retry=retry, validate=validate)
    except ModelError as error:  # the budget ran out: structured_call lets that one through
        raise StageFailed(f"{request.role}: {type(error).__name__}: {error}") from error
    return output, seen.model


def _pair(first: Callable[[], First], second: Callable[[], Second]) -> tuple[First, Second]:
    with ThreadPoolExecutor(max_workers=2) as pool:
        first_future, second_future = pool.submit(first), pool.submit(second)
        return first_future.result(), second_future.result()


# --- stage 2: analysts ---------------------------------------------------------------------------


# The indicators the technical analyst cannot read a stance without: trend (SMA20), momentum (RSI 14,
# the MACD histogram) and volatility (ATR 14). All four exist from the 34th bar (MACD's 26 + 9 - 1
# warm-up is the longest), so a listing of a few weeks already gets a technical view; SMA50/200 are
# not required, or the analyst would be silent for the first ten months. With any of them missing,
# a stance would be one or two readings plus the forecast, which is not a technical view.
TECHNICAL_MINIMUM: tuple[str, ...] = ("sma_20", "rsi_14", "macd_hist", "atr_14")


def abstention(role: str, bundle: FeatureBundle) -> AnalystNote | None:
    """The deterministic note for an analyst with nothing real to read, or None when it has data.

    ``abstained`` is decided here and only here: a model is asked only when this returns None, and
    whatever it then says about abstaining is overwritten (``_model_vote``). An analyst with
    nothing to read abstains rather than voting a stance of 0, because calibration counts votes."""
    reader = _ABSTENTIONS.get(role)
    return reader(bundle) if reader is not None else None


def _news_abstention(bundle: FeatureBundle) -> AnalystNote | None:
    if bundle.news.unique_count > 0:
        return None
    flagged = len(bundle.news.flagged_headlines)
    withheld = f" ({flagged} flagged headline(s) carrying instructions were kept out)" if flagged else ""
    return _abstain(
        "news",
        bundle.symbol,
        f"Abstaining: no headline in the {bundle.news.lookback_days}-day window{withheld}.",
        [f"unique_count=0 over lookback_days={bundle.news.lookback_days}", f"flagged_headlines={flagged}"],
    )


def _sentiment_abstention(bundle: FeatureBundle) -> AnalystNote | None:
    """Without a positioning feed the sentiment analyst always abstains, news or no news.

    News tone is already the news analyst's vote. Re-reading the same headlines as "sentiment"
    would put one signal family into calibration twice: two agreeing votes where there is one
    piece of evidence, and a smaller haircut than the panel deserves."""
    if bundle.sentiment.positioning_feed_wired:
        return None
    return _abstain(
        "sentiment",
        bundle.symbol,
        "Abstaining: no options or FII/DII positioning feed is wired. News tone is the news analyst's vote "
        "already; counting it here again would double one signal family in calibration.",
        ["positioning_feed_wired=false", f"news_items={bundle.sentiment.news_items} (the news analyst's vote)"],
    )


def _technical_abstention(bundle: FeatureBundle) -> AnalystNote | None:
    technical = bundle.technical
    missing = [name for name in TECHNICAL_MINIMUM if getattr(technical, name) is None]
    if not bundle.fallback and not missing:
        return None
    if bundle.fallback:
        why = "the bundle is a fallback rebuilt from recent closes, so no indicator is trustworthy"
    else:
        why = f"{technical.bars_used} bars are too few for {', '.join(missing)}"
    return _abstain(
        "technical",
        bundle.symbol,
        f"Abstaining: {why}.",
        [f"fallback={'true' if bundle.fallback else 'false'}", f"bars_used={technical.bars_used}"]
        + [f"{name}=n/a" for name in missing],
    )


def _fundamental_abstention(bundle: FeatureBundle) -> AnalystNote | None:
    if bundle.fundamentals.available:
        return None
    return _abstain(
        "fundamental",
        bundle.symbol,
        "Abstaining: no fundamentals source is wired, so no multiple is given and none is invented.",
        ["fundamentals available=false"],
    )


_ABSTENTIONS: dict[str, Callable[[FeatureBundle], AnalystNote | None]] = {
    "news": _news_abstention,
    "sentiment": _sentiment_abstention,
    "technical": _technical_abstention,
    "fundamental": _fundamental_abstention,
}


def _model_vote(note: AnalystNote, model: str) -> AnalystNote:
    """A note a model wrote is a vote: code did not abstain, so the model's ``abstained`` is ignored."""
    return note.model_copy(update={"model_used": model, "abstained": False})


def _abstain(role: str, symbol: str, summary: str, evidence: list[str]) -> AnalystNote:
    return AnalystNote(
        role=role,  # type: ignore[arg-type]
        symbol=symbol,
        stance=0.0,
        confidence=ABSTAIN_CONFIDENCE,
        summary=summary,
        key_points=[summary],
        evidence=evidence,
        model_used=ABSTAIN_MODEL,
        abstained=True,
    )


def _analyst(
    choice: ModelChoice,
    role: str,
    bundle: FeatureBundle,
    *,
    memory_block: str,
    recorder: Recorder,
    budget: Budget | None,
    retry: RetryPolicy | None,
) -> AnalystResult:
    request = analyst_request(role, bundle, memory_block=memory_block)
    validate = _guard(bundle.symbol, role=role)
    try:
        note, model = _ask(
            choice, request, AnalystNote, recorder=recorder, budget=budget, retry=retry, validate=validate
        )
        note = _model_vote(note, model)
        if note.confidence < CONFIDENCE_FLOOR and choice.client.provider != OFFLINE_PROVIDER:
            note = _self_critique(choice, request, note, recorder=recorder, budget=budget, retry=retry)
    except StageFailed as failure:
        return failure
    return note


def _self_critique(
    choice: ModelChoice,
    request: ModelRequest,
    note: AnalystNote,
    *,
    recorder: Recorder,
    budget: Budget | None,
    retry: RetryPolicy | None,
) -> AnalystNote:
    """Exactly one review pass. If the review itself fails, the original (valid) note stands."""
    review = self_critique_request(request, note)
    validate = _guard(request.symbol, role=note.role)
    try:
        reviewed, model = _ask(
            choice, review, AnalystNote, recorder=recorder, budget=budget, retry=retry, validate=validate
        )
    except StageFailed:
        return note
    return _model_vote(reviewed, model)


def run_analysts(
    choice: ModelChoice,
    bundle: FeatureBundle,
    *,
    memory_block: str = "",
    recorder: Recorder | None = None,
    budget: Budget | None = None,
    max_workers: int = 4,
    retry: RetryPolicy | None = None,
) -> dict[str, AnalystResult]:
    """The four analysts, concurrently. A failed analyst comes back as its ``StageFailed`` so the
    caller can apply the quorum; abstentions are notes made without a model call."""
    recorder = recorder or NullRecorder()
    results: dict[str, AnalystResult] = {}
    calling: list[str] = []
    for role in ANALYST_ROLES:
        note = abstention(role, bundle)
        if note is None:
            calling.append(role)
        else:
            results[role] = note
    if calling:
        with ThreadPoolExecutor(max_workers=max(1, max_workers)) as pool:
            futures = {
                role: pool.submit(
                    _analyst,
                    choice,
                    role,
                    bundle,
                    memory_block=memory_block,
                    recorder=recorder,
                    budget=budget,
                    retry=retry,
                )
                for role in calling
            }
            results.update({role: future.result() for role, future in futures.items()})
    return {role: results[role] for role in ANALYST_ROLES}


def quorum_met(results: Mapping[str, AnalystResult]) -> bool:
    """At least three of four analysts returned a note; an abstention is a note."""
    return len(successful_notes(results)) >= QUORUM


def successful_notes(results: Mapping[str, AnalystResult]) -> list[AnalystNote]:
    return [result for result in results.values() if isinstance(result, AnalystNote)]


# --- stage 5: debate -----------------------------------------------------------------------------


def build_cases(
    choice: ModelChoice,
    notes: Sequence[AnalystNote],
    bundle: FeatureBundle,
    *,
    memory_block: str = "",
    recorder: Recorder | None = None,
    budget: Budget | None = None,
    retry: RetryPolicy | None = None,
) -> tuple[BullCase, BearCase]:
    """Bull and bear build their cases at the same time; either failing fails the stage."""
    recorder = recorder or NullRecorder()
    validate = _guard(bundle.symbol)

    def bull() -> BullCase:
        request = bull_request(notes, bundle, memory_block=memory_block)
        return _ask(choice, request, BullCase, recorder=recorder, budget=budget, retry=retry, validate=validate)[0]

    def bear() -> BearCase:
        request = bear_request(notes, bundle, memory_block=memory_block)
        return _ask(choice, request, BearCase, recorder=recorder, budget=budget, retry=retry, validate=validate)[0]

    return _pair(bull, bear)


def rebut_cases(
    choice: ModelChoice,
    bull: BullCase,
    bear: BearCase,
    *,
    memory_block: str = "",
    recorder: Recorder | None = None,
    budget: Budget | None = None,
    retry: RetryPolicy | None = None,
) -> tuple[BullCase, BearCase]:
    """One bounded rebuttal round; a side whose rebuttal fails keeps its initial case."""
    recorder = recorder or NullRecorder()
    validate = _guard(bull.symbol)

    def bull_rebuttal() -> BullCase:
        request = bull_rebuttal_request(bull, bear, memory_block=memory_block)
        try:
            return _ask(choice, request, BullCase, recorder=recorder, budget=budget, retry=retry, validate=validate)[0]
        except StageFailed:
            return bull

    def bear_rebuttal() -> BearCase:
        request = bear_rebuttal_request(bear, bull, memory_block=memory_block)
        try:
            return _ask(choice, request, BearCase, recorder=recorder, budget=budget, retry=retry, validate=validate)[0]
        except StageFailed:
            return bear

    return _pair(bull_rebuttal, bear_rebuttal)


def judge(
    choice: ModelChoice,
    notes: Sequence[AnalystNote],
    bull: BullCase,
    bear: BearCase,
    *,
    anchors: Mapping[str, float | int | None] | None = None,
    memory_block: str = "",
    recorder: Recorder | None = None,
    budget: Budget | None = None,
    retry: RetryPolicy | None = None,
) -> DebateResult:
    """The research manager on the deep tier. The model's conviction is kept in both fields; the
    orchestrator calibrates ``conviction`` afterwards and leaves ``proposed_conviction`` for audit.
    ``rebuttals`` records which cases were judged, so code writes it from those cases."""
    request = manager_request(notes, bull, bear, anchors=anchors, memory_block=memory_block)
    result, _ = _ask(
        choice,
        request,
        DebateResult,
        recorder=recorder or NullRecorder(),
        budget=budget,
        retry=retry,
        validate=_guard(bull.symbol),
    )
    return result.model_copy(update={"proposed_conviction": result.conviction, "rebuttals": judged_cases(bull, bear)})


def judged_cases(bull: BullCase, bear: BearCase) -> list[str]:
    """One line per rebutted case the manager was handed: its side and its argument's first sentence."""
    return [_clip(f"{side}: {_first_sentence(case.argument)}") for side, case in (("bull", bull), ("bear", bear))]


def _clip(text: str, limit: int = MAX_POINT_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- stage 6: trader -----------------------------------------------------------------------------


def propose_thesis(
    choice: ModelChoice,
    debate: DebateResult,
    notes: Sequence[AnalystNote],
    anchors: Mapping[str, float | int | None],
    *,
    other_symbols: Collection[str] = (),
    memory_block: str = "",
    recorder: Recorder | None = None,
    budget: Budget | None = None,
    retry: RetryPolicy | None = None,
) -> TradeThesis:
    """The trader; a high-conviction debate earns the deep model. With ``other_symbols`` (the rest
    of the universe) the thesis text may not name another instrument either."""
    tier = "deep" if debate.conviction >= DEEP_CONVICTION else "default"
    request = trader_request(debate, notes, anchors, tier=tier, memory_block=memory_block)
    thesis, _ = _ask(
        choice,
        request,
        TradeThesis,
        recorder=recorder or NullRecorder(),
        budget=budget,
        retry=retry,
        validate=_guard(debate.symbol, other_symbols=other_symbols),
    )
    return thesis


# --- stage 12: reviewer --------------------------------------------------------------------------


@dataclass(frozen=True)
class ReviewFacts:
    """A closed trade as code knows it. Outcome, P&L and signal are computed from numbers
    (``reviews.domain.outcomes``) before the reviewer runs, and no model output can change them."""

    symbol: str
    direction: Direction
    entry: Decimal
    stop: Decimal
    target: Decimal
    conviction: Decimal | float
    rationale: str
    exit_price: Decimal
    exit_reason: str
    outcome: Outcome
    realised_pnl: Decimal
    signal_evolution: SignalEvolution
    thesis_vs_outcome: dict[str, str] = field(hash=False)  # a dict cannot be hashed


def review_trade(
    choice: ModelChoice,
    *,
    facts: ReviewFacts,
    memory_block: str = "",
    recorder: Recorder | None = None,
    budget: Budget | None = None,
    retry: RetryPolicy | None = None,
) -> TradeReview:
    """The reviewer writes a critique and lessons; code assembles the review around them.

    Never fails: a model that cannot give a valid, on-ticker draft (or a spent budget) falls back
    to the offline rules, because a closed position must always leave a lesson in memory."""
    request = _review_request(facts, memory_block)
    try:
        draft, model = _ask(
            choice,
            request,
            TradeReviewDraft,
            recorder=recorder or NullRecorder(),
            budget=budget,
            retry=retry,
            validate=_guard(facts.symbol),
        )
    except StageFailed as failure:
        draft = reviewer_draft(facts.symbol, request.evidence)
        model = _fallback_label(failure.reason)
    return assemble_review(facts, draft, model_used=model)


def _review_request(facts: ReviewFacts, memory_block: str) -> ModelRequest:
    return reviewer_request(
        symbol=facts.symbol,
        direction=facts.direction,
        entry=facts.entry,
        stop=facts.stop,
        target=facts.target,
        conviction=facts.conviction,
        rationale=facts.rationale,
        exit_price=facts.exit_price,
        exit_reason=facts.exit_reason,
        outcome=facts.outcome,
        realised_pnl=facts.realised_pnl,
        thesis_vs_outcome=facts.thesis_vs_outcome,
        memory_block=memory_block,
    )


def _fallback_label(reason: str) -> str:
    label = f"{OFFLINE_MODEL} (fallback: {' '.join(reason.split())})"
    # The stored column holds 200 characters; the full reason is in the recorded calls.
    return label if len(label) <= MODEL_USED_CHARS else label[: MODEL_USED_CHARS - 2] + "…)"


def assemble_review(facts: ReviewFacts, draft: TradeReviewDraft, *, model_used: str) -> TradeReview:
    """Facts from ``facts``, words from ``draft``: the draft has no field that could carry an outcome."""
    return TradeReview(
        symbol=facts.symbol,
        direction=facts.direction,
        outcome=facts.outcome,
        realised_pnl=format(facts.realised_pnl, "f"),
        signal_evolution=facts.signal_evolution,
        thesis_vs_outcome=dict(facts.thesis_vs_outcome),
        critique=draft.critique,
        lessons=list(draft.lessons),
        memory_text=memory_text(draft),
        memory_tags=memory_tags(facts),
        model_used=model_used,
    )


def memory_text(draft: TradeReviewDraft) -> str:
    """One line for the memory store: the critique's first sentence, then the first lesson."""
    return f"{_sentence(_first_sentence(draft.critique))} Lesson: {_sentence(draft.lessons[0])}"


def memory_tags(facts: ReviewFacts) -> dict[str, str]:
    """The tags hybrid retrieval matches a similar setup on; every value is a fact, none is the model's."""
    return {
        "direction": facts.direction,
        "symbol": facts.symbol,
        "outcome": facts.outcome,
        "signal": facts.signal_evolution.lower(),
        "exit": facts.exit_reason or "unknown",
    }


def _first_sentence(text: str) -> str:
    # A sentence ends at . ! or ? followed by a space, so "2450.50" does not split a price.
    flat = " ".join(text.split())
    return _SENTENCE_END.split(flat, maxsplit=1)[0]


def _sentence(text: str) -> str:
    flat = " ".join(text.split())
    return flat if flat.endswith((".", "!", "?")) else f"{flat}."
