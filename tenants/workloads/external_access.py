"""How workloads are reached from outside the cluster, read from the settings once per build:
the fleet Gateway that publishes vCluster API servers, Keycloak sign-in to them, and SSH
through LoadBalancer Services (docs/workloads.md, "Reaching workloads from a laptop")."""

from __future__ import annotations

from django.conf import settings

from .kinds.base import ExternalAccess


def external_access() -> ExternalAccess:
    """The settings that say how workloads are reached from outside the cluster."""
    gateway_namespace, gateway_name = settings.VCLUSTER_GATEWAY.split("/")
    return ExternalAccess(
        vcluster_domain=settings.VCLUSTER_DOMAIN,
        gateway_namespace=gateway_namespace,
        gateway_name=gateway_name,
        gateway_listener=settings.VCLUSTER_GATEWAY_LISTENER,
        gateway_port=settings.VCLUSTER_GATEWAY_PORT,
        oidc_issuer=settings.OIDC_ISSUER_URL,
        oidc_client_id=settings.VCLUSTER_OIDC_CLIENT_ID,
        oidc_groups_prefix=settings.KUBERNETES_OIDC_GROUPS_PREFIX,
        ssh_load_balancer=settings.SSH_LOAD_BALANCER,
        ssh_sources=tuple(settings.SSH_SOURCE_RANGES),
    )
