"""What the cluster says of a notebook (its StatefulSet and its one pod), and how a person
opens it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import base
from ..base import BuildContext, Connection, Manifest, ObjectKey, Observation
from ..object_status import failure_of, newest_first, ready_replicas
from .manifests import (
    POD,
    SERVICE_PORT,
    STATEFUL_SET,
    hostname,
    notebook_name,
    pod_name,
)
from .spec import INTERFACES, PORT

# As `models.STOPPED_REASON` (kinds import no Django): a settled, stopped notebook is ready
# with it, and its badge says Stopped.
STOPPED_REASON = "Stopped"
STOPPED_MESSAGE = "Stopped: its home volume is kept. Start it to pick up where you left off."
# Waiting for a node with room is not a fault: the scheduler retries.
UNSCHEDULABLE = "Unschedulable"


def url(ctx: BuildContext) -> str:
    """Where people open it through the gateway's sign-in (its root, where JupyterLab and
    code-server start); "" when it is not published."""
    if ctx.exposure is None or ctx.exposure.oidc is None:
        return ""
    return ctx.exposure.url(hostname(ctx)) + "/"


def _details(spec: Mapping[str, Any], ctx: BuildContext, pod: Manifest | None) -> dict[str, Any]:
    interface = INTERFACES.get(str(spec.get("interface") or ""))
    details: dict[str, Any] = {
        "power": "running" if spec.get("running", True) else "stopped",
        "url": url(ctx),
        "interface": interface.label if interface else str(spec.get("interface") or ""),
        "image": str(spec.get("image_label") or spec.get("image_ref") or ""),
        "home": str(spec.get("home") or ""),
    }
    if node := ((pod or {}).get("status") or {}).get("nodeName"):
        details["node"] = str(node)
    return details


def observe(
    objects: Mapping[ObjectKey, Manifest], spec: Mapping[str, Any], ctx: BuildContext
) -> Observation:
    stateful_set = objects.get((*STATEFUL_SET, notebook_name(ctx.name)))
    if stateful_set is None:
        return Observation("absent")
    pod = objects.get((*POD, pod_name(ctx.name)))
    details = _details(spec, ctx, pod)

    def seen(state: str, reason: str, message: str = "") -> Observation:
        return Observation(state, reason, message, newest_first([stateful_set, pod]), details)

    if not spec.get("running", True):
        if pod is None:
            # A settled state: the home volume is kept, it holds no GPU, nothing is left to do.
            return seen("ready", STOPPED_REASON, STOPPED_MESSAGE)
        return seen("progressing", "Stopping", "Stopping: its home volume is kept.")
    if base.queued_by_kueue(pod):
        # Its GPU waits for the tenant's Kueue queue: fair share at work, not a fault.
        return seen("progressing", base.QUEUED_REASON, base.queued_words(1, "notebook"))
    if ready_replicas(stateful_set) >= 1:
        return seen("ready", "Ready")
    failure = failure_of(pod)
    if failure is not None and failure[0] == UNSCHEDULABLE:
        # No node it may use has room: it starts once room frees up (or it is made smaller).
        return seen("degraded", *failure)
    if failure is not None:  # the image will not pull, the server keeps crashing…
        return seen("failed", *failure)
    if pod is None:
        return seen("progressing", "Starting", "Waiting for its pod to be created.")
    return seen("progressing", "Starting", f"Starting {details['interface']}.")


def connection(
    objects: Mapping[ObjectKey, Manifest], spec: Mapping[str, Any], ctx: BuildContext
) -> Connection:
    """Open it in the browser through the gateway (signed in with one's account), or forward
    a local port to its Service through the Kubernetes API."""
    name = notebook_name(ctx.name)
    items: list[tuple[str, str]] = []
    notes = []
    if address := url(ctx):
        items.append(("Open", address))
        notes.append("Sign in with your portal account: only the tenant's owners and members "
                     "get in. The notebook itself asks for no token.")
        commands: tuple[tuple[str, str], ...] = ()
    else:
        commands = (
            ("Forward a local port to it",
             f"kubectl -n {ctx.namespace} port-forward svc/{name} {PORT}:{SERVICE_PORT}"),
            ("Then open", f"http://localhost:{PORT}"),
        )
        notes.append("It is not published outside the cluster: kubectl tunnels to it through "
                     "the Kubernetes API with your kubeconfig. It asks for no token: anyone "
                     f"who can reach the namespace {ctx.namespace} may edit it anyway.")
    if not spec.get("running", True):
        notes.insert(0, "The notebook is stopped: start it to open it.")
    return Connection(items=tuple(items), commands=commands, notes=tuple(notes))
