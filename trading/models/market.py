"""Market data: instruments, their daily bars, news, macro readings, fundamentals, and the feature
bundles computed from them.

Prices are Decimal in storage; every figure the desk shows or trades is computed from these rows.
"""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.db import models
from django.db.models import F, Q

PRICE = {"max_digits": 18, "decimal_places": 4}


class Instrument(models.Model):
    symbol = models.CharField(max_length=32)
    exchange = models.CharField(max_length=16)
    name = models.CharField(max_length=200)
    sector = models.CharField(max_length=64, blank=True)
    tick_size = models.DecimalField(max_digits=12, decimal_places=4, default=Decimal("0.05"))
    lot_size = models.PositiveIntegerField(default=1)
    currency = models.CharField(max_length=3, default="INR")
    isin = models.CharField(max_length=12, blank=True)
    is_active = models.BooleanField(default=True)

    class Meta:
        ordering = ["symbol"]
        constraints = [
            models.UniqueConstraint(fields=["exchange", "symbol"], name="instrument_unique_per_exchange"),
            models.CheckConstraint(condition=Q(tick_size__gt=0), name="instrument_tick_size_positive"),
            models.CheckConstraint(condition=Q(lot_size__gte=1), name="instrument_lot_size_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.exchange}:{self.symbol}"


class DailyBar(models.Model):
    # No index of its own: the unique (instrument, date) index leads with it, and each imported bar
    # would update a third index for nothing.
    instrument = models.ForeignKey(Instrument, on_delete=models.CASCADE, related_name="bars", db_index=False)
    date = models.DateField()
    open = models.DecimalField(**PRICE)
    high = models.DecimalField(**PRICE)
    low = models.DecimalField(**PRICE)
    close = models.DecimalField(**PRICE)
    volume = models.BigIntegerField()

    class Meta:
        ordering = ["instrument", "date"]
        constraints = [
            models.UniqueConstraint(fields=["instrument", "date"], name="bar_unique_per_day"),
            models.CheckConstraint(condition=Q(low__gt=0), name="bar_prices_positive"),
            models.CheckConstraint(condition=Q(high__gte=F("low")), name="bar_high_not_below_low"),
            models.CheckConstraint(
                condition=Q(close__gte=F("low"), close__lte=F("high")), name="bar_close_within_range"
            ),
            models.CheckConstraint(condition=Q(open__gte=F("low"), open__lte=F("high")), name="bar_open_within_range"),
            # An index has no volume of its own: zero is a reading, a negative one is garbage.
            models.CheckConstraint(condition=Q(volume__gte=0), name="bar_volume_not_negative"),
        ]

    def __str__(self) -> str:
        return f"{self.instrument_id}@{self.date}"


class NewsItem(models.Model):
    """A headline, tied to one instrument or market-wide (instrument is null)."""

    instrument = models.ForeignKey(Instrument, on_delete=models.CASCADE, related_name="news", null=True, blank=True)
    headline = models.CharField(max_length=500)
    source = models.CharField(max_length=100)
    published_at = models.DateTimeField(db_index=True)
    url = models.URLField(blank=True)
    # sha256 of the scope (symbol or "*") and the normalised headline: the same story twice is one row.
    content_hash = models.CharField(max_length=64, unique=True)

    class Meta:
        ordering = ["-published_at"]
        indexes = [models.Index(fields=["instrument", "published_at"], name="news_by_instrument_time")]

    def __str__(self) -> str:
        return self.headline[:80]


class MacroIndicator(models.Model):
    """One reading of a macro series (repo rate, CPI, USD/INR, ...)."""

    code = models.CharField(max_length=32)
    name = models.CharField(max_length=100)
    unit = models.CharField(max_length=16, blank=True)
    date = models.DateField()
    value = models.DecimalField(max_digits=20, decimal_places=6)

    class Meta:
        ordering = ["code", "date"]
        constraints = [models.UniqueConstraint(fields=["code", "date"], name="macro_unique_per_day")]

    def __str__(self) -> str:
        return f"{self.code}@{self.date}={self.value}"


class FundamentalsSnapshot(models.Model):
    instrument = models.ForeignKey(Instrument, on_delete=models.CASCADE, related_name="fundamentals")
    as_of = models.DateField()
    source = models.CharField(max_length=100)
    pe = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    pb = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    ev_ebitda = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    revenue_growth_pct = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    net_margin_pct = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)

    class Meta:
        ordering = ["instrument", "as_of"]
        constraints = [models.UniqueConstraint(fields=["instrument", "as_of"], name="fundamentals_unique_per_day")]

    def __str__(self) -> str:
        return f"{self.instrument_id}@{self.as_of}"


class FeatureSnapshot(models.Model):
    """A computed FeatureBundle, stored so a run (and its audit) reads exactly what it was shown.

    One row per distinct bundle of an instrument's day, keyed by the digest of its content: a run
    links the very bundle it used, and a later recomputation of that day (news imported since) is
    a row of its own, never an edit of one a run points at."""

    instrument = models.ForeignKey(Instrument, on_delete=models.CASCADE, related_name="feature_snapshots")
    as_of = models.DateField()
    bundle = models.JSONField()
    digest = models.CharField(max_length=64, help_text="SHA-256 of the bundle's canonical JSON")
    fallback = models.BooleanField(default=False)
    computed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["instrument", "-as_of", "-computed_at"]
        constraints = [
            models.UniqueConstraint(fields=["instrument", "as_of", "digest"], name="feature_snapshot_once_per_content")
        ]

    def __str__(self) -> str:
        return f"features {self.instrument_id}@{self.as_of}"


class ResearchSignal(models.Model):
    """A research candidate a person attached to a strategy as a signal the analysts read.

    Written by the research pages on a person's click (research reads market data and may attach
    evidence; it places nothing) and read by the pipeline's feature stage, which adds the signal's
    current reading, with the figures below, to the technical analyst's evidence. Detaching keeps the
    row (``detached_at``), so a run's evidence can always be traced to what was attached then."""

    strategy = models.ForeignKey("trading.Strategy", on_delete=models.CASCADE, related_name="research_signals")
    name = models.CharField(max_length=120, help_text="how the analysts see it, e.g. 'sma_crossover(10, 50)'")
    signal = models.CharField(max_length=64, help_text="the signal strategy's key, e.g. 'sma_crossover'")
    params = models.JSONField(default=dict)
    # Out-of-sample, holdout and deflated-Sharpe figures from the research session, as computed there.
    figures = models.JSONField(default=dict)
    source = models.CharField(max_length=200, help_text="provenance: research session and trial")
    candidate_ref = models.PositiveIntegerField(null=True, blank=True, help_text="the research.ResearchCandidate id")
    attached_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    attached_at = models.DateTimeField(auto_now_add=True)
    detached_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    detached_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["strategy", "-attached_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["strategy", "signal", "name"],
                condition=Q(detached_at__isnull=True),
                name="research_signal_attached_once",
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} on strategy {self.strategy_id}"


class CorporateAction(models.Model):
    """A split, a bonus issue or a cash dividend, effective on its ex-date.

    Splits and bonuses multiply the share count by ``ratio_new / ratio_old`` (a 1:5 split is
    old 1, new 5; a 1:1 bonus is old 1, new 2); prices before the ex-date are divided by the same
    factor wherever history is read. A dividend pays ``amount`` per share to a long position held
    into the ex-date (a short pays it)."""

    class Kind(models.TextChoices):
        SPLIT = "split"
        BONUS = "bonus"
        DIVIDEND = "dividend"

    instrument = models.ForeignKey(Instrument, on_delete=models.CASCADE, related_name="corporate_actions")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    ex_date = models.DateField()
    ratio_old = models.PositiveIntegerField(null=True, blank=True)
    ratio_new = models.PositiveIntegerField(null=True, blank=True)
    amount = models.DecimalField(max_digits=18, decimal_places=4, null=True, blank=True, help_text="per share")
    source = models.CharField(max_length=100, blank=True)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    applied_at = models.DateTimeField(
        null=True, blank=True, help_text="when the book applied it to the open positions (once)"
    )

    class Meta:
        ordering = ["instrument", "ex_date", "kind"]
        constraints = [
            models.UniqueConstraint(fields=["instrument", "kind", "ex_date"], name="corporate_action_once"),
            models.CheckConstraint(
                condition=(
                    Q(kind="dividend", amount__gt=0)
                    | (Q(kind__in=["split", "bonus"]) & Q(ratio_old__gte=1) & Q(ratio_new__gte=1))
                ),
                name="corporate_action_complete",
            ),
        ]
        indexes = [models.Index(fields=["instrument", "ex_date"], name="corporate_action_by_day")]

    def __str__(self) -> str:
        if self.kind == self.Kind.DIVIDEND:
            return f"{self.instrument_id} dividend {self.amount} ex {self.ex_date}"
        return f"{self.instrument_id} {self.kind} {self.ratio_old}:{self.ratio_new} ex {self.ex_date}"


class DataUpload(models.Model):
    """A file uploaded in the browser: checked first (the dry run's report is kept), imported only
    when the person confirms, exactly once."""

    class Status(models.TextChoices):
        CHECKED = "checked"
        IMPORTED = "imported"
        DISCARDED = "discarded"

    kind = models.CharField(max_length=16, help_text="instruments | bars | news | fundamentals")
    file_format = models.CharField(max_length=16, help_text="desk | bhavcopy | yahoo | …, as detected or named")
    filename = models.CharField(max_length=255)
    stored_path = models.CharField(max_length=500, help_text="under the desk's data directory")
    sha256 = models.CharField(max_length=64)
    report = models.JSONField(default=dict, blank=True)
    ok = models.BooleanField(default=False, help_text="the dry run found no problem")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.CHECKED)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    imported_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.kind} upload {self.filename} ({self.status})"
