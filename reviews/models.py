"""Reviews of closed positions (stage 12). Later: daily/weekly/epoch retrospectives and critiques."""

from __future__ import annotations

from django.db import models


class TradeReview(models.Model):
    """Outcome, PnL and signal evolution are facts written by code; critique and lessons by a model."""

    position = models.OneToOneField("trading.Position", on_delete=models.CASCADE, related_name="review")
    outcome = models.CharField(max_length=8)
    realised_pnl = models.DecimalField(max_digits=18, decimal_places=2)
    signal_evolution = models.CharField(max_length=16)
    thesis_vs_outcome = models.JSONField(default=dict)
    critique = models.TextField()
    lessons = models.JSONField(default=list)
    model_used = models.CharField(max_length=200)
    memory_entry = models.OneToOneField(
        "agents.MemoryEntry", on_delete=models.SET_NULL, null=True, blank=True, related_name="review"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"review of position {self.position_id}: {self.outcome}"
