"""What answers behind a route of the simulated gateway (`demo.gateway`), found from the route's
first backend as Envoy Gateway resolves it, in the route's namespace:

- `<name>-predictor`, an InferenceService's predictor: vLLM's OpenAI-compatible server once the
  InferenceService is ready: `GET /v1/models` and `POST /v1/chat/completions`, with a canned
  reply naming the model;
- any other Service: a ready pod its selector picks (the namespace's StatefulSets played up to
  now): a notebook's JupyterLab or VS Code (code-server),
  told apart by the container's arguments (`kinds.notebook`'s interfaces), as a simulated page
  naming the notebook, its interface, its image and its home path; the interface's health path
  answers as the app's does (`/api`, `/healthz`).

Nothing ready: 503 "no healthy upstream", Envoy's words (as JSON for an inference endpoint,
whose clients read JSON).
"""

from __future__ import annotations

import json
import time
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from core.fleet import FleetGateway
from tenants.workloads.kinds.base import LABEL_WORKLOAD_ID
from tenants.workloads.kinds.inference.spec import INFERENCE_SERVICE
from tenants.workloads.kinds.notebook.manifests import CONTAINER, STATEFUL_SET
from tenants.workloads.kinds.notebook.spec import INTERFACES, Interface
from tenants.workloads.models import Workload

from .fleet.simulated_apps import pod_ready

NO_HEALTHY_UPSTREAM = "no healthy upstream"
# The app's own answer at its health path (the readiness probe's).
HEALTH = {
    "jupyterlab": {"version": "2.15.0"},
    "code-server": {"status": "alive", "lastHeartbeat": 0},
}
TEMPLATES = {"jupyterlab": "demo/notebook_jupyterlab.html",
             "code-server": "demo/notebook_code_server.html"}


def json_error(status: int, message: str) -> JsonResponse:
    return JsonResponse({"error": {"code": status, "message": message}}, status=status)


def _backend(route: dict[str, Any]) -> str | None:
    backends = [b for rule in route["spec"].get("rules") or []
                for b in rule.get("backendRefs") or []]
    return backends[0]["name"] if backends else None


def upstream(request: HttpRequest, gateway: FleetGateway, route: dict[str, Any], path: str
             ) -> HttpResponse:
    """The route's backend's answer to the request (`path` without its leading slash)."""
    namespace = route["metadata"]["namespace"]
    backend = _backend(route)
    if backend is None:
        return json_error(503, NO_HEALTHY_UPSTREAM)
    name = backend.removesuffix("-predictor")
    endpoint = gateway.get(api_version=INFERENCE_SERVICE[0], kind=INFERENCE_SERVICE[1],
                           name=name, namespace=namespace)
    if endpoint is not None:
        conditions = (endpoint.get("status") or {}).get("conditions") or []
        if not any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
            return json_error(503, NO_HEALTHY_UPSTREAM)
        return _vllm(request, path, name)
    pod = _ready_pod(gateway, backend, namespace)
    if pod is None:
        return HttpResponse(NO_HEALTHY_UPSTREAM, status=503, content_type="text/plain")
    return _notebook(request, path, pod)


def _vllm(request: HttpRequest, path: str, model: str) -> JsonResponse:
    if path == "v1/models" and request.method == "GET":
        return JsonResponse({"object": "list", "data": [
            {"id": model, "object": "model", "created": int(time.time()), "owned_by": "vllm",
             "root": model}]})
    if path == "v1/chat/completions" and request.method == "POST":
        try:
            body = json.loads(request.body or b"{}")
        except ValueError:
            return json_error(400, "The body is not JSON.")
        asked = body.get("model") if isinstance(body, dict) else None
        if asked != model:
            return json_error(404, f"The model `{asked}` does not exist.")
        reply = f"Hello from {model}, served by the simulated fleet."
        return JsonResponse({
            "id": f"chatcmpl-{int(time.time() * 1000)}", "object": "chat.completion",
            "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": reply}}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 10, "total_tokens": 22},
        })
    return json_error(404, "Not Found")


def _ready_pod(gateway: FleetGateway, service_name: str, namespace: str
               ) -> dict[str, Any] | None:
    """A ready pod the Service selects."""
    service = gateway.get(api_version="v1", kind="Service", name=service_name,
                          namespace=namespace)
    selector = ((service or {}).get("spec") or {}).get("selector") or {}
    if not selector:
        return None
    # Reading the namespace's StatefulSets plays their controller: their pods are as far
    # along as they are by now (made, started, or gone at 0 replicas).
    gateway.list(api_version=STATEFUL_SET[0], kind=STATEFUL_SET[1], namespace=namespace)
    pods = gateway.list(api_version="v1", kind="Pod", namespace=namespace,
                        label_selector=",".join(f"{k}={v}" for k, v in selector.items()))
    return next((pod for pod in pods if pod_ready(pod)), None)


def _interface(container: dict[str, Any]) -> Interface:
    """The interface whose arguments the container runs with (its first argument, the same
    for every image of an interface)."""
    args = [str(a) for a in container.get("args") or []]
    return next((i for i in INTERFACES.values() if args[:1] == list(i.args[:1])),
                INTERFACES["jupyterlab"])


def _notebook(request: HttpRequest, path: str, pod: dict[str, Any]) -> HttpResponse:
    """The app the notebook's pod runs: its health answer, or its (simulated) page."""
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    container = next((c for c in containers if c.get("name") == CONTAINER), containers[0])
    interface = _interface(container)
    if path == interface.health.strip("/"):
        return JsonResponse(HEALTH[interface.key])
    labels = (pod.get("metadata") or {}).get("labels") or {}
    workload_id = labels.get(LABEL_WORKLOAD_ID, "")
    name = (
        Workload.objects.filter(pk=int(workload_id)).values_list("name", flat=True).first()
        if workload_id.isdigit() else None
    ) or pod["metadata"]["name"].rsplit("-", 1)[0]
    return render(request, TEMPLATES[interface.key], {
        "name": name, "interface": interface.key, "interface_label": interface.label,
        "image": container.get("image", ""), "home": interface.home,
        "home_folder": interface.home.rstrip("/").rsplit("/", 1)[-1],
    })
