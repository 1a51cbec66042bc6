"""Every model call, and the memory the agents read."""

from __future__ import annotations

from django.db import models


class ModelCall(models.Model):
    """One attempt at one model call: enough to audit it, price it and replay it offline."""

    run = models.ForeignKey(
        "trading.PipelineRun", on_delete=models.CASCADE, null=True, blank=True, related_name="model_calls"
    )
    role = models.CharField(max_length=32)
    symbol = models.CharField(max_length=32)
    tier = models.CharField(max_length=8)
    provider = models.CharField(max_length=32)
    model = models.CharField(max_length=100)
    prompt_key = models.CharField(max_length=64, db_index=True, help_text="sha256 of role, system and prompt")
    system = models.TextField()
    prompt = models.TextField()
    reply = models.TextField(blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    latency_ms = models.FloatField(default=0)
    ok = models.BooleanField()
    error = models.TextField(blank=True)
    attempt = models.PositiveSmallIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.role} {self.provider}/{self.model} {'ok' if self.ok else 'error'}"


class MemoryEntry(models.Model):
    """A lesson or note the agents may be shown. Written by the reviewer (issue 4) and by hand."""

    kind = models.CharField(max_length=16, default="note")
    symbol = models.CharField(max_length=32, blank=True)
    text = models.TextField()
    tags = models.JSONField(default=dict, blank=True)
    created_on = models.DateField()
    created_at = models.DateTimeField(auto_now_add=True)
    scope = models.CharField(
        max_length=64,
        default="live",
        db_index=True,
        help_text='who recalls it: "live" (every live run), or "replay:<account id>" (that replay\'s runs only)',
    )

    class Meta:
        ordering = ["id"]
        verbose_name_plural = "memory entries"

    def __str__(self) -> str:
        return f"[{self.kind}] {self.symbol}: {self.text[:60]}"
