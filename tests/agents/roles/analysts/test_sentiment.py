"""The sentiment analyst reads positioning only: without a feed it abstains by code, and news tone
is never counted a second time, whatever a model replies."""

from __future__ import annotations

from agents.roles import ABSTAIN_MODEL, AnalystNote, run_analysts
from agents.roles.analysts import analyst_request
from tests.agents.roles.builders import (
    BAD_NEWS,
    GOOD_NEWS,
    FakeClient,
    Recording,
    choose,
    full_bundle,
    make_bundle,
    note,
    says,
)


def test_without_a_positioning_feed_the_sentiment_analyst_abstains_even_with_news() -> None:
    client = FakeClient(patch=says("sentiment", stance=1.0, confidence=1.0))
    sentiment = run_analysts(choose(client), full_bundle())["sentiment"]
    assert "sentiment" not in client.roles()
    assert isinstance(sentiment, AnalystNote)
    assert (sentiment.abstained, sentiment.stance, sentiment.model_used) == (True, 0.0, ABSTAIN_MODEL)
    assert "news analyst's vote" in sentiment.summary and "double one signal family" in sentiment.summary


def test_with_a_positioning_feed_the_sentiment_request_still_carries_no_news_tone() -> None:
    bundle = full_bundle()
    wired = bundle.model_copy(
        update={"sentiment": bundle.sentiment.model_copy(update={"positioning_feed_wired": True})}
    )
    client = Recording()
    run_analysts(choose(client), wired)
    [request] = [request for request in client.requests if request.role == "sentiment"]
    assert request.evidence["sentiment"] == {"positioning_feed_wired": True}
    assert "news_sentiment" not in request.prompt and "news_items" not in request.prompt
    assert note(request).stance == 0.0  # the offline rules have no positioning figures to read


def test_sentiment_never_re_reads_news_tone() -> None:
    good = note(analyst_request("sentiment", make_bundle(items=GOOD_NEWS)))
    bad = note(analyst_request("sentiment", make_bundle(items=BAD_NEWS)))
    assert good.stance == bad.stance == 0.0
    assert good.confidence <= 0.15
    assert "positioning_feed_wired=false" in good.evidence
