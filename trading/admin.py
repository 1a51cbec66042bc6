from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from security.history import HistoryAdmin
from trading.models import (
    Account,
    AnalystNoteRecord,
    AuditEvent,
    BookPass,
    CorporateAction,
    DailyBar,
    DebateRecord,
    FeatureSnapshot,
    FundamentalsSnapshot,
    Instrument,
    MacroIndicator,
    NewsItem,
    Order,
    PipelineRun,
    Position,
    PositionMark,
    StageRun,
    Strategy,
    StrategyRun,
    Thesis,
)


@admin.register(Instrument)
class InstrumentAdmin(admin.ModelAdmin):
    list_display = ["symbol", "exchange", "name", "sector", "tick_size", "lot_size", "currency", "is_active"]
    list_filter = ["exchange", "sector", "is_active"]
    search_fields = ["symbol", "name"]


@admin.register(DailyBar)
class DailyBarAdmin(admin.ModelAdmin):
    list_display = ["instrument", "date", "open", "high", "low", "close", "volume"]
    list_filter = ["instrument"]
    date_hierarchy = "date"
    list_select_related = ["instrument"]


@admin.register(NewsItem)
class NewsItemAdmin(admin.ModelAdmin):
    list_display = ["published_at", "instrument", "source", "headline"]
    list_filter = ["source", "instrument"]
    search_fields = ["headline"]
    list_select_related = ["instrument"]
    readonly_fields = ["content_hash"]


@admin.register(MacroIndicator)
class MacroIndicatorAdmin(admin.ModelAdmin):
    list_display = ["code", "name", "date", "value", "unit"]
    list_filter = ["code"]


@admin.register(FundamentalsSnapshot)
class FundamentalsSnapshotAdmin(admin.ModelAdmin):
    list_display = [
        "instrument",
        "as_of",
        "pe",
        "pb",
        "ev_ebitda",
        "revenue_growth_pct",
        "net_margin_pct",
        "source",
    ]
    list_filter = ["instrument"]
    list_select_related = ["instrument"]


@admin.register(FeatureSnapshot)
class FeatureSnapshotAdmin(HistoryAdmin):
    """Read-only: runs point at these rows as the exact bundle they used."""

    list_display = ["instrument", "as_of", "fallback", "computed_at", "digest"]
    list_filter = ["fallback"]
    list_select_related = ["instrument"]
    search_fields = ["instrument__symbol"]
    date_hierarchy = "as_of"


@admin.register(AuditEvent)
class AuditEventAdmin(HistoryAdmin):
    """Read-only: the audit trail is appended by services and never edited by hand."""

    list_display = ["at", "actor_label", "action", "target", "reason"]
    list_filter = ["action"]
    search_fields = ["target", "reason", "actor_label"]


@admin.register(Strategy)
class StrategyAdmin(admin.ModelAdmin):
    list_display = ["name", "is_active", "schedule", "provider", "run_count"]
    list_filter = ["is_active"]
    filter_horizontal = ["universe"]
    readonly_fields = ["run_count"]


@admin.register(StrategyRun)
class StrategyRunAdmin(admin.ModelAdmin):
    list_display = ["strategy", "as_of", "decision", "is_replay", "decision_reason"]
    list_filter = ["strategy", "decision", "is_replay"]
    list_select_related = ["strategy"]


@admin.register(Account)
class AccountAdmin(admin.ModelAdmin):
    list_display = ["name", "capital", "cash", "risk_per_trade_pct", "max_notional_pct", "max_positions"]
    readonly_fields = ["cash"]


# Written by the pipeline, the approval flow and the broker only: the admin may look, not touch
# (and never delete: that would rewrite the track record).
_ReadOnly = HistoryAdmin


@admin.register(PipelineRun)
class PipelineRunAdmin(_ReadOnly):
    """A run, with ``used`` (what it used: account, limits in force, mandate, provider, models, as
    written when it started) and the feature snapshot it was shown."""

    list_display = ["id", "instrument", "as_of", "provider", "status", "is_replay", "feature_snapshot", "created_at"]
    list_filter = ["status", "provider", "is_replay"]
    list_select_related = ["instrument", "feature_snapshot"]
    search_fields = ["instrument__symbol"]


class StanceSignFilter(admin.SimpleListFilter):
    """Bullish, bearish or flat notes: the sign of the stance."""

    title = "stance"
    parameter_name = "stance_sign"

    SIGNS = {"bullish": {"stance__gt": 0}, "bearish": {"stance__lt": 0}, "flat": {"stance": 0}}

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [("bullish", "bullish (> 0)"), ("bearish", "bearish (< 0)"), ("flat", "flat (0)")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        sign = self.SIGNS.get(self.value() or "")
        return queryset if sign is None else queryset.filter(**sign)


@admin.register(AnalystNoteRecord)
class AnalystNoteRecordAdmin(_ReadOnly):
    """Every analyst note of every run; ``citations`` is code's check of the numbers it cites."""

    list_display = [
        "run",
        "symbol",
        "role",
        "stance",
        "confidence",
        "abstained",
        "citation_mismatches",
        "model_used",
        "created_at",
    ]
    list_filter = ["role", StanceSignFilter, "abstained"]
    list_select_related = ["run__instrument"]
    search_fields = ["run__instrument__symbol"]

    @admin.display(ordering="run__instrument__symbol")
    def symbol(self, record: AnalystNoteRecord) -> str:
        return record.run.instrument.symbol


@admin.register(DebateRecord)
class DebateRecordAdmin(_ReadOnly):
    """Every debate; ``conviction`` is code's calibration, ``proposed_conviction`` the manager's."""

    list_display = ["run", "symbol", "winner", "conviction", "proposed_conviction", "opposing_share", "created_at"]
    list_filter = ["winner"]
    list_select_related = ["run__instrument"]
    search_fields = ["run__instrument__symbol"]

    @admin.display(ordering="run__instrument__symbol")
    def symbol(self, record: DebateRecord) -> str:
        return record.run.instrument.symbol


@admin.register(StageRun)
class StageRunAdmin(_ReadOnly):
    list_display = ["run", "position", "stage", "status", "started_at", "finished_at"]
    list_filter = ["stage", "status"]
    list_select_related = ["run"]


@admin.register(Thesis)
class ThesisAdmin(_ReadOnly):
    list_display = ["id", "instrument", "direction", "conviction", "status", "risk_approved", "created_at"]
    list_filter = ["status", "direction", "risk_approved"]
    list_select_related = ["instrument"]


@admin.register(Order)
class OrderAdmin(_ReadOnly):
    list_display = ["id", "instrument", "side", "quantity", "status", "fill_price", "filled_on", "costs_total"]
    list_filter = ["status", "side"]
    list_select_related = ["instrument"]


@admin.register(Position)
class PositionAdmin(_ReadOnly):
    list_display = ["id", "instrument", "direction", "quantity", "entry_price", "status", "exit_reason", "realised_pnl"]
    list_filter = ["status", "direction", "is_replay", "exit_reason"]
    list_select_related = ["instrument"]


@admin.register(PositionMark)
class PositionMarkAdmin(_ReadOnly):
    list_display = ["position", "date", "close", "unrealised_pnl"]
    list_select_related = ["position"]
    date_hierarchy = "date"


@admin.register(BookPass)
class BookPassAdmin(_ReadOnly):
    list_display = ["account", "date", "done_at", "filled", "closed", "marked"]
    list_filter = ["account"]
    list_select_related = ["account"]


@admin.register(CorporateAction)
class CorporateActionAdmin(admin.ModelAdmin):
    """Splits, bonuses and dividends (``manage.py import_corporate_actions`` for files). Once the
    book has applied one to its positions it is history: it may be looked at, not changed or
    deleted, or the book and the record would disagree."""

    list_display = ["instrument", "kind", "ex_date", "ratio_old", "ratio_new", "amount", "source", "applied_at"]
    list_filter = ["kind"]
    list_select_related = ["instrument"]
    search_fields = ["instrument__symbol", "source", "note"]
    date_hierarchy = "ex_date"
    readonly_fields = ["applied_at"]

    def has_change_permission(self, request: HttpRequest, obj: CorporateAction | None = None) -> bool:
        return super().has_change_permission(request, obj) and (obj is None or obj.applied_at is None)

    def has_delete_permission(self, request: HttpRequest, obj: CorporateAction | None = None) -> bool:
        return super().has_delete_permission(request, obj) and (obj is None or obj.applied_at is None)

    def get_actions(self, request: HttpRequest) -> dict:
        # A bulk delete would not ask each row whether the book has applied it.
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions
