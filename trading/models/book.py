"""The paper book: accounts, theses waiting on a person, orders, positions and their daily marks."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.db import models
from django.db.models import Q

from trading.models.market import PRICE, Instrument
from trading.models.pipeline import PipelineRun


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
            # One live idea per instrument: an account's pending thesis in an instrument, among all it had.
            models.Index(fields=["account", "instrument", "status"], name="thesis_live_by_instrument"),
        ]

    def __str__(self) -> str:
        return f"{self.direction} {self.instrument_id} ({self.conviction})"


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
    reference_price = models.DecimalField(
        **PRICE, null=True, blank=True, help_text="the price the fill was taken at before slippage (open or close)"
    )
    filled_on = models.DateField(null=True, blank=True)
    costs = models.JSONField(default=dict, blank=True)
    costs_total = models.DecimalField(max_digits=18, decimal_places=2, default=Decimal("0"))
    note = models.TextField(blank=True, help_text="why the broker cancelled it, when it did")

    class Meta:
        ordering = ["-placed_at", "-id"]
        indexes = [
            # The book pass and the limits read an account's few working orders among all it ever had.
            models.Index(fields=["account", "status"], name="order_live_by_account"),
        ]

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
    exit_reference = models.DecimalField(
        **PRICE, null=True, blank=True, help_text="the exit's price before slippage (stop, target, open or close)"
    )
    exit_costs = models.DecimalField(max_digits=18, decimal_places=2, default=Decimal("0"))
    closed_on = models.DateField(null=True, blank=True)
    exit_reason = models.CharField(max_length=16, blank=True)
    exit_comment = models.TextField(blank=True, help_text="a manual exit's reason, as the person gave it")
    realised_pnl = models.DecimalField(max_digits=18, decimal_places=2, null=True, blank=True)
    dividends = models.DecimalField(
        max_digits=18, decimal_places=2, default=Decimal("0"), help_text="dividends received (+) or paid (-)"
    )
    adjustments = models.JSONField(
        default=list, blank=True, help_text="splits and bonuses applied to quantity and levels, oldest first"
    )
    is_replay = models.BooleanField(default=False)

    class Meta:
        ordering = ["-opened_on", "-id"]
        indexes = [
            # A review's period: the positions an account closed between two days.
            models.Index(fields=["account", "closed_on"], name="position_by_account_close"),
            # The book pass and the limits read an account's few open positions among all it ever had.
            models.Index(fields=["account", "status"], name="position_live_by_account"),
        ]

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
        verbose_name_plural = "book passes"
        constraints = [models.UniqueConstraint(fields=["account", "date"], name="book_pass_once_per_day")]

    def __str__(self) -> str:
        return f"{self.account_id}@{self.date}"
