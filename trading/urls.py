from django.urls import path

from trading import views, views_book, views_health

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("health/", views_health.health, name="health"),
    path("instruments/<str:symbol>/", views.instrument_detail, name="instrument_detail"),
    path("runs/", views.run_list, name="run_list"),
    path("runs/start/", views.run_start, name="run_start"),
    path("runs/<int:run_id>/", views.run_detail, name="run_detail"),
    path("theses/", views_book.thesis_queue, name="thesis_queue"),
    path("theses/<int:thesis_id>/", views_book.thesis_detail, name="thesis_detail"),
    path("theses/<int:thesis_id>/decide/", views_book.thesis_decide, name="thesis_decide"),
    path("portfolio/", views_book.portfolio, name="portfolio"),
    path("strategies/", views_book.strategy_list, name="strategy_list"),
    path("strategies/<int:strategy_id>/start/", views_book.strategy_start, name="strategy_start"),
    path("positions/<int:position_id>/close/", views_book.position_close, name="position_close"),
]
