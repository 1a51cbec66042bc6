from django.urls import path

from trading.home import views

urlpatterns = [
    path("home.json", views.home_figures, name="home_figures"),
    path("notifications/", views.notification_list, name="notification_list"),
    path("notifications/read-all/", views.notification_read_all, name="notification_read_all"),
    path("notifications/preferences/", views.notification_preferences, name="notification_preferences"),
    path("notifications/<int:notification_id>/read/", views.notification_read, name="notification_read"),
]
