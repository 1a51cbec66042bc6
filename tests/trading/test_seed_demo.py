from __future__ import annotations

from collections import Counter

from django.core.management import call_command

from trading.market import services
from trading.market.demo_seed import seed_demo
from trading.market.domain.news import classify_event
from trading.models import AuditEvent, DailyBar, FundamentalsSnapshot, Instrument, MacroIndicator, NewsItem


def test_the_demo_universe_is_a_believable_market(db):
    report = seed_demo()

    assert report.seeded and report.instruments == 12
    assert (report.last_date - report.first_date).days >= 3 * 365
    instruments = list(Instrument.objects.all())
    assert all(i.exchange == "NSE" and i.currency == "INR" and str(i.tick_size) == "0.0500" for i in instruments)
    assert {"RELIANCE", "TCS", "HDFCBANK", "INFY"} <= {i.symbol for i in instruments}
    per_instrument = Counter(DailyBar.objects.values_list("instrument__symbol", flat=True))
    assert min(per_instrument.values()) >= 750
    classes = Counter(classify_event(h) for h in NewsItem.objects.values_list("headline", flat=True))
    assert {"earnings", "guidance", "rating", "regulatory", "macro"} <= set(classes)
    headlines = " ".join(NewsItem.objects.values_list("headline", flat=True)).lower()
    assert "ignore previous instructions" in headlines
    assert NewsItem.objects.filter(instrument__isnull=True).exists()
    with_fundamentals = set(FundamentalsSnapshot.objects.values_list("instrument__symbol", flat=True))
    assert 0 < len(with_fundamentals) < 12
    assert MacroIndicator.objects.values("code").distinct().count() >= 5
    assert AuditEvent.objects.filter(action="seed_demo").count() == 1


def test_every_demo_instrument_has_a_full_bundle_on_the_last_day(db):
    report = seed_demo()

    for instrument in Instrument.objects.all():
        bundle = services.feature_bundle_for(instrument=instrument, as_of=report.last_date)
        assert not bundle.fallback, bundle.warnings
        assert bundle.technical.sma_200 is not None and bundle.technical.atr_14 > 0
        assert bundle.forecast is not None
        assert len(bundle.macro) == 5


def test_seeding_twice_changes_nothing_and_reset_reloads_the_same_market(db, capsys):
    call_command("seed_demo")
    bars = list(DailyBar.objects.order_by("instrument__symbol", "date").values_list("close", flat=True))

    call_command("seed_demo")
    assert "already loaded; nothing changed" in capsys.readouterr().out
    assert DailyBar.objects.count() == len(bars)

    call_command("seed_demo", "--reset")
    assert list(DailyBar.objects.order_by("instrument__symbol", "date").values_list("close", flat=True)) == bars


def test_a_reset_that_would_delete_a_track_record_is_refused(db):
    import pytest
    from django.core.management import CommandError

    from trading.models import PipelineRun, Strategy

    seed_demo()
    reliance = Instrument.objects.get(symbol="RELIANCE")
    PipelineRun.objects.create(instrument=reliance, as_of=reliance.bars.latest("date").date, provider="offline")

    with pytest.raises(CommandError, match="--reset refused: the demo instruments have pipeline runs"):
        call_command("seed_demo", "--reset")
    assert DailyBar.objects.filter(instrument=reliance).exists()
    assert Strategy.objects.get(name="Large-cap swing").universe.count() == 12
