from django.urls import path

from . import views

app_name = "tenants"

urlpatterns = [
    path("dashboard/", views.home, name="home"),
    path("workloads/", views.workloads_home, name="workloads"),
    path("quota/", views.quota_home, name="quota"),
    path("requests/", views.request_queue, name="requests"),
    path("t/<slug:slug>/", views.dashboard, name="dashboard"),
    path("t/<slug:slug>/workloads/", views.workload_list, name="workload-list"),
    path("t/<slug:slug>/quota/", views.quota_detail, name="quota-detail"),
]
