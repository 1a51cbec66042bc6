from django.urls import path

from trading.pipeline import views

urlpatterns = [
    path("runs/rows/", views.run_list_rows, name="run_list_rows"),
    path("runs/<int:run_id>/report.md", views.run_report, name="run_report"),
    path("theses/<int:thesis_id>/report.md", views.thesis_report, name="thesis_report"),
]
