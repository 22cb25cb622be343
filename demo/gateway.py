"""The simulated fleet's gateway: what Envoy Gateway does for the routes the portal publishes,
played from the objects in the simulated fleet, under `/<SIMULATED_GATEWAY_PATH>/<hostname>/…`
of the portal itself (mounted only when the simulated fleet is the configured one).

A request goes to the HTTPRoute whose hostnames hold `<hostname>` (none: 404, as Envoy answers),
then through the SecurityPolicy targeting that route, by what the policy holds:

- `apiKeyAuth` (an inference endpoint): a key from its `extractFrom` headers
  (`Authorization: Bearer <key>` or `x-api-key`) matching one of the values of the Secrets it
  names (none, a wrong or a revoked one: 401 with a JSON error); a policy naming a missing
  Secret refuses every request (500), as Envoy Gateway's translation does. A key that passes has
  its last use recorded (the real gateway's metrics do not name the key: there, last use is not
  shown).
- `oidc` + `jwt` + `authorization` (a notebook): sign-in and group membership
  (`gateway_sign_in`).

Then the route's backend answers (`gateway_upstreams`): vLLM for an InferenceService's
predictor, the notebook's app for a Service whose pods a notebook's StatefulSet runs; nothing
ready behind the route: 503 "no healthy upstream".
"""

from __future__ import annotations

import base64
import binascii
import hmac
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from core.fleet import FleetGateway, get_gateway
from inventory.models import Cluster
from tenants.workloads.endpoint_keys import EndpointKey
from tenants.workloads.kinds.gateway_routes import HTTP_ROUTE, SECURITY_POLICY

from .gateway_sign_in import sign_in_refusal
from .gateway_upstreams import json_error, upstream

AUTH_FAILED = "Client authentication failed."


def _route(hostname: str) -> tuple[FleetGateway, dict[str, Any]] | None:
    """The route for `hostname`, and the gateway of the cluster it is on (each cluster has a
    gateway of its own; the hostnames are the fleet's)."""
    for cluster in Cluster.objects.in_service().values_list("slug", flat=True):
        gateway = get_gateway(cluster)
        routes = gateway.list(api_version=HTTP_ROUTE[0], kind=HTTP_ROUTE[1])
        for route in routes:
            if hostname in (route.get("spec") or {}).get("hostnames", []):
                return gateway, route
    return None


def _policy(gateway: FleetGateway, route: dict[str, Any]) -> dict[str, Any] | None:
    meta = route["metadata"]
    for policy in gateway.list(api_version=SECURITY_POLICY[0],
                                     kind=SECURITY_POLICY[1],
                                     namespace=meta["namespace"]):
        targets = (policy.get("spec") or {}).get("targetRefs") or []
        if any(t.get("kind") == "HTTPRoute" and t.get("name") == meta["name"] for t in targets):
            return policy
    return None


def _presented(request: HttpRequest, headers: list[str]) -> str:
    for header in headers:
        value = request.headers.get(header, "").strip()
        if header.lower() == "authorization" and value[:7].lower() == "bearer ":
            value = value[7:].strip()
        if value:
            return value
    return ""


def _client(request: HttpRequest, gateway: FleetGateway, policy: dict[str, Any],
            namespace: str) -> str | None:
    """The client id of the key the request carries, None when it carries no valid one; raises
    LookupError when the policy names a Secret that does not exist."""
    auth = policy.get("apiKeyAuth") or {}
    headers = [h for source in auth.get("extractFrom") or [] for h in source.get("headers") or []]
    presented = _presented(request, headers).encode()
    found = None
    for ref in auth.get("credentialRefs") or []:
        secret = gateway.get(api_version="v1", kind="Secret", name=ref["name"],
                                   namespace=ref.get("namespace") or namespace)
        if secret is None:
            raise LookupError(ref["name"])
        for client, value in (secret.get("data") or {}).items():
            try:
                key = base64.b64decode(value)
            except (binascii.Error, ValueError):
                continue
            if presented and hmac.compare_digest(key, presented) and found is None:
                found = client
    return found


def _record_use(client: str) -> None:
    key_id = client.removeprefix("key-")
    if key_id.isdigit():
        EndpointKey.objects.filter(pk=int(key_id), revoked_at__isnull=True).update(
            last_used_at=timezone.now())


def _key_refusal(request: HttpRequest, gateway: FleetGateway, policy: dict[str, Any],
                 namespace: str) -> HttpResponse | None:
    """`apiKeyAuth`: None when the request carries a valid key (its use recorded)."""
    try:
        client = _client(request, gateway, policy, namespace)
    except LookupError:
        return json_error(500, "The endpoint's key policy names a Secret that does not exist.")
    if client is None:
        response = json_error(401, AUTH_FAILED)
        response["WWW-Authenticate"] = 'Bearer realm="endpoint"'
        return response
    _record_use(client)
    return None


@csrf_exempt
def simulated_gateway(request: HttpRequest, hostname: str, path: str) -> HttpResponse:
    found = _route(hostname)
    if found is None:
        return json_error(404, f"No route for {hostname}.")
    gateway, route = found
    policy = (_policy(gateway, route) or {}).get("spec") or {}
    refused = None
    if policy.get("oidc"):
        refused = sign_in_refusal(request, policy)
    elif policy.get("apiKeyAuth"):
        refused = _key_refusal(request, gateway, policy, route["metadata"]["namespace"])
    return refused or upstream(request, gateway, route, path.strip("/"))
