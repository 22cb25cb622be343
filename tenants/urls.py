from django.urls import path

from . import views

app_name = "tenants"

urlpatterns = [
    path("dashboard/", views.home, name="home"),
    path("workloads/", views.workloads_home, name="workloads"),
    path("quota/", views.quota_home, name="quota"),
    path("requests/", views.request_queue, name="requests"),
    path("tenants/", views.tenant_list, name="tenant-list"),
    path("t/<slug:slug>/", views.dashboard, name="dashboard"),
    path("t/<slug:slug>/workloads/", views.workload_list, name="workload-list"),
    path("t/<slug:slug>/cluster-status/", views.cluster_status, name="cluster-status"),
    path("t/<slug:slug>/quota/", views.quota_detail, name="quota-detail"),
    path("t/<slug:slug>/quota/requests/", views.quota_request_list, name="quota-request-list"),
    path(
        "t/<slug:slug>/quota/requests/new/",
        views.quota_request_create,
        name="quota-request-create",
    ),
    path(
        "t/<slug:slug>/quota/requests/preview/",
        views.quota_request_preview,
        name="quota-request-preview",
    ),
    path(
        "t/<slug:slug>/quota/requests/<int:pk>/",
        views.quota_request_detail,
        name="quota-request-detail",
    ),
    path(
        "t/<slug:slug>/quota/requests/<int:pk>/withdraw/",
        views.quota_request_withdraw,
        name="quota-request-withdraw",
    ),
    path("t/<slug:slug>/members/", views.member_list, name="member-list"),
    path("t/<slug:slug>/members/<int:pk>/", views.member_change, name="member-change"),
]
