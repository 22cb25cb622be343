"""What the cluster says of a Slurm cluster (the CRs, the operator's StatefulSets, Deployments
and worker Pods) and how a person logs in and runs jobs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import ssh_access
from ..base import (
    QUEUED_REASON,
    BuildContext,
    Connection,
    Manifest,
    ObjectKey,
    Observation,
    queued_by_kueue,
    queued_words,
)
from ..object_status import failure_of, newest_first, ready_replicas
from .manifests import LOGIN_PORT, PARTITION, RESTAPI_PORT, SLINKY, Names


def _instance(obj: Manifest | None) -> str:
    return (((obj or {}).get("metadata") or {}).get("labels") or {}).get(
        "app.kubernetes.io/instance", ""
    )


def observe(
    objects: Mapping[ObjectKey, Manifest], spec: Mapping[str, Any], ctx: BuildContext
) -> Observation:
    """Ready when the controller, the login node (and the REST API and accounting when asked
    for) run and every worker is ready in the settled NodeSet; progressing while they start or
    scale; degraded when some workers cannot run or Slurm marks them DOWN; failed, in the
    cluster's words, when a part cannot start (e.g. no node has the GPUs a worker asks for).

    The Slinky CRs carry little status of their own in 1.2 (the Controller and LoginSet none
    that says ready), so readiness comes from what the operator makes of them.
    """
    names = Names(ctx)
    controller = objects.get((SLINKY, "Controller", names.cluster))
    nodeset = objects.get((SLINKY, "NodeSet", names.workers))
    loginset = objects.get((SLINKY, "LoginSet", names.login))
    if controller is None and nodeset is None and loginset is None:
        return Observation(state="absent")
    workers = int(spec["workers"])
    parts = {
        "controller": (
            controller,
            objects.get(("apps/v1", "StatefulSet", names.controller_app)),
        ),
        "login": (loginset, objects.get(("apps/v1", "Deployment", names.login))),
    }
    if spec.get("rest_api"):
        parts["rest_api"] = (
            objects.get((SLINKY, "RestApi", names.cluster)),
            objects.get(("apps/v1", "Deployment", names.restapi_app)),
        )
    if spec.get("accounting"):
        parts["accounting"] = (
            objects.get((SLINKY, "Accounting", names.cluster)),
            objects.get(("apps/v1", "StatefulSet", names.accounting_app)),
        )
        parts["database"] = (None, objects.get(("apps/v1", "StatefulSet", names.mariadb)))
    ready = {part: ready_replicas(app) >= 1 for part, (_, app) in parts.items()}

    nodeset_status = (nodeset or {}).get("status") or {}
    workers_ready = ready_replicas(nodeset)
    generation = ((nodeset or {}).get("metadata") or {}).get("generation")
    seen_generation = nodeset_status.get("observedGeneration")
    settled = nodeset is not None and (generation is None or seen_generation == generation)
    pods = [obj for (api, kind, _), obj in objects.items() if (api, kind) == ("v1", "Pod")]
    worker_pods = [p for p in pods if _instance(p) == names.workers]

    control_failure = next(
        (
            f
            for obj in (*(o for pair in parts.values() for o in pair), *pods)
            if _instance(obj) != names.workers and (f := failure_of(obj))
        ),
        None,
    )
    worker_failure = next((f for obj in (nodeset, *worker_pods) if (f := failure_of(obj))), None)
    down = int(nodeset_status.get("slurmDown") or 0)
    details: dict[str, Any] = {
        "workers": workers,
        "workers_ready": workers_ready,
        "slurm_nodes": {
            state: int(nodeset_status.get(f"slurm{state.title()}") or 0)
            for state in ("idle", "allocated", "down", "drain")
        },
        **{f"{part}_ready": is_ready for part, is_ready in ready.items()},
        "login_host": f"{names.login}.{ctx.namespace}.svc",
    }
    conditions = newest_first([controller, nodeset, loginset, *(app for _, app in parts.values())])

    def seen(state: str, reason: str = "", message: str = "") -> Observation:
        return Observation(state, reason, message, conditions, details)

    if not all(ready.values()):
        waiting_for = ", ".join(part.replace("_", " ") for part, ok in ready.items() if not ok)
        if control_failure:
            return seen("failed", *control_failure)
        return seen("progressing", "Starting", f"Waiting for: {waiting_for}.")
    queued = sum(1 for pod in worker_pods if queued_by_kueue(pod))
    if queued:
        details["workers_queued"] = queued
    if workers_ready < workers:
        if queued and not worker_failure:
            # Fair share at work, not a fault: Kueue admits them as quota frees up.
            return seen("progressing", QUEUED_REASON, queued_words(queued, "worker"))
        if worker_failure:
            # Workers no node has room for wait for the scheduler (degraded, in its words);
            # workers that cannot start for another reason fail the cluster if none runs.
            waiting = worker_failure[0] == "Unschedulable"
            state = "degraded" if workers_ready or waiting else "failed"
            return seen(state, worker_failure[0], worker_failure[1])
        return seen(
            "progressing", "WorkersStarting", f"{workers_ready} of {workers} workers ready."
        )
    replicas = nodeset_status.get("replicas", workers)
    if (
        not settled
        or workers_ready > workers
        or not isinstance(replicas, int)
        or (replicas > workers)
    ):
        return seen("progressing", "Scaling", f"{workers_ready} workers ready, {workers} asked.")
    if down:
        return seen("degraded", "SlurmNodesDown", f"{down} of {workers} workers are DOWN in Slurm.")
    return seen("ready")


def connection(
    objects: Mapping[ObjectKey, Manifest], spec: Mapping[str, Any], ctx: BuildContext
) -> Connection:
    """The login node's in-cluster address, the ways in, and a first batch and interactive job."""
    names = Names(ctx)
    login = f"{names.login}.{ctx.namespace}.svc"
    gpus = int(spec.get("gpus_per_worker") or 1)
    items = [
        ("Login node", f"{login} port {LOGIN_PORT}"),
        ("Partition", PARTITION),
        ("Workers", str(spec.get("workers"))),
    ]
    if spec.get("rest_api"):
        items.append(
            ("Slurm REST API", f"http://{names.restapi_app}.{ctx.namespace}.svc:{RESTAPI_PORT}")
        )
    address = ""
    if ctx.access.ssh_load_balancer:
        address = ssh_access.external_address(objects.get(("v1", "Service", names.login)))
        if address:
            items.insert(0, ("SSH address", f"{address} port {LOGIN_PORT}"))
    if spec.get("ssh_public_key"):
        commands = []
        if address:
            commands.append(("SSH from your machine", ssh_access.ssh_command("root", address)))
        commands += [
            ("SSH from a pod of your namespace or vCluster", f"ssh root@{login}"),
            (
                "SSH from your machine through the Kubernetes API",
                f"kubectl -n {ctx.namespace} port-forward svc/{names.login} 2222:{LOGIN_PORT}"
                " & ssh -p 2222 root@127.0.0.1",
            ),
        ]
    else:
        commands = [
            (
                "A shell on the login node",
                f"kubectl -n {ctx.namespace} exec -it deploy/{names.login} -- bash",
            )
        ]
    commands += [
        ("See the workers", "sinfo"),
        ("Run a job in the batch queue", f"sbatch --gres=gpu:{gpus} --wrap 'nvidia-smi'"),
        ("Run a step interactively", f"srun --gres=gpu:{gpus} nvidia-smi"),
    ]
    if ctx.access.ssh_load_balancer:
        reach = (
            f"The login node's Service {names.login} has its own address from the fleet's load "
            "balancer: SSH to it from your machine."
            if address else ssh_access.waiting_note(names.login)
        )
    else:
        reach = (
            f"The login node's Service {names.login} is reachable from pods in your namespace "
            f"{ctx.namespace} (your vClusters' pods run there too), not from outside the "
            "cluster: from your machine, tunnel with kubectl port-forward."
        )
    notes = [
        reach,
        "Users come from the login node's local files: log in as root with the key you "
        "gave. A directory of users is not connected yet.",
    ]
    if spec.get("rest_api"):
        notes.append(
            "The REST API takes a JWT: get one on the login node with "
            "“scontrol token”, send it as X-SLURM-USER-TOKEN."
        )
    return Connection(items=tuple(items), commands=tuple(commands), notes=tuple(notes))
