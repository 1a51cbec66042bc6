"""The trading app's tables, one module per concept. Every model is importable from here, as
Django expects; a layer that may read only market data imports ``trading.models.market``."""

from trading.models.book import Account, BookPass, Order, Position, PositionMark, Thesis
from trading.models.desk import AuditEvent, DeskPermission, Heartbeat, Notification, NotificationPreference
from trading.models.market import (
    PRICE,
    CorporateAction,
    DailyBar,
    DataUpload,
    FeatureSnapshot,
    FundamentalsSnapshot,
    Instrument,
    MacroIndicator,
    NewsItem,
    ResearchSignal,
)
from trading.models.pipeline import AnalystNoteRecord, DebateRecord, HeuristicCitation, PipelineRun, StageRun
from trading.models.strategies import ReplayJob, Strategy, StrategyDirective, StrategyRun

__all__ = [
    "PRICE",
    "Account",
    "AnalystNoteRecord",
    "AuditEvent",
    "BookPass",
    "CorporateAction",
    "DailyBar",
    "DataUpload",
    "DebateRecord",
    "DeskPermission",
    "FeatureSnapshot",
    "FundamentalsSnapshot",
    "Heartbeat",
    "HeuristicCitation",
    "Instrument",
    "MacroIndicator",
    "NewsItem",
    "Notification",
    "NotificationPreference",
    "Order",
    "PipelineRun",
    "Position",
    "PositionMark",
    "ReplayJob",
    "ResearchSignal",
    "StageRun",
    "Strategy",
    "StrategyDirective",
    "StrategyRun",
    "Thesis",
]
