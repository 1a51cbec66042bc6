from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Model
from django.http import HttpRequest
from simple_history.admin import SimpleHistoryAdmin

from agents.models import Heuristic, MemoryEntry, ModelCall
from agents.playbook import next_code
from security.history import HistoryAdmin, NoDeleteAdminMixin


@admin.register(ModelCall)
class ModelCallAdmin(HistoryAdmin):
    list_display = ["created_at", "role", "symbol", "provider", "model", "ok", "input_tokens", "output_tokens", "cost"]
    list_filter = ["provider", "role", "ok"]
    search_fields = ["symbol", "prompt_key"]


@admin.register(MemoryEntry)
class MemoryEntryAdmin(admin.ModelAdmin):
    list_display = ["created_on", "kind", "symbol", "text"]
    list_filter = ["kind"]
    search_fields = ["symbol", "text"]


@admin.register(Heuristic)
class HeuristicAdmin(NoDeleteAdminMixin, SimpleHistoryAdmin):
    """The playbook, edited here: every edit is kept with who made it ("History"), and no rule is ever
    deleted (citations point at it); retire it instead. A code never changes once written."""

    list_display = ["code", "status", "factor", "text", "origin", "updated_at"]
    list_filter = ["status", "factor"]
    search_fields = ["code", "text", "origin"]
    history_list_display = ["status", "factor", "text"]

    def get_readonly_fields(self, request: HttpRequest, obj: Model | None = None) -> list[str]:
        # Citations name the rule by its code: renaming it would re-point them.
        return ["code", "created_at", "updated_at"] if obj is not None else ["created_at", "updated_at"]

    def get_changeform_initial_data(self, request: HttpRequest) -> dict[str, Any]:
        return {"code": next_code(), "origin": "admin", **super().get_changeform_initial_data(request)}
