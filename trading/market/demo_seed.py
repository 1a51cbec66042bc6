"""Load the generated demo market into the database (the ``seed_demo`` command)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal

from django.db import transaction

from agents.playbook import DEMO_PLAYBOOK, seed_demo_playbook
from trading.audit import audit_record
from trading.market.domain.demo import DEMO_END, DEMO_START, DemoMarket, generate_demo_market
from trading.market.domain.news import content_hash
from trading.models import DailyBar, FundamentalsSnapshot, Instrument, MacroIndicator, NewsItem, PipelineRun, Strategy


class SeedRefused(Exception):
    pass


@dataclass(frozen=True)
class SeedReport:
    seeded: bool
    instruments: int = 0
    bars: int = 0
    news: int = 0
    macro: int = 0
    fundamentals: int = 0
    first_date: dt.date | None = None
    last_date: dt.date | None = None
    heuristics: int = 0  # the demo playbook's rules written now (those missing)

    def summary(self) -> str:
        playbook = f" Added the demo playbook's {self.heuristics} missing heuristics." if self.heuristics else ""
        if not self.seeded:
            if playbook:
                return f"The demo universe is already loaded (use --reset to load it again).{playbook}"
            return "The demo universe is already loaded; nothing changed (use --reset to load it again)."
        return (
            f"Loaded {self.instruments} instruments, {self.bars:,} daily bars ({self.first_date} to "
            f"{self.last_date}), {self.news:,} headlines, {self.macro:,} macro readings and "
            f"{self.fundamentals} fundamentals snapshots.{playbook}"
        )


def _price(value: float) -> Decimal:
    return Decimal(str(value))


def _demo_instruments(market: DemoMarket) -> list[Instrument]:
    return list(
        Instrument.objects.filter(
            exchange__in={i.exchange for i in market.instruments},
            symbol__in={i.symbol for i in market.instruments},
        )
    )


def _seed_playbook(actor_label: str) -> int:
    """The demo playbook's missing rules, active, with an audit record when any was written."""
    written = seed_demo_playbook()
    if written:
        audit_record(
            actor_label=actor_label,
            action="playbook_seeded",
            target="demo playbook",
            details={"written": written, "codes": [code for code, _, _ in DEMO_PLAYBOOK]},
        )
    return written


@transaction.atomic
def seed_demo(
    *,
    seed: int = 7,
    start: dt.date = DEMO_START,
    end: dt.date = DEMO_END,
    reset: bool = False,
    actor_label: str = "seed_demo",
) -> SeedReport:
    """Idempotent: when the demo instruments already have bars, nothing is written unless ``reset``
    (but for the demo playbook's heuristics that are missing: the offline model cites them)."""
    heuristics = _seed_playbook(actor_label)
    market = generate_demo_market(seed=seed, start=start, end=end)
    existing = _demo_instruments(market)
    if existing and DailyBar.objects.filter(instrument__in=existing).exists() and not reset:
        return SeedReport(seeded=False, heuristics=heuristics)
    if reset and PipelineRun.objects.filter(instrument__in=existing).exists():
        raise SeedRefused(
            "the demo instruments have pipeline runs (and maybe theses and positions); a reset would "
            "delete that track record, so nothing was changed"
        )
    if reset:
        Instrument.objects.filter(pk__in=[i.pk for i in existing]).delete()
        NewsItem.objects.filter(instrument__isnull=True).delete()
        MacroIndicator.objects.filter(code__in=[series.code for series in market.macro]).delete()

    instruments: dict[str, Instrument] = {}
    for spec in market.instruments:
        instrument, _ = Instrument.objects.update_or_create(
            exchange=spec.exchange,
            symbol=spec.symbol,
            defaults={
                "name": spec.name,
                "sector": spec.sector,
                "tick_size": _price(spec.tick_size),
                "lot_size": spec.lot_size,
                "currency": spec.currency,
                "is_active": True,
            },
        )
        instruments[spec.symbol] = instrument

    bars = DailyBar.objects.bulk_create(
        (
            DailyBar(
                instrument=instruments[bar.symbol],
                date=bar.date,
                open=_price(bar.open),
                high=_price(bar.high),
                low=_price(bar.low),
                close=_price(bar.close),
                volume=bar.volume,
            )
            for bar in market.bars
        ),
        batch_size=2000,
    )

    stored_hashes = set(NewsItem.objects.values_list("content_hash", flat=True))
    news = []
    for item in market.news:
        subject = instruments.get(item.symbol) if item.symbol else None  # None: market-wide news
        digest = content_hash(item.headline, str(subject) if subject is not None else "*")
        if digest in stored_hashes:
            continue
        stored_hashes.add(digest)
        news.append(
            NewsItem(
                instrument=subject,
                headline=item.headline,
                source=item.source,
                published_at=item.published_at,
                content_hash=digest,
            )
        )
    NewsItem.objects.bulk_create(news, batch_size=2000)

    macro = MacroIndicator.objects.bulk_create(
        (
            MacroIndicator(
                code=series.code,
                name=series.name,
                unit=series.unit,
                date=reading.date,
                value=Decimal(str(round(reading.value, 6))),
            )
            for series in market.macro
            for reading in series.readings
        ),
        batch_size=2000,
        ignore_conflicts=True,
    )

    fundamentals = FundamentalsSnapshot.objects.bulk_create(
        FundamentalsSnapshot(
            instrument=instruments[f.symbol],
            as_of=f.as_of,
            source=f.source,
            **{
                name: None if getattr(f, name) is None else Decimal(str(round(getattr(f, name), 4)))
                for name in ("pe", "pb", "ev_ebitda", "revenue_growth_pct", "net_margin_pct")
            },
        )
        for f in market.fundamentals
    )

    strategy, _ = Strategy.objects.get_or_create(
        name="Large-cap swing",
        defaults={
            "philosophy": (
                "Swing trades of one to three weeks in NSE large caps, with the trend and the news, "
                "stops at two ATRs and 2R targets. No position against a falling 200-day average "
                "without a catalyst."
            ),
            "schedule": "0 16 * * 1-5",
        },
    )
    strategy.universe.set(instruments.values())
    report = SeedReport(
        seeded=True,
        instruments=len(instruments),
        bars=len(bars),
        news=len(news),
        macro=len(macro),
        fundamentals=len(fundamentals),
        first_date=market.sessions[0],
        last_date=market.sessions[-1],
        heuristics=heuristics,
    )
    audit_record(
        actor_label=actor_label,
        action="seed_demo",
        target=f"seed={seed}",
        details=report.__dict__ | {"first_date": str(report.first_date), "last_date": str(report.last_date)},
    )
    return report
