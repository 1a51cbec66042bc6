from django.urls import path

from trading.book import api as book
from trading.health.views import HealthApi
from trading.market import api as market
from trading.pipeline import api as pipeline

urlpatterns = [
    path("health/", HealthApi.as_view(), name="api-health"),
    path("instruments/", market.InstrumentListApi.as_view(), name="api-instruments"),
    path("instruments/<str:symbol>/", market.InstrumentDetailApi.as_view(), name="api-instrument"),
    path("instruments/<str:symbol>/bars/", market.BarListApi.as_view(), name="api-bars"),
    path("instruments/<str:symbol>/features/", market.FeatureBundleApi.as_view(), name="api-features"),
    path("runs/", pipeline.RunListApi.as_view(), name="api-runs"),
    path("runs/<int:run_id>/", pipeline.RunDetailApi.as_view(), name="api-run"),
    path("stages/schemas/", pipeline.StageSchemasApi.as_view(), name="api-stage-schemas"),
    path("theses/", book.ThesisListApi.as_view(), name="api-theses"),
    path("theses/<int:thesis_id>/", book.ThesisDetailApi.as_view(), name="api-thesis"),
    path("theses/<int:thesis_id>/approve/", book.ThesisApproveApi.as_view(), name="api-thesis-approve"),
    path("theses/<int:thesis_id>/reject/", book.ThesisRejectApi.as_view(), name="api-thesis-reject"),
    path("positions/", book.PositionListApi.as_view(), name="api-positions"),
    path("orders/", book.OrderListApi.as_view(), name="api-orders"),
    path("orders/<int:order_id>/cancel/", book.OrderCancelApi.as_view(), name="api-order-cancel"),
    path("positions/<int:position_id>/close/", book.PositionCloseApi.as_view(), name="api-position-close"),
]
