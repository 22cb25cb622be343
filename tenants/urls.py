from django.urls import path

from .credentials import views as credentials
from .dashboard import service_account_views as service_accounts
from .dashboard import views as access
from .enforcement import views as enforcement
from .quota import views as quota
from .webhooks import views as webhooks
from .workloads import endpoint_key_views as endpoint_keys
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
    path("t/<slug:slug>/workloads/new/", workloads.workload_new, name="workload-new"),
    path("t/<slug:slug>/workloads/new/<slug:kind>/", workloads.workload_launch,
         name="workload-launch"),
    path("t/<slug:slug>/workloads/new/<slug:kind>/check/", workloads.workload_launch_check,
         name="workload-launch-check"),
    path("t/<slug:slug>/workloads/<int:pk>/", workloads.workload_detail, name="workload-detail"),
    path("t/<slug:slug>/workloads/<int:pk>/gpu-use/", workloads.workload_gpu_use,
         name="workload-gpu-use"),
    path("t/<slug:slug>/workloads/<int:pk>/scale/", workloads.workload_scale,
         name="workload-scale"),
    path("t/<slug:slug>/workloads/<int:pk>/power/", workloads.workload_power,
         name="workload-power"),
    path("t/<slug:slug>/workloads/<int:pk>/delete/", workloads.workload_delete,
         name="workload-delete"),
    path("t/<slug:slug>/workloads/<int:pk>/kubeconfig/", workloads.workload_kubeconfig,
         name="workload-kubeconfig"),
    path("t/<slug:slug>/workloads/<int:pk>/keys/", endpoint_keys.endpoint_key_create,
         name="endpoint-key-create"),
    path("t/<slug:slug>/workloads/<int:pk>/keys/<int:key_id>/rotate/",
         endpoint_keys.endpoint_key_rotate, name="endpoint-key-rotate"),
    path("t/<slug:slug>/workloads/<int:pk>/keys/<int:key_id>/revoke/",
         endpoint_keys.endpoint_key_revoke, name="endpoint-key-revoke"),
    path("t/<slug:slug>/idle-gpus/", workloads.idle_gpus, name="idle-gpus"),
    path("t/<slug:slug>/workloads/<int:pk>/keep-running/", workloads.workload_keep_running,
         name="workload-keep-running"),
    path("t/<slug:slug>/workloads/<int:pk>/idle-undo/", workloads.workload_idle_undo,
         name="workload-idle-undo"),
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
    path("t/<slug:slug>/credentials/", credentials.credential_list, name="credential-list"),
    path("t/<slug:slug>/credentials/<slug:name>/", credentials.credential_detail,
         name="credential-detail"),
    path("t/<slug:slug>/credentials/<slug:name>/delete/", credentials.credential_delete,
         name="credential-delete"),
    path("t/<slug:slug>/members/", access.member_list, name="member-list"),
    path("t/<slug:slug>/webhooks/", webhooks.webhook_list, name="webhook-list"),
    path("t/<slug:slug>/webhooks/<int:pk>/", webhooks.webhook_detail, name="webhook-detail"),
    path("t/<slug:slug>/webhooks/<int:pk>/deliveries/<int:delivery_id>/redeliver/",
         webhooks.webhook_redeliver, name="webhook-redeliver"),
    path("t/<slug:slug>/webhooks/<int:pk>/<slug:action>/", webhooks.webhook_action,
         name="webhook-action"),
    # Platform admins: the hooks for every tenant (and every tenant's hooks listed).
    path("webhooks/", webhooks.webhook_list, name="webhooks"),
    path("webhooks/<int:pk>/", webhooks.webhook_detail, name="admin-webhook-detail"),
    path("webhooks/<int:pk>/deliveries/<int:delivery_id>/redeliver/",
         webhooks.webhook_redeliver, name="admin-webhook-redeliver"),
    path("webhooks/<int:pk>/<slug:action>/", webhooks.webhook_action,
         name="admin-webhook-action"),
    path("t/<slug:slug>/members/<int:pk>/", access.member_change, name="member-change"),
    path("t/<slug:slug>/service-accounts/", service_accounts.service_account_list,
         name="service-account-list"),
    path("t/<slug:slug>/service-accounts/<int:pk>/", service_accounts.service_account_change,
         name="service-account-change"),
    path("t/<slug:slug>/service-accounts/<int:pk>/tokens/",
         service_accounts.service_account_token_create, name="service-account-token-create"),
    path("t/<slug:slug>/service-accounts/<int:pk>/tokens/<int:token_id>/revoke/",
         service_accounts.service_account_token_revoke, name="service-account-token-revoke"),
]
