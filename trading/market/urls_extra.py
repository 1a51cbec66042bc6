from __future__ import annotations

from django.urls import path

from trading.market import upload_views

urlpatterns = [
    path("data/upload/", upload_views.upload_page, name="data_upload"),
    path("data/upload/<int:upload_id>/", upload_views.upload_detail, name="data_upload_detail"),
    path("data/upload/<int:upload_id>/confirm/", upload_views.upload_confirm, name="data_upload_confirm"),
    path("data/upload/<int:upload_id>/discard/", upload_views.upload_discard, name="data_upload_discard"),
]
