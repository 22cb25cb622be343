"""Where the fleet's gateway publishes workloads outside the cluster, read from the settings
once per build: inference endpoints behind API keys, notebooks behind Keycloak sign-in. The
simulated fleet's gateway is a path of the portal itself."""

from __future__ import annotations

from django.conf import settings

from ..enforcement.manifests.notebook_sign_in import NOTEBOOK_OIDC_SECRET
from .kinds.base import Exposure, OidcGate


def _exposure(gateway: str, listener: str, domain: str, **extra) -> Exposure:
    namespace, name = gateway.split("/")
    simulated = settings.FLEET_BACKEND == "simulated"
    return Exposure(
        gateway_namespace=namespace, gateway_name=name, listener=listener, domain=domain,
        url_prefix=(f"{settings.PORTAL_URL.rstrip('/')}/{settings.SIMULATED_GATEWAY_PATH}"
                    if simulated else ""),
        **extra,
    )


def endpoint_exposure(kind_key: str) -> Exposure | None:
    """Where the fleet's gateway publishes an inference endpoint (its keys are the reconcile's
    to add); None for other kinds, or when no gateway and domain are configured."""
    if kind_key != "inference" or not settings.INFERENCE_GATEWAY or not settings.INFERENCE_DOMAIN:
        return None
    return _exposure(settings.INFERENCE_GATEWAY, settings.INFERENCE_GATEWAY_LISTENER,
                     settings.INFERENCE_DOMAIN)


def notebook_oidc_issuer() -> str:
    """The realm notebooks sign in with: Keycloak's; in the simulated fleet without one, the
    portal itself (its simulated gateway signs people in with their portal session)."""
    if settings.OIDC_ISSUER_URL:
        return settings.OIDC_ISSUER_URL
    return settings.PORTAL_URL.rstrip("/") if settings.FLEET_BACKEND == "simulated" else ""


def notebook_exposure(*, allowed_groups: tuple[str, ...]) -> Exposure | None:
    """Where the fleet's gateway publishes a notebook, behind Keycloak sign-in that admits only
    tokens naming one of `allowed_groups` (the tenant's owner and member group paths, as
    Keycloak puts them in tokens: without the Kubernetes prefix). None without a gateway and
    domain, or without a realm to sign in with."""
    issuer = notebook_oidc_issuer()
    if not settings.NOTEBOOK_GATEWAY or not settings.NOTEBOOK_DOMAIN or not issuer:
        return None
    gate = OidcGate(
        issuer=issuer,
        client_id=settings.NOTEBOOK_OIDC_CLIENT_ID,
        client_secret_name=NOTEBOOK_OIDC_SECRET,
        jwks_uri=settings.OIDC_OP_JWKS_ENDPOINT or f"{issuer}/protocol/openid-connect/certs",
        allowed_groups=tuple(allowed_groups),
    )
    return _exposure(settings.NOTEBOOK_GATEWAY, settings.NOTEBOOK_GATEWAY_LISTENER,
                     settings.NOTEBOOK_DOMAIN, oidc=gate)
