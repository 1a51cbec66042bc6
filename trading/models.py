"""Market data and the desk's audit trail.

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
    instrument = models.ForeignKey(Instrument, on_delete=models.CASCADE, related_name="bars")
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
            models.CheckConstraint(condition=Q(volume__gt=0), name="bar_volume_positive"),
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
    """A computed FeatureBundle, stored so a run (and its audit) reads exactly what it was shown."""

    instrument = models.ForeignKey(Instrument, on_delete=models.CASCADE, related_name="feature_snapshots")
    as_of = models.DateField()
    bundle = models.JSONField()
    fallback = models.BooleanField(default=False)
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["instrument", "-as_of"]
        constraints = [models.UniqueConstraint(fields=["instrument", "as_of"], name="feature_snapshot_unique_per_day")]

    def __str__(self) -> str:
        return f"features {self.instrument_id}@{self.as_of}"


class AuditEvent(models.Model):
    """Who did what, when and why. Written by services, never edited."""

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    actor_label = models.CharField(max_length=150, help_text="username, or the command/task that acted")
    action = models.CharField(max_length=64, db_index=True)
    target = models.CharField(max_length=200, blank=True)
    reason = models.TextField(blank=True)
    details = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-at"]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.actor_label} {self.action} {self.target}"


class DeskPermission(models.Model):
    """Holder of the desk's own permissions (no table). Later issues attach the approval flow."""

    class Meta:
        managed = False
        default_permissions = ()
        permissions = [
            ("approve_thesis", "Can approve or reject a trade thesis"),
            ("start_run", "Can start pipeline and strategy runs"),
            ("import_market_data", "Can import market data"),
        ]

    def __str__(self) -> str:
        return "desk permissions"


class Account(models.Model):
    """The paper account the risk engine sizes against. Positions arrive with the broker (issue 4)."""

    name = models.CharField(max_length=64, unique=True)
    currency = models.CharField(max_length=3, default="INR")
    capital = models.DecimalField(max_digits=18, decimal_places=2)
    cash = models.DecimalField(max_digits=18, decimal_places=2)
    risk_per_trade_pct = models.DecimalField(max_digits=6, decimal_places=3, default=Decimal("1.000"))
    daily_loss_cap = models.DecimalField(max_digits=18, decimal_places=2)
    max_notional_pct = models.DecimalField(max_digits=6, decimal_places=2, default=Decimal("20.00"))
    max_positions = models.PositiveIntegerField(default=5)
    exposure_cap_pct = models.DecimalField(max_digits=6, decimal_places=2, default=Decimal("100.00"))
    max_instrument_pct = models.DecimalField(
        max_digits=6,
        decimal_places=2,
        default=Decimal("20.00"),
        help_text="the most of capital one instrument may take, held and working together",
    )
    allow_short = models.BooleanField(
        default=False,
        help_text="may this account carry a short overnight? No for NSE cash delivery; yes for F&O, SLB "
        "or a market that permits it",
    )

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(capital__gt=0), name="account_capital_positive"),
            models.CheckConstraint(condition=Q(risk_per_trade_pct__gt=0), name="account_risk_pct_positive"),
        ]

    def __str__(self) -> str:
        return self.name


class PipelineRun(models.Model):
    """One instrument on one as-of date through stages 1-7. Each stage is persisted before the next."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        COMPLETED = "completed"
        DEGRADED = "degraded"
        FAILED = "failed"
        # The account already has a live idea in the instrument (held, working or pending): the
        # run proposes nothing and says which.
        HELD = "held"

    instrument = models.ForeignKey(Instrument, on_delete=models.PROTECT, related_name="runs")
    as_of = models.DateField()
    provider = models.CharField(max_length=32)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED, db_index=True)
    failure_reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    strategy_run = models.ForeignKey(
        "StrategyRun", on_delete=models.CASCADE, null=True, blank=True, related_name="pipeline_runs"
    )
    is_replay = models.BooleanField(default=False, help_text="made by a history replay, not live")
    # The outbox: null until a task message for the run was sent (or seen by a worker). A row
    # committed while the broker was down stays null and the sweep sends it later.
    enqueued_at = models.DateTimeField(null=True, blank=True)
    # Who executes the run right now, until when. Taken only once expired, renewed while working,
    # checked before every write: one run never has two executors.
    lease_owner = models.CharField(max_length=255, blank=True, help_text="host:pid:attempt of the executor")
    lease_expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["instrument", "as_of"], name="run_by_instrument_day"),
            # The runs page reads the latest hundred: without it every run is sorted first.
            models.Index(fields=["-created_at", "-id"], name="run_latest_first"),
        ]

    def __str__(self) -> str:
        return f"run {self.pk} {self.instrument_id}@{self.as_of}"

    @property
    def is_finished(self) -> bool:
        return self.status in {self.Status.COMPLETED, self.Status.DEGRADED, self.Status.FAILED, self.Status.HELD}


class StageRun(models.Model):
    """The persisted output of one stage of one run. Unique per (run, stage): a resumed run reads
    a finished stage back instead of running it again, so nothing is ever produced twice."""

    class Status(models.TextChoices):
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    run = models.ForeignKey(PipelineRun, on_delete=models.CASCADE, related_name="stages")
    stage = models.CharField(max_length=16)
    position = models.PositiveSmallIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    output = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["run", "position"]
        constraints = [models.UniqueConstraint(fields=["run", "stage"], name="stage_once_per_run")]

    def __str__(self) -> str:
        return f"{self.run_id}:{self.stage}={self.status}"


class Thesis(models.Model):
    """The trader's thesis after anchoring, validation and the risk engine: what a person approves."""

    class Status(models.TextChoices):
        PENDING = "pending"
        APPROVED = "approved"
        REJECTED = "rejected"
        EXPIRED = "expired"
        REJECTED_BY_RISK = "risk_rejected"

    run = models.OneToOneField(PipelineRun, on_delete=models.CASCADE, related_name="thesis")
    account = models.ForeignKey(
        Account, on_delete=models.PROTECT, related_name="theses", help_text="the book it was sized for"
    )
    instrument = models.ForeignKey(Instrument, on_delete=models.PROTECT, related_name="theses")
    direction = models.CharField(max_length=5)
    conviction = models.DecimalField(max_digits=5, decimal_places=4)
    entry = models.DecimalField(**PRICE)
    stop = models.DecimalField(**PRICE)
    target = models.DecimalField(**PRICE)
    horizon_sessions = models.PositiveIntegerField()
    quantity = models.PositiveIntegerField(default=0)
    risk_amount = models.DecimalField(max_digits=18, decimal_places=2, default=Decimal("0"))
    notional = models.DecimalField(max_digits=18, decimal_places=2, default=Decimal("0"))
    risk_approved = models.BooleanField(default=False)
    risk_checks = models.JSONField(default=list)
    payload = models.JSONField(help_text="the TradeThesis as validated")
    warnings = models.JSONField(
        default=list,
        blank=True,
        help_text="what code overruled or cut (a trader reply it did not follow, a size fitted)",
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True, db_index=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_comment = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "theses"
        indexes = [
            # The approval queue: by status, best conviction first, newest first.
            models.Index(fields=["status", "-conviction", "-created_at", "-id"], name="thesis_queue"),
            models.Index(fields=["-conviction", "-created_at", "-id"], name="thesis_queue_all"),
        ]

    def __str__(self) -> str:
        return f"{self.direction} {self.instrument_id} ({self.conviction})"


class Strategy(models.Model):
    """A mandate: what to trade, how much to risk, how often to look."""

    name = models.CharField(max_length=100, unique=True)
    philosophy = models.TextField(help_text="the mandate in words; shown to the agents")
    universe = models.ManyToManyField(Instrument, related_name="strategies")
    schedule = models.CharField(
        max_length=64, default="0 16 * * 1-5", help_text="cron: minute hour day-of-month month day-of-week"
    )
    provider = models.CharField(max_length=32, blank=True, help_text="model provider; blank = the desk default")
    # Risk parameters of the mandate; blank = the account's.
    risk_per_trade_pct = models.DecimalField(max_digits=6, decimal_places=3, null=True, blank=True)
    max_notional_pct = models.DecimalField(max_digits=6, decimal_places=2, null=True, blank=True)
    max_positions = models.PositiveIntegerField(null=True, blank=True)
    is_active = models.BooleanField(default=True)
    run_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "strategies"

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        from django.core.exceptions import ValidationError

        from trading.schedules import schedule_of

        try:
            schedule_of(self)
        except ValueError as error:
            raise ValidationError({"schedule": str(error)}) from None


class StrategyRun(models.Model):
    class Decision(models.TextChoices):
        PENDING = "pending"
        HOLD = "hold"
        REBALANCE = "rebalance"

    strategy = models.ForeignKey(Strategy, on_delete=models.CASCADE, related_name="runs")
    as_of = models.DateField()
    decision = models.CharField(max_length=16, choices=Decision.choices, default=Decision.PENDING)
    decision_reason = models.TextField(blank=True)
    is_replay = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-as_of", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["strategy", "as_of", "is_replay"], name="strategy_run_once_per_day")
        ]

    def __str__(self) -> str:
        return f"{self.strategy_id}@{self.as_of}={self.decision}"


class Order(models.Model):
    """An approved thesis on its way to the paper broker. One per thesis, ever."""

    class Status(models.TextChoices):
        WORKING = "working"
        FILLED = "filled"
        CANCELLED = "cancelled"

    thesis = models.OneToOneField(Thesis, on_delete=models.PROTECT, related_name="order")
    account = models.ForeignKey(Account, on_delete=models.PROTECT, related_name="orders")
    instrument = models.ForeignKey(Instrument, on_delete=models.PROTECT, related_name="orders")
    side = models.CharField(max_length=4)
    quantity = models.PositiveIntegerField()
    fill_policy = models.CharField(max_length=16)
    slippage_bps = models.DecimalField(max_digits=8, decimal_places=2)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.WORKING, db_index=True)
    placed_at = models.DateTimeField(auto_now_add=True)
    placed_on = models.DateField(help_text="the trading day the order was placed")
    fill_price = models.DecimalField(**PRICE, null=True, blank=True)
    filled_on = models.DateField(null=True, blank=True)
    costs = models.JSONField(default=dict, blank=True)
    costs_total = models.DecimalField(max_digits=18, decimal_places=2, default=Decimal("0"))
    note = models.TextField(blank=True, help_text="why the broker cancelled it, when it did")

    class Meta:
        ordering = ["-placed_at", "-id"]

    def __str__(self) -> str:
        return f"{self.side} {self.quantity} {self.instrument_id} ({self.status})"


class Position(models.Model):
    class Status(models.TextChoices):
        OPEN = "open"
        CLOSED = "closed"

    account = models.ForeignKey(Account, on_delete=models.PROTECT, related_name="positions")
    order = models.OneToOneField(Order, on_delete=models.PROTECT, related_name="position")
    thesis = models.OneToOneField(Thesis, on_delete=models.PROTECT, related_name="position")
    instrument = models.ForeignKey(Instrument, on_delete=models.PROTECT, related_name="positions")
    direction = models.CharField(max_length=5)
    quantity = models.PositiveIntegerField()
    entry_price = models.DecimalField(**PRICE)
    entry_costs = models.DecimalField(max_digits=18, decimal_places=2)
    opened_on = models.DateField()
    stop = models.DecimalField(**PRICE)
    target = models.DecimalField(**PRICE)
    horizon_sessions = models.PositiveIntegerField()
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.OPEN, db_index=True)
    last_mark = models.DecimalField(**PRICE, null=True, blank=True)
    unrealised_pnl = models.DecimalField(max_digits=18, decimal_places=2, default=Decimal("0"))
    exit_price = models.DecimalField(**PRICE, null=True, blank=True)
    exit_costs = models.DecimalField(max_digits=18, decimal_places=2, default=Decimal("0"))
    closed_on = models.DateField(null=True, blank=True)
    exit_reason = models.CharField(max_length=16, blank=True)
    exit_comment = models.TextField(blank=True, help_text="a manual exit's reason, as the person gave it")
    realised_pnl = models.DecimalField(max_digits=18, decimal_places=2, null=True, blank=True)
    is_replay = models.BooleanField(default=False)

    class Meta:
        ordering = ["-opened_on", "-id"]

    def __str__(self) -> str:
        return f"{self.direction} {self.quantity} {self.instrument_id} ({self.status})"

    @property
    def notional(self) -> Decimal:
        return self.entry_price * self.quantity


class PositionMark(models.Model):
    """One daily mark: the PnL trajectory a later review reads."""

    position = models.ForeignKey(Position, on_delete=models.CASCADE, related_name="marks")
    date = models.DateField()
    close = models.DecimalField(**PRICE)
    unrealised_pnl = models.DecimalField(max_digits=18, decimal_places=2)

    class Meta:
        ordering = ["position", "date"]
        constraints = [models.UniqueConstraint(fields=["position", "date"], name="mark_once_per_day")]

    def __str__(self) -> str:
        return f"{self.position_id}@{self.date}={self.unrealised_pnl}"


class BookPass(models.Model):
    """A session the daily book pass has processed for an account: each day is processed once,
    in order, and a missed day is caught up rather than skipped."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="book_passes")
    date = models.DateField()
    done_at = models.DateTimeField(auto_now_add=True)
    filled = models.PositiveIntegerField(default=0)
    closed = models.PositiveIntegerField(default=0)
    marked = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["account", "date"]
        constraints = [models.UniqueConstraint(fields=["account", "date"], name="book_pass_once_per_day")]

    def __str__(self) -> str:
        return f"{self.account_id}@{self.date}"


class Heartbeat(models.Model):
    """When a background process was last seen: the scheduler's minutely tick (run by a worker, so
    it also proves beat, broker and a worker all move) and each worker that answered the tick's
    ping. The health page reads their ages; a stale tick means nothing scheduled is running."""

    class Kind(models.TextChoices):
        SCHEDULER = "scheduler"
        WORKER = "worker"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    name = models.CharField(max_length=255, help_text="the worker's hostname; 'beat' for the scheduler")
    seen_at = models.DateTimeField()

    class Meta:
        ordering = ["kind", "name"]
        constraints = [models.UniqueConstraint(fields=["kind", "name"], name="heartbeat_once_per_process")]

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}@{self.seen_at:%Y-%m-%d %H:%M:%S}"
