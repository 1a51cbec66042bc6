"""Research sessions, their trials and shortlisted candidates in the admin: read-only. They are
written by the research loop (and its journal) only; an edit here would make a row disagree with the
journal that replays it."""

from django.contrib import admin

from research.models import ResearchCandidate, ResearchSession, ResearchTrial
from security.history import HistoryAdmin


@admin.register(ResearchSession)
class ResearchSessionAdmin(HistoryAdmin):
    list_display = ["id", "goal", "strategy", "proposer", "provider", "status", "n_trials", "pbo", "created_at"]
    list_filter = ["status", "proposer", "strategy"]
    list_select_related = ["created_by"]
    search_fields = ["goal", "strategy"]
    date_hierarchy = "created_at"


@admin.register(ResearchTrial)
class ResearchTrialAdmin(HistoryAdmin):
    list_display = ["session", "number", "proposer", "kind", "strategy", "decision", "oos_sharpe", "dsr", "promotable"]
    list_filter = ["decision", "kind", "promotable"]
    list_select_related = ["session"]
    search_fields = ["strategy", "rationale", "reason"]


@admin.register(ResearchCandidate)
class ResearchCandidateAdmin(HistoryAdmin):
    list_display = ["session", "rank", "trial", "config_path", "created_at"]
    list_select_related = ["session", "trial"]
