from django.contrib import admin

from reviews.models import TradeReview
from security.history import HistoryAdmin


@admin.register(TradeReview)
class TradeReviewAdmin(HistoryAdmin):
    list_display = ["position", "outcome", "realised_pnl", "signal_evolution", "model_used", "created_at"]
    list_filter = ["outcome", "signal_evolution"]
    list_select_related = ["position"]
