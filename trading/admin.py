from django.contrib import admin

from trading.models import (
    AuditEvent,
    DailyBar,
    FeatureSnapshot,
    FundamentalsSnapshot,
    Instrument,
    MacroIndicator,
    NewsItem,
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
class FeatureSnapshotAdmin(admin.ModelAdmin):
    list_display = ["instrument", "as_of", "fallback", "computed_at"]
    list_select_related = ["instrument"]


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    """Read-only: the audit trail is appended by services and never edited by hand."""

    list_display = ["at", "actor_label", "action", "target", "reason"]
    list_filter = ["action"]
    search_fields = ["target", "reason", "actor_label"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
