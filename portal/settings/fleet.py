"""The fleet: the Kubernetes backend, tenants on the cluster, health and remediation, and who
may read the portal's metrics."""

from pathlib import Path

import environ

from .base import CELERY_BEAT_SCHEDULE, PRODUCTION, env

_POD_NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")

# The fleet: "simulated" (demo, state in the database) or "kubernetes" (official client).
FLEET_BACKEND = env.str("FLEET_BACKEND", default="simulated")
if FLEET_BACKEND not in {"simulated", "kubernetes"}:
    raise environ.ImproperlyConfigured("FLEET_BACKEND must be 'simulated' or 'kubernetes'.")
FLEET_GATEWAYS = {
    "kubernetes": "core.fleet.kubernetes.KubernetesFleetGateway",
    "simulated": "demo.fleet.simulated.SimulatedFleetGateway",
}
# How the gateway reaches each cluster (the inventory's clusters; see core.fleet).
FLEET_CONNECTIONS = "inventory.services.connections.cluster_connection"
# Told when a cluster stops answering, or answers again (records it, with the backoff).
FLEET_REACHABILITY = "inventory.services.reachability.cluster_reachability_report"
# A cluster that does not answer is tried again after this many seconds, doubled after each
# failure up to the most; every in-service cluster is probed every CLUSTER_PROBE_SECONDS.
CLUSTER_PROBE_SECONDS = env.float("CLUSTER_PROBE_SECONDS", default=30.0)
CLUSTER_BACKOFF_SECONDS = env.float("CLUSTER_BACKOFF_SECONDS", default=10.0)
CLUSTER_BACKOFF_MAX_SECONDS = env.float("CLUSTER_BACKOFF_MAX_SECONDS", default=300.0)
# Queued (with the cluster's slug, on its queue) when a cluster answers again.
CLUSTER_RECOVERY_TASKS = (
    "inventory.tasks.cluster_sync_task",
    "tenants.workloads.tasks.workloads_observe_sweep_task",
    "tenants.workloads.tasks.workloads_reconcile_sweep_task",
    "tenants.enforcement.tasks.tenants_reconcile_sweep_task",
)
# The portal's own credentials: clusters whose credentials are "environment" use them.
FLEET_KUBECONFIG = env.str("KUBECONFIG", default="")
FLEET_KUBE_CONTEXT = env.str("KUBE_CONTEXT", default="")
FLEET_REQUEST_TIMEOUT = env.float("FLEET_REQUEST_TIMEOUT", default=15.0)
FLEET_FIELD_MANAGER = env.str("FLEET_FIELD_MANAGER", default="ai-factory-portal")
FLEET_LIST_PAGE_SIZE = env.int("FLEET_LIST_PAGE_SIZE", default=500)
# The portal's own ServiceAccount: tenants' namespaces bind it to FLEET_SECRETS_CLUSTER_ROLE.
# Inside a pod its namespace is the one Kubernetes mounts with the account's token.
FLEET_SERVICE_ACCOUNT = env.str("FLEET_SERVICE_ACCOUNT", default="portal")
FLEET_SERVICE_ACCOUNT_NAMESPACE = env.str("FLEET_SERVICE_ACCOUNT_NAMESPACE", default="") or (
    _POD_NAMESPACE_FILE.read_text().strip() if _POD_NAMESPACE_FILE.is_file() else ""
) or "ai-factory-portal"
FLEET_SECRETS_CLUSTER_ROLE = env.str(
    "FLEET_SECRETS_CLUSTER_ROLE", default="ai-factory-portal-tenant-secrets"
)
FLEET_SIMULATED_READY_SECONDS = env.float("FLEET_SIMULATED_READY_SECONDS", default=20.0)

# Tenants on the cluster: who may reach a tenant's pods, and what its Keycloak group may do.
TENANT_INGRESS_NAMESPACE = env.str("TENANT_INGRESS_NAMESPACE", default="ingress-gateway")
TENANT_EDIT_CLUSTER_ROLE = env.str("TENANT_EDIT_CLUSTER_ROLE", default="edit")
# The API server's --oidc-groups-prefix: Keycloak group "/tenants/x/member" is
# "oidc:/tenants/x/member" in RBAC (the tenant's RoleBindings name these groups).
KUBERNETES_OIDC_GROUPS_PREFIX = env.str("KUBERNETES_OIDC_GROUPS_PREFIX", default="oidc:")
# The cluster's DNS domain: in-cluster addresses of workloads (<svc>.<ns>.svc.<domain>).
KUBERNETES_CLUSTER_DOMAIN = env.str("KUBERNETES_CLUSTER_DOMAIN", default="cluster.local")
# Reaching workloads from outside: vCluster API servers through the fleet Gateway's TLS
# passthrough listener (by SNI), SSH through a LoadBalancer Service per VM / login node.
VCLUSTER_DOMAIN = env.str("VCLUSTER_DOMAIN", default="").strip(".")
VCLUSTER_GATEWAY = env.str("VCLUSTER_GATEWAY", default="ingress-gateway/fleet")
if VCLUSTER_GATEWAY.count("/") != 1 or not all(VCLUSTER_GATEWAY.split("/")):
    raise environ.ImproperlyConfigured("VCLUSTER_GATEWAY must be <namespace>/<name>.")
VCLUSTER_GATEWAY_LISTENER = env.str("VCLUSTER_GATEWAY_LISTENER", default="tls-passthrough")
VCLUSTER_GATEWAY_PORT = env.int("VCLUSTER_GATEWAY_PORT", default=443)
VCLUSTER_OIDC_CLIENT_ID = env.str("VCLUSTER_OIDC_CLIENT_ID", default="kubernetes")
SSH_LOAD_BALANCER = env.bool("SSH_LOAD_BALANCER", default=True)
SSH_SOURCE_RANGES = env.list("SSH_SOURCE_RANGES", default=[]) or ["0.0.0.0/0", "::/0"]
# Inference endpoints outside the cluster: through the fleet's Gateway API Gateway
# ("<namespace>/<name>") and its HTTPS listener, each at "<name>-<tenant>.<INFERENCE_DOMAIN>"
# (the listener's wildcard certificate covers them), behind an API-key SecurityPolicy. No domain:
# not exposed. The simulated fleet serves them itself, under a demo domain.
INFERENCE_GATEWAY = env.str("INFERENCE_GATEWAY", default="ingress-gateway/fleet")
if INFERENCE_GATEWAY and INFERENCE_GATEWAY.count("/") != 1:
    raise environ.ImproperlyConfigured("INFERENCE_GATEWAY is <namespace>/<name> of a Gateway.")
INFERENCE_GATEWAY_LISTENER = env.str("INFERENCE_GATEWAY_LISTENER", default="https")
INFERENCE_DOMAIN = env.str("INFERENCE_DOMAIN", default="") or (
    "endpoints.demo.internal" if FLEET_BACKEND == "simulated" else ""
)
# Notebooks: through the same kind of Gateway listener, each at "<name>-<tenant>.<NOTEBOOK_DOMAIN>",
# behind an Envoy Gateway OIDC SecurityPolicy: Keycloak sign-in with NOTEBOOK_OIDC_CLIENT_ID (a
# confidential client whose secret the tenant reconcile puts in each tenant namespace), and only
# the tenant's owners and members get in. No domain: reached with `kubectl port-forward` only.
NOTEBOOK_GATEWAY = env.str("NOTEBOOK_GATEWAY", default="") or INFERENCE_GATEWAY
if NOTEBOOK_GATEWAY and NOTEBOOK_GATEWAY.count("/") != 1:
    raise environ.ImproperlyConfigured("NOTEBOOK_GATEWAY is <namespace>/<name> of a Gateway.")
NOTEBOOK_GATEWAY_LISTENER = env.str("NOTEBOOK_GATEWAY_LISTENER", default="https")
NOTEBOOK_DOMAIN = env.str("NOTEBOOK_DOMAIN", default="").strip(".") or (
    "notebooks.demo.internal" if FLEET_BACKEND == "simulated" else ""
)
NOTEBOOK_OIDC_CLIENT_ID = env.str("NOTEBOOK_OIDC_CLIENT_ID", default="notebooks")
NOTEBOOK_OIDC_CLIENT_SECRET = env.str("NOTEBOOK_OIDC_CLIENT_SECRET", default="")
# Each person's home volume in a tenant (one PVC, mounted by every notebook they launch there).
NOTEBOOK_HOME_GIB = env.int("NOTEBOOK_HOME_GIB", default=50)
NOTEBOOK_HOME_STORAGE_CLASS = env.str("NOTEBOOK_HOME_STORAGE_CLASS", default="")
NOTEBOOK_HOME_ACCESS_MODE = env.str("NOTEBOOK_HOME_ACCESS_MODE", default="ReadWriteOnce")
if NOTEBOOK_HOME_ACCESS_MODE not in {"ReadWriteOnce", "ReadWriteMany", "ReadWriteOncePod"}:
    raise environ.ImproperlyConfigured(
        "NOTEBOOK_HOME_ACCESS_MODE is ReadWriteOnce, ReadWriteMany or ReadWriteOncePod.")
# A notebook nobody used through the gateway for this many hours is stopped (per tenant in its
# idle policy; 0: never), checked every NOTEBOOK_CULL_SWEEP_SECONDS.
NOTEBOOK_IDLE_HOURS = env.int("NOTEBOOK_IDLE_HOURS", default=24)
NOTEBOOK_CULL_SWEEP_SECONDS = env.float("NOTEBOOK_CULL_SWEEP_SECONDS", default=900.0)
# Where the simulated fleet's gateway answers, under the portal (demo/gateway.py).
SIMULATED_GATEWAY_PATH = "simulated-gateway"
# The values of the portal's Kueue WorkloadPriorityClasses: when a queue's quota is short, a
# workload of a higher value preempts one of a lower (serving > interactive > batch by default).
KUEUE_PRIORITIES = {
    "serving": env.int("KUEUE_PRIORITY_SERVING", default=1000),
    "interactive": env.int("KUEUE_PRIORITY_INTERACTIVE", default=500),
    "batch": env.int("KUEUE_PRIORITY_BATCH", default=100),
}
for _key, _value in KUEUE_PRIORITIES.items():
    if not -(2**31) <= _value < 2**31:
        raise environ.ImproperlyConfigured(f"KUEUE_PRIORITY_{_key.upper()} must be a 32-bit int.")

PROMETHEUS_URL = env.str("PROMETHEUS_URL", default="")
PROMETHEUS_TIMEOUT = env.float("PROMETHEUS_TIMEOUT", default=5.0)

# Fleet health: how often the cluster is read and DCGM signals are ingested, how far back a
# finding counts, and the remediation policy (a severity, or "off"): cordon the Kubernetes
# node at REMEDIATION_CORDON_AT or worse, drain it to maintenance at REMEDIATION_DRAIN_AT.
INVENTORY_SYNC_INTERVAL = env.int("INVENTORY_SYNC_INTERVAL", default=300)
HEALTH_INGEST_INTERVAL = env.int("HEALTH_INGEST_INTERVAL", default=60)
HEALTH_LOOKBACK_MINUTES = env.int("HEALTH_LOOKBACK_MINUTES", default=10)
REMEDIATION_CORDON_AT = env.str("REMEDIATION_CORDON_AT", default="warning")
REMEDIATION_DRAIN_AT = env.str("REMEDIATION_DRAIN_AT", default="critical")
for _name in ("REMEDIATION_CORDON_AT", "REMEDIATION_DRAIN_AT"):
    if vars()[_name] not in {"info", "warning", "critical", "off"}:
        raise environ.ImproperlyConfigured(f"{_name} must be info, warning, critical or off.")
# XIDs that mean the GPU needs a reset or repair (ECC, fallen off the bus, NVLink, GSP).
REMEDIATION_CRITICAL_XIDS = env.list(
    "REMEDIATION_CRITICAL_XIDS", cast=int, default=[48, 63, 64, 74, 79, 92, 94, 95, 119, 120]
)
CELERY_BEAT_SCHEDULE |= {
    # Notebooks nobody used through the gateway for their tenant's hours, stopped.
    "notebooks-cull-sweep": {
        "task": "tenants.workloads.tasks.notebooks_cull_sweep_task",
        "schedule": NOTEBOOK_CULL_SWEEP_SECONDS,
    },
    "inventory-cluster-sync": {
        "task": "inventory.tasks.clusters_sync_sweep_task",
        "schedule": float(INVENTORY_SYNC_INTERVAL),
    },
    "inventory-clusters-probe": {
        "task": "inventory.tasks.clusters_probe_sweep_task",
        "schedule": CLUSTER_PROBE_SECONDS,
    },
    "inventory-health-ingest": {
        "task": "inventory.tasks.health_ingest_task",
        "schedule": float(HEALTH_INGEST_INTERVAL),
    },
}
PROMETHEUS_EXPORT_MIGRATIONS = False
# Who may read /metrics and the details of /readyz: a scraper presenting this bearer token, or
# a direct peer (REMOTE_ADDR, never a forwarded address) in one of these networks. Signed-in
# platform admins also see /readyz's details. Everyone else gets 403 from /metrics and only the
# status from /readyz.
METRICS_BEARER_TOKEN = env.str("METRICS_BEARER_TOKEN", default="")
METRICS_ALLOWED_NETWORKS = env.list(
    "METRICS_ALLOWED_NETWORKS", default=[] if PRODUCTION else ["127.0.0.1/32", "::1/128"]
)
