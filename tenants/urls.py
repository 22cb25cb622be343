from django.urls import path

from .access import views as access
from .enforcement import views as enforcement
from .quota import views as quota
from .workloads import views as workloads

app_name = "tenants"

urlpatterns = [
    path("dashboard/", access.home, name="home"),
    path("workloads/", workloads.workloads_home, name="workloads"),
    path("quota/", quota.quota_home, name="quota"),
    path("requests/", quota.request_queue, name="requests"),
    path("tenants/", access.tenant_list, name="tenant-list"),
    path("t/<slug:slug>/", access.dashboard, name="dashboard"),
    path("t/<slug:slug>/workloads/", workloads.workload_list, name="workload-list"),
    path("t/<slug:slug>/cluster-status/", enforcement.cluster_status, name="cluster-status"),
    path("t/<slug:slug>/quota/", quota.quota_detail, name="quota-detail"),
    path("t/<slug:slug>/quota/requests/", quota.quota_request_list, name="quota-request-list"),
    path(
        "t/<slug:slug>/quota/requests/new/",
        quota.quota_request_create,
        name="quota-request-create",
    ),
    path(
        "t/<slug:slug>/quota/requests/preview/",
        quota.quota_request_preview,
        name="quota-request-preview",
    ),
    path(
        "t/<slug:slug>/quota/requests/<int:pk>/",
        quota.quota_request_detail,
        name="quota-request-detail",
    ),
    path(
        "t/<slug:slug>/quota/requests/<int:pk>/withdraw/",
        quota.quota_request_withdraw,
        name="quota-request-withdraw",
    ),
    path("t/<slug:slug>/members/", access.member_list, name="member-list"),
    path("t/<slug:slug>/members/<int:pk>/", access.member_change, name="member-change"),
]
