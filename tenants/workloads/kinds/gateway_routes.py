"""Publishing a workload through the fleet's Gateway API Gateway (inference endpoints,
notebooks): its hostname under the exposure's domain and the HTTPRoute on the Gateway's HTTPS
listener. The Envoy Gateway SecurityPolicy guarding each route is the kind's own (API keys for
endpoints, OIDC sign-in for notebooks)."""

from __future__ import annotations

import hashlib

from .base import BuildContext, Manifest

HTTP_ROUTE = ("gateway.networking.k8s.io/v1", "HTTPRoute")
SECURITY_POLICY = ("gateway.envoyproxy.io/v1alpha1", "SecurityPolicy")
GATEWAY_GROUP = "gateway.networking.k8s.io"
MAX_LABEL = 63


def hostname(ctx: BuildContext, name: str) -> str:
    """`<name>-<tenant>.<domain>`: one DNS label under the domain (a wildcard certificate
    covers one label), shortened with a digest when the two names are too long together."""
    assert ctx.exposure is not None
    label = f"{name}-{ctx.tenant_slug}"
    if len(label) > MAX_LABEL:
        digest = hashlib.sha256(label.encode()).hexdigest()[:8]
        label = f"{label[:MAX_LABEL - 9].rstrip('-')}-{digest}"
    return f"{label}.{ctx.exposure.domain}"


def target(route: str) -> dict[str, str]:
    """A SecurityPolicy's `targetRefs` entry for the HTTPRoute `route`."""
    return {"group": GATEWAY_GROUP, "kind": HTTP_ROUTE[1], "name": route}


def http_route(ctx: BuildContext, name: str, service: str, port: int = 80) -> Manifest:
    """The HTTPRoute `name` on the exposure's HTTPS listener (which terminates TLS with its
    wildcard certificate): the hostname of `name`, all paths to `service`'s `port`."""
    exposure = ctx.exposure
    assert exposure is not None
    return {
        "apiVersion": HTTP_ROUTE[0],
        "kind": HTTP_ROUTE[1],
        "metadata": ctx.metadata(name),
        "spec": {
            "parentRefs": [{
                "group": GATEWAY_GROUP, "kind": "Gateway", "namespace": exposure.gateway_namespace,
                "name": exposure.gateway_name, "sectionName": exposure.listener,
            }],
            "hostnames": [hostname(ctx, name)],
            "rules": [{
                "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                "backendRefs": [{"kind": "Service", "name": service, "port": port}],
            }],
        },
    }
