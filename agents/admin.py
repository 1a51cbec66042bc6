from django.contrib import admin

from agents.models import MemoryEntry, ModelCall
from security.history import HistoryAdmin


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
