from django.contrib import admin
from django.db.models import Model
from django.http import HttpRequest

from reviews.models import Critique, CritiqueAction, SignalIC, TradeReview
from security.history import HistoryAdmin


@admin.register(TradeReview)
class TradeReviewAdmin(HistoryAdmin):
    list_display = ["position", "outcome", "realised_pnl", "signal_evolution", "model_used", "created_at"]
    list_filter = ["outcome", "signal_evolution"]
    list_select_related = ["position"]


class CritiqueActionInline(admin.TabularInline):
    """A critique's required actions, as the gate left them: completed by code's check or by an
    approver's attestation on the critique page, never here."""

    model = CritiqueAction
    extra = 0
    can_delete = False
    fields = readonly_fields = (
        "number",
        "kind",
        "text",
        "params",
        "status",
        "check_detail",
        "completed_at",
        "attested_by",
        "attestation",
    )

    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


@admin.register(Critique)
class CritiqueAdmin(HistoryAdmin):
    """Critiques are written by the critique service and completed through the critique page:
    the admin only reads them (evidence, findings, directive, grounding, archive)."""

    list_display = ["id", "strategy", "sequence", "as_of", "run_count", "status", "severity", "trajectory", "is_replay"]
    list_filter = ["status", "severity", "trajectory", "is_replay"]
    list_select_related = ["strategy"]
    search_fields = ["strategy__name", "diagnosis"]
    inlines = [CritiqueActionInline]


@admin.register(SignalIC)
class SignalICAdmin(HistoryAdmin):
    """Each signal's rank IC as logged for a strategy on a date (what ``log_signal_ics`` checks)."""

    list_display = ["strategy", "as_of", "signal", "family", "horizon_sessions", "ic", "observations", "is_replay"]
    list_filter = ["family", "is_replay"]
    list_select_related = ["strategy"]
    search_fields = ["strategy__name", "signal"]
