"""The simulated fleet's gateway: what Envoy Gateway does for an inference endpoint, played from
the objects in the simulated fleet, under `/<SIMULATED_GATEWAY_PATH>/<hostname>/…` of the
portal itself (mounted only when the simulated fleet is the configured one).

A request goes to the HTTPRoute whose hostnames hold `<hostname>` (none: 404, as Envoy answers);
a SecurityPolicy targeting that route with `apiKeyAuth` wants a key from its `extractFrom`
headers (`Authorization: Bearer <key>` or `x-api-key`) matching one of the values of the Secrets
it names (none, a wrong or a revoked one: 401 with a JSON error); a policy naming a missing
Secret refuses every request (500), as Envoy Gateway's translation does. Then vLLM is played:
`GET /v1/models` and `POST /v1/chat/completions` answer as its OpenAI-compatible server, with a
canned reply naming the model. A key that passes has its last use recorded (the real gateway's
metrics do not name the key: there, last use is not shown).
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import time
from typing import Any

from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from core.fleet import get_gateway
from tenants.workloads.endpoint_keys import EndpointKey
from tenants.workloads.kinds.inference import exposure
from tenants.workloads.kinds.inference.spec import INFERENCE_SERVICE

AUTH_FAILED = "Client authentication failed."


def _error(status: int, message: str) -> JsonResponse:
    return JsonResponse({"error": {"code": status, "message": message}}, status=status)


def _route(hostname: str) -> dict[str, Any] | None:
    routes = get_gateway().list(api_version=exposure.HTTP_ROUTE[0], kind=exposure.HTTP_ROUTE[1])
    return next((r for r in routes if hostname in (r.get("spec") or {}).get("hostnames", [])),
                None)


def _policy(route: dict[str, Any]) -> dict[str, Any] | None:
    meta = route["metadata"]
    for policy in get_gateway().list(api_version=exposure.SECURITY_POLICY[0],
                                     kind=exposure.SECURITY_POLICY[1],
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


def _client(request: HttpRequest, policy: dict[str, Any], namespace: str) -> str | None:
    """The client id of the key the request carries, None when it carries no valid one; raises
    LookupError when the policy names a Secret that does not exist."""
    auth = policy["spec"].get("apiKeyAuth") or {}
    headers = [h for source in auth.get("extractFrom") or [] for h in source.get("headers") or []]
    presented = _presented(request, headers).encode()
    found = None
    for ref in auth.get("credentialRefs") or []:
        secret = get_gateway().get(api_version="v1", kind="Secret", name=ref["name"],
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


def _serving(route: dict[str, Any]) -> str | None:
    """The model the route's backend serves, when its InferenceService is ready."""
    backends = [b for rule in route["spec"].get("rules") or []
                for b in rule.get("backendRefs") or []]
    if not backends:
        return None
    name = backends[0]["name"].removesuffix("-predictor")
    service = get_gateway().get(api_version=INFERENCE_SERVICE[0], kind=INFERENCE_SERVICE[1],
                                name=name, namespace=route["metadata"]["namespace"])
    conditions = ((service or {}).get("status") or {}).get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    return name if ready else None


def _vllm(request: HttpRequest, path: str, model: str) -> JsonResponse:
    if path == "v1/models" and request.method == "GET":
        return JsonResponse({"object": "list", "data": [
            {"id": model, "object": "model", "created": int(time.time()), "owned_by": "vllm",
             "root": model}]})
    if path == "v1/chat/completions" and request.method == "POST":
        try:
            body = json.loads(request.body or b"{}")
        except ValueError:
            return _error(400, "The body is not JSON.")
        asked = body.get("model") if isinstance(body, dict) else None
        if asked != model:
            return _error(404, f"The model `{asked}` does not exist.")
        reply = f"Hello from {model}, served by the simulated fleet."
        return JsonResponse({
            "id": f"chatcmpl-{int(time.time() * 1000)}", "object": "chat.completion",
            "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": reply}}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 10, "total_tokens": 22},
        })
    return _error(404, "Not Found")


@csrf_exempt
def simulated_gateway(request: HttpRequest, hostname: str, path: str) -> JsonResponse:
    route = _route(hostname)
    if route is None:
        return _error(404, f"No route for {hostname}.")
    policy = _policy(route)
    if policy is not None and (policy.get("spec") or {}).get("apiKeyAuth"):
        try:
            client = _client(request, policy, route["metadata"]["namespace"])
        except LookupError:
            return _error(500, "The endpoint's key policy names a Secret that does not exist.")
        if client is None:
            response = _error(401, AUTH_FAILED)
            response["WWW-Authenticate"] = 'Bearer realm="endpoint"'
            return response
        _record_use(client)
    model = _serving(route)
    if model is None:
        return _error(503, "no healthy upstream")
    return _vllm(request, path.strip("/"), model)
