from django.urls import include, path

from trading.book import views as book
from trading.home import views as home
from trading.market import views as market
from trading.pipeline import views as pipeline
from trading.strategies import views as strategies

urlpatterns = [
    path("", home.home, name="dashboard"),
    path("instruments/", market.dashboard, name="instrument_list"),
    path("health/", home.health, name="health"),
    path("instruments/<str:symbol>/", market.instrument_detail, name="instrument_detail"),
    path("runs/", pipeline.run_list, name="run_list"),
    path("runs/start/", pipeline.run_start, name="run_start"),
    path("runs/<int:run_id>/", pipeline.run_detail, name="run_detail"),
    path("theses/", book.thesis_queue, name="thesis_queue"),
    path("theses/<int:thesis_id>/", book.thesis_detail, name="thesis_detail"),
    path("theses/<int:thesis_id>/decide/", book.thesis_decide, name="thesis_decide"),
    path("portfolio/", book.portfolio, name="portfolio"),
    path("strategies/", strategies.strategy_list, name="strategy_list"),
    path("strategies/<int:strategy_id>/start/", strategies.strategy_start, name="strategy_start"),
    path("positions/<int:position_id>/close/", book.position_close, name="position_close"),
    path("", include("trading.home.urls")),
    path("", include("trading.book.urls_extra")),
    path("", include("trading.market.urls_extra")),
    path("", include("trading.strategies.urls_extra")),
    path("", include("trading.pipeline.urls_extra")),
]
