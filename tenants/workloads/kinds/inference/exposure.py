"""An inference endpoint outside the cluster: HTTPS through the fleet's gateway, with API keys.

With `ctx.exposure` set, an endpoint also gets, in the tenant's namespace:

- a Gateway API `HTTPRoute` `<service>` attached to the fleet's Gateway's HTTPS listener (which
  terminates TLS with its wildcard certificate), hostname `<service>-<tenant>.<domain>` (one
  label under the domain, so the wildcard covers it), all paths to the predictor's Service
  `<service>-predictor` port 80 (vLLM's OpenAI-compatible server);
- an Envoy Gateway `SecurityPolicy` `<service>-api-keys` targeting that route with `apiKeyAuth`:
  the key is read from `Authorization` (`Bearer <key>`, what OpenAI clients send) or
  `x-api-key`, checked against one Secret per key (`ctx.exposure.credentials`), stripped before
  vLLM sees it, and the key's client id forwarded as `x-portal-key-id`. With no key the policy
  names none and the gateway refuses every request. The policy is applied before the route, so
  the route is never reachable without it.

Each key's Secret (`<workload>-key-<id>`, data `key-<id>: <key>`, labelled with the owner labels
and the key's id) is built by `key_secret` and created by the reconcile, outside `manifests`:
the portal keeps only a hash of a key once its Secret exists, so the Secret is never rebuilt.
"""

from __future__ import annotations

import base64
import json
import shlex
from collections.abc import Mapping
from typing import Any

from .. import gateway_routes
from ..base import BuildContext, Connection, Manifest, ObjectKey
from ..gateway_routes import HTTP_ROUTE, SECURITY_POLICY
from .spec import OPENAI_PATH, POD, PREDICTOR_LABEL, service_name

SECRET = ("v1", "Secret")
OWNED_KINDS = (HTTP_ROUTE, SECURITY_POLICY, SECRET)
KEY_HEADERS = ("Authorization", "x-api-key")
CLIENT_ID_HEADER = "x-portal-key-id"
KEY_LABEL = "portal.ai-factory.io/endpoint-key"
# What the examples say where the key goes; the page puts a new key there, once.
KEY_VARIABLE = "ENDPOINT_KEY"
PLACEHOLDER = f"${KEY_VARIABLE}"
PYTHON_PLACEHOLDER = f'os.environ["{KEY_VARIABLE}"]'
PREDICTOR_CONTAINER = "kserve-container"


def hostname(ctx: BuildContext) -> str:
    """`<service>-<tenant>.<domain>` (`gateway_routes.hostname`)."""
    return gateway_routes.hostname(ctx, service_name(ctx.name))


def policy_name(workload_name: str) -> str:
    return f"{service_name(workload_name)}-api-keys"


def key_secret_name(workload_name: str, key_id: int) -> str:
    return f"{workload_name}-key-{key_id}"


def client_id(key_id: int) -> str:
    """The key's name in its Secret (Envoy's client id, forwarded to vLLM; never the key)."""
    return f"key-{key_id}"


def manifests(ctx: BuildContext) -> list[Manifest]:
    """The SecurityPolicy, then the HTTPRoute it guards; none without `ctx.exposure`."""
    exposure = ctx.exposure
    if exposure is None:
        return []
    name = service_name(ctx.name)
    policy = {
        "apiVersion": SECURITY_POLICY[0],
        "kind": SECURITY_POLICY[1],
        "metadata": ctx.metadata(policy_name(ctx.name)),
        "spec": {
            "targetRefs": [gateway_routes.target(name)],
            "apiKeyAuth": {
                "credentialRefs": [
                    {"group": "", "kind": "Secret", "name": secret}
                    for secret in exposure.credentials
                ],
                "extractFrom": [{"headers": list(KEY_HEADERS)}],
                "forwardClientIDHeader": CLIENT_ID_HEADER,
                "sanitize": True,
            },
        },
    }
    route = gateway_routes.http_route(ctx, name, f"{name}-predictor")
    return [policy, route]


def key_secret(ctx: BuildContext, key_id: int, raw: str) -> Manifest:
    """One key's Secret, as Envoy Gateway reads it: each data key a client id, its value the
    bare key (no `Bearer `)."""
    metadata = ctx.metadata(key_secret_name(ctx.name, key_id), labels={KEY_LABEL: str(key_id)})
    return {
        "apiVersion": SECRET[0],
        "kind": SECRET[1],
        "metadata": metadata,
        "type": "Opaque",
        "data": {client_id(key_id): base64.b64encode(raw.encode()).decode("ascii")},
    }


def key_secrets_present(objects: Mapping[ObjectKey, Manifest]) -> list[str]:
    """The names of the key Secrets the cluster holds for the endpoint (sorted)."""
    return sorted(
        name for (api_version, kind, name), obj in objects.items()
        if (api_version, kind) == SECRET
        and KEY_LABEL in ((obj.get("metadata") or {}).get("labels") or {})
    )


def runtime_image(objects: Mapping[ObjectKey, Manifest], ctx: BuildContext) -> str:
    """The image (and so the vLLM version) a predictor pod runs, as the cluster reports it."""
    name = service_name(ctx.name)
    for (api_version, kind, _), pod in sorted(objects.items()):
        if (api_version, kind) != POD:
            continue
        if ((pod.get("metadata") or {}).get("labels") or {}).get(PREDICTOR_LABEL) != name:
            continue
        for container in (pod.get("spec") or {}).get("containers") or []:
            if container.get("name") == PREDICTOR_CONTAINER and container.get("image"):
                return str(container["image"])
    return ""


def observed_details(objects: Mapping[ObjectKey, Manifest], ctx: BuildContext) -> dict[str, Any]:
    """What the endpoint's page adds to KServe's figures: the runtime's image, and (exposed)
    the key Secrets present (a key whose Secret is gone needs rotating)."""
    details: dict[str, Any] = {}
    if image := runtime_image(objects, ctx):
        details["runtime_image"] = image
    if ctx.exposure is not None:
        details["key_secrets"] = key_secrets_present(objects)
    return details


def examples(base_url: str, model: str) -> tuple[tuple[str, str], ...]:
    """curl and the OpenAI Python client against vLLM's chat completions, with the key as
    PLACEHOLDER (`with_key` puts a real one in)."""
    body = json.dumps({
        "model": model,
        "messages": [{"role": "user", "content": "Say hello in one sentence."}],
        "max_tokens": 64,
    })
    curl = (f"curl -sS {shlex.quote(base_url + '/chat/completions')} \\\n"
            f'  -H "Authorization: Bearer {PLACEHOLDER}" \\\n'
            f"  -H 'Content-Type: application/json' \\\n"
            f"  -d {shlex.quote(body)}")
    python = "\n".join([
        "import os",
        "from openai import OpenAI",
        "",
        f"client = OpenAI(base_url={json.dumps(base_url)}, api_key={PYTHON_PLACEHOLDER})",
        "reply = client.chat.completions.create(",
        f"    model={json.dumps(model)},",
        '    messages=[{"role": "user", "content": "Say hello in one sentence."}],',
        "    max_tokens=64,",
        ")",
        "print(reply.choices[0].message.content)",
    ])
    return (
        ("List the model (curl)",
         f"curl -sS {shlex.quote(base_url + '/models')} -H \"Authorization: Bearer "
         f'{PLACEHOLDER}"'),
        ("Chat completion (curl)", curl),
        ("Chat completion (OpenAI Python client)", python),
    )


def with_key(command: str, raw: str) -> str:
    """An example with a key in place of the placeholder (the page, right after creation)."""
    return command.replace(PYTHON_PLACEHOLDER, json.dumps(raw)).replace(PLACEHOLDER, raw)


def connection(inside: Connection, ctx: BuildContext, model: str) -> Connection:
    """The in-cluster connection, with the HTTPS URL first and the examples through it."""
    if ctx.exposure is None:
        return inside
    url = ctx.exposure.url(hostname(ctx))
    base = url.rstrip("/") + OPENAI_PATH
    items = [("Endpoint URL", url), ("OpenAI API base URL", base),
             *[(label, value) for label, value in inside.items
               if label not in ("Endpoint URL", "OpenAI API base URL")]]
    notes = [
        f"Any OpenAI client works: its base URL the one above, the model “{model}”, and one "
        "of the endpoint's API keys as its API key (sent as “Authorization: Bearer <key>”; "
        "“x-api-key: <key>” works too). Without a valid key the gateway answers 401. Put "
        f"your key in the {KEY_VARIABLE} environment variable for the examples.",
        *(note for note in inside.notes if "API key" not in note),
    ]
    return Connection(items=tuple(items), commands=examples(base, model), notes=tuple(notes))
