from django.urls import path

from trading.strategies import views

urlpatterns = [
    path("strategies/state/", views.strategy_state, name="strategy_state"),
    path("strategies/<int:strategy_id>/replay/", views.replay_start, name="replay_start"),
    path("strategies/replays/<int:job_id>/progress/", views.replay_progress, name="replay_job_progress"),
    path("strategies/replays/<int:job_id>/cancel/", views.replay_cancel, name="replay_job_cancel"),
    path("strategies/replays/<int:job_id>/resume/", views.replay_resume, name="replay_job_resume"),
]
