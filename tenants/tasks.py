"""The tenants app's Celery tasks, kept in its sub-domains; Celery's autodiscovery imports
this module, which registers them all."""

from .credentials.tasks import credentials_reconcile_sweep_task, credentials_reconcile_task
from .enforcement.tasks import tenant_reconcile_task, tenants_reconcile_sweep_task
from .identity.tasks import keycloak_directory_sync_task
from .quota.tasks import quota_grants_sweep_task
from .webhooks.tasks import webhook_deliveries_sweep_task, webhook_delivery_send_task
from .workloads.tasks import (
    workload_observe_task,
    workload_reconcile_task,
    workloads_observe_sweep_task,
    workloads_reconcile_sweep_task,
)

__all__ = [
    "credentials_reconcile_sweep_task",
    "credentials_reconcile_task",
    "keycloak_directory_sync_task",
    "quota_grants_sweep_task",
    "tenant_reconcile_task",
    "tenants_reconcile_sweep_task",
    "webhook_deliveries_sweep_task",
    "webhook_delivery_send_task",
    "workload_observe_task",
    "workload_reconcile_task",
    "workloads_observe_sweep_task",
    "workloads_reconcile_sweep_task",
]
