from django.urls import path

from . import views

app_name = "inventory"

urlpatterns = [
    path("", views.fleet_overview, name="fleet"),
]
