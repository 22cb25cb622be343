"""The cluster's controllers, played by the bench against the Kubernetes API emulator.

The emulator has no controllers. While provisioning is measured, `Controllers` brings up every
object the portal created, once, as KServe, Flux with the vcluster chart, KubeVirt and the Slinky
operator would: an InferenceService Ready with its URL; a HelmRelease installed, with the
kubeconfig Secret and the control plane's StatefulSet the chart makes; a VirtualMachine Running
with its VirtualMachineInstance; a Slurm cluster's controller and login running and its NodeSet's
workers ready. It reads and writes the emulator's store in its own loop, not over HTTP, so that
the requests counted at the emulator are the portal's alone.
"""

from __future__ import annotations

import base64
import logging
import threading
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)

INFERENCE_SERVICE = ("serving.kserve.io/v1beta1", "InferenceService")
HELM_RELEASE = ("helm.toolkit.fluxcd.io/v2", "HelmRelease")
VIRTUAL_MACHINE = ("kubevirt.io/v1", "VirtualMachine")
NODE_SET = ("slinky.slurm.net/v1beta1", "NodeSet")
OWNER_LABELS = ("app.kubernetes.io/managed-by", "portal.ai-factory.io/workload-id")
SINCE = "2026-12-01T10:00:00Z"


def _ready(type_: str = "Ready", reason: str = "Ready", generation: int = 1) -> dict[str, Any]:
    return {"type": type_, "status": "True", "reason": reason, "message": reason,
            "observedGeneration": generation, "lastTransitionTime": SINCE}


def _meta(obj: dict[str, Any]) -> tuple[str, str, int]:
    meta = obj["metadata"]
    return meta["name"], meta.get("namespace", ""), int(meta.get("generation") or 1)


def serve_inference(emulator: Any, obj: dict[str, Any]) -> None:
    """KServe: the predictor is up, the endpoint has its URL."""
    name, namespace, generation = _meta(obj)
    emulator.patch_object(*INFERENCE_SERVICE, name, namespace, patch={"status": {
        "observedGeneration": generation,
        "url": f"https://{name}.{namespace}.example.com",
        "address": {"url": f"http://{name}.{namespace}.svc.cluster.local"},
        "conditions": [_ready("IngressReady"), _ready("PredictorReady"), _ready()],
        "modelStatus": {"states": {"activeModelState": "Loaded", "targetModelState": "Loaded"},
                        "transitionStatus": "UpToDate"},
    }})


def install_release(emulator: Any, obj: dict[str, Any]) -> None:
    """Flux and the vcluster chart: the release installed, its kubeconfig Secret and its
    control plane StatefulSet (the chart's objects, without the portal's owner labels)."""
    name, namespace, generation = _meta(obj)
    server = obj["spec"]["values"]["exportKubeConfig"]["server"]
    emulator.patch_object(*HELM_RELEASE, name, namespace, patch={"status": {
        "observedGeneration": generation,
        "lastAttemptedRevision": obj["spec"]["chart"]["spec"].get("version", ""),
        "conditions": [_ready(reason="InstallSucceeded", generation=generation),
                       _ready("Released", "InstallSucceeded", generation)],
        "history": [{"chartName": "vcluster", "chartVersion": "0.36.1", "version": 1,
                     "status": "deployed",
                     "name": name, "namespace": namespace, "digest": "sha256:1f0c",
                     "configDigest": "sha256:9ab2", "firstDeployed": "2026-12-01T10:00:00Z",
                     "lastDeployed": "2026-12-01T10:00:00Z"}],
    }})
    kubeconfig = (
        "apiVersion: v1\nkind: Config\nclusters:\n- name: vc\n  cluster:\n"
        f"    server: {server}\ncontexts:\n- name: vc\n  context: {{cluster: vc, user: vc}}\n"
        "current-context: vc\nusers:\n- name: vc\n  user: {token: x}\n"
    )
    emulator.put_object({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": f"vc-{name}", "namespace": namespace,
                     "labels": {"app": "vcluster", "vcluster-name": name}},
        "data": {"config": base64.b64encode(kubeconfig.encode()).decode()},
    })
    emulator.put_object({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "vcluster"}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "vcluster"}},
                 "serviceName": name,
                 "template": {"metadata": {"labels": {"app": "vcluster"}},
                              "spec": {"containers": []}}},
        "status": {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1},
    })


def boot_vm(emulator: Any, obj: dict[str, Any]) -> None:
    """KubeVirt: the VM runs, its instance (owned by the VM, labelled from its template) has an
    address."""
    name, namespace, _ = _meta(obj)
    template = obj["spec"]["template"]["metadata"]
    # KubeVirt's conditions carry no observedGeneration.
    ready = {key: value for key, value in _ready().items() if key != "observedGeneration"}
    emulator.patch_object(*VIRTUAL_MACHINE, name, namespace, patch={"status": {
        "printableStatus": "Running", "ready": True, "conditions": [ready]}})
    emulator.put_object({
        "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
        "metadata": {"name": name, "namespace": namespace,
                     "labels": dict(template.get("labels") or {}),
                     "annotations": dict(template.get("annotations") or {}),
                     "ownerReferences": [{"apiVersion": "kubevirt.io/v1",
                                          "kind": "VirtualMachine", "name": name,
                                          "uid": obj["metadata"]["uid"], "controller": True}]},
        "spec": {"domain": {"devices": {}}},
        "status": {"phase": "Running", "nodeName": "gpu-node-0001",
                   "interfaces": [{"name": "default", "ipAddress": "10.244.3.17"}]},
    })


def run_slurm(emulator: Any, obj: dict[str, Any]) -> None:
    """The Slinky operator: slurmctld's StatefulSet and the login Deployment run (labelled as
    their custom resources), the NodeSet reports its workers ready."""
    name, namespace, generation = _meta(obj)
    base = name.removesuffix("-workers")
    labels = {key: value for key, value in (obj["metadata"].get("labels") or {}).items()
              if key in OWNER_LABELS}
    for kind, made in (("StatefulSet", f"{base}-controller"), ("Deployment", f"{base}-login")):
        emulator.put_object({
            "apiVersion": "apps/v1", "kind": kind,
            "metadata": {"name": made, "namespace": namespace, "labels": labels},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": made}},
                     "template": {"metadata": {"labels": {"app": made}},
                                  "spec": {"containers": []}}},
            "status": {"replicas": 1, "readyReplicas": 1},
        })
    workers = int(obj["spec"].get("replicas") or 0)
    emulator.patch_object(*NODE_SET, name, namespace, patch={"status": {
        "replicas": workers, "readyReplicas": workers, "observedGeneration": generation,
        "slurmIdle": workers, "nodeSetHash": "5d8f7c6b9",
        "selector": f"app.kubernetes.io/instance={name}"}})


PLAYS: dict[tuple[str, str], Callable[[Any, dict[str, Any]], None]] = {
    INFERENCE_SERVICE: serve_inference,
    HELM_RELEASE: install_release,
    VIRTUAL_MACHINE: boot_vm,
    NODE_SET: run_slurm,
}


class Controllers:
    """Every `every` seconds, bring up each object of `PLAYS` not brought up yet (once each)."""

    def __init__(self, emulator: Any, *, every: float = 0.2) -> None:
        self.emulator = emulator
        self.every = every
        self.done: set[tuple[str, str, str]] = set()
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-controllers", daemon=True)

    def start(self) -> Controllers:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.step()

    def step(self) -> int:
        """One pass; how many objects it brought up."""
        played = 0
        for (api_version, kind), play in PLAYS.items():
            for obj in self.emulator.list_objects(api_version, kind):
                name, namespace, _ = _meta(obj)
                key = (kind, namespace, name)
                if key in self.done:
                    continue
                try:
                    play(self.emulator, obj)
                except Exception as exc:  # e.g. deleted meanwhile: say so and go on
                    self.errors.append(f"{kind} {namespace}/{name}: {exc!r}"[:300])
                    logger.warning("Could not play the controller of %s", key, exc_info=True)
                self.done.add(key)
                played += 1
        return played
