from django.urls import path

from trading.book import views

urlpatterns = [
    path("orders/", views.order_list, name="order_list"),
    path("orders/<int:order_id>/cancel/", views.order_cancel, name="order_cancel"),
]
