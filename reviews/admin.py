from django.contrib import admin

from reviews.models import TradeReview


@admin.register(TradeReview)
class TradeReviewAdmin(admin.ModelAdmin):
    list_display = ["position", "outcome", "realised_pnl", "signal_evolution", "model_used", "created_at"]
    list_filter = ["outcome", "signal_evolution"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
