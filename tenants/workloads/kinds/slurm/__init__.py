"""Slurm clusters through SchedMD's Slinky slurm-operator 1.2 (`slinky.slurm.net/v1beta1`): a
Controller (slurmctld), one NodeSet of GPU workers (slurmd), a LoginSet (sshd + sackd), and
optionally a RestApi (slurmrestd) and Accounting (slurmdbd over a MariaDB the portal runs).

The spec (`validate` returns it clean):

    workers                 slurmd pods, 0..256 (`scale` changes only this)
    gpu, gpus_per_worker    a GPU class of the pool: whole GPUs, or MIG partitions for shared
                            tenants; 1..the largest node's count per worker
    cpu_per_worker, memory_gib_per_worker   1..256 vCPUs, 1..4096 GiB per worker
    accounting, rest_api    booleans, default false
    ssh_public_key          optional: root's authorized key on the login node

Key material is never in the spec (pages and logs show specs). The machinery generates the
slurm key and the JWT HS256 key once per workload (`secrets.token_bytes(KEY_BYTES)`), and a
MariaDB password when `spec["accounting"]`, and applies `secret_manifests(ctx, …)` first:
created once (POST; 409 means they exist and are kept), never re-generated, never
server-side-applied again and never pruned (`generated_secrets()` names them). `manifests()`
refers to them by name only.

Accounting: slurmdbd needs MySQL/MariaDB. The portal runs one per Slurm cluster in the
tenant's namespace (a StatefulSet and its Service), rather than pointing at a shared external
database: the tenant's NetworkPolicy lets pods talk only inside the namespace, and one database
per cluster keeps tenants' job records apart.

Volumes (slurmctld's state, the database) are PersistentVolumeClaims the portal makes with the
owner labels, not claim templates: deleting the workload deletes them and frees the storage.

GPUs: slurmd asks Kubernetes for the class's extended resource (`nvidia.com/gpu`, or
`nvidia.com/mig-<profile>`), and Slurm learns them from `gres.conf` (`AutoDetect=nvidia`, a
ConfigMap in the Controller's `configFileRefs`) and slurmd's `--conf Gres=gpu:<n>` (the
NodeSet's `extraConf`): jobs ask with `--gres=gpu:<n>` in the default partition `gpu`.

Demand: the workers' GPUs, vCPUs and memory, plus the control plane: the sum of the requests
the portal sets on every other container (`manifests.CONTROLLER_CONTAINERS` and the like,
requests = limits), rounded up to whole vCPUs and GiB, and 4 GiB of slurmctld state (+10 GiB
of database with accounting).

Reaching it: the LoginSet's Service is named after it, `<name>-login`, on port 22
(`spec.service.spec` is a ServiceSpec the operator merges); `<name>-login.<namespace>.svc` from
the namespace. With SSH_LOAD_BALANCER it is a LoadBalancer carrying the owner labels
(`spec.service.metadata`), and `ssh root@<its address>` works from outside (`kinds.ssh_access`);
else ClusterIP, and `kubectl port-forward` from outside.

Objects the operator makes from these (StatefulSets `<name>-controller`, `<name>-accounting`,
Deployments `<name>-login`, `<name>-restapi`, the worker Pods) carry the owner labels, which
it copies from the CRs and their templates; they are in `OWNED_KINDS` to be observed. The
machinery must never prune an object that has an ownerReference: it belongs to its owner.

Names: object names derive from the workload's name cut to 40 characters (with a hash when
cut), so that the operator's `<name>-workers-headless` Services stay within 63.

Limitation to know: Slinky runs slurmd privileged (it manages cgroups); a namespace that
enforces Pod Security `baseline` refuses those pods, so tenants with Slurm clusters need a
namespace policy that admits them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

from ..base import BuildContext, Connection, LaunchContext, Manifest, ObjectKey, Observation
from . import manifests as _manifests
from . import spec as _spec
from . import status as _status
from .manifests import (
    KEY_BYTES,
    SLINKY,
    Names,
    cel_errors,
    generated_secrets,
    secret_manifests,
)
from .spec import FIELDS

__all__ = [
    "FIELDS",
    "KEY",
    "KEY_BYTES",
    "KIND",
    "LABEL",
    "OWNED_KINDS",
    "Names",
    "SlurmClusterKind",
    "cel_errors",
    "generated_secrets",
    "secret_manifests",
]


class SlurmClusterKind:
    """A Slurm cluster of GPU workers, run by the Slinky operator in the tenant's namespace."""

    KEY: ClassVar[str] = "slurm"
    LABEL: ClassVar[str] = "Slurm cluster"
    OWNED_KINDS: ClassVar[tuple[tuple[str, str], ...]] = (
        ("v1", "Secret"),
        ("v1", "ConfigMap"),
        ("v1", "Service"),
        ("v1", "PersistentVolumeClaim"),
        ("apps/v1", "StatefulSet"),
        (SLINKY, "Accounting"),
        (SLINKY, "Controller"),
        (SLINKY, "NodeSet"),
        (SLINKY, "LoginSet"),
        (SLINKY, "RestApi"),
        # Made by the operator from the CRs above; observed, never pruned (ownerReferences).
        ("apps/v1", "Deployment"),
        ("v1", "Pod"),
    )

    def validate(self, spec: Mapping[str, Any], ctx: LaunchContext) -> dict[str, Any]:
        return _spec.validate(spec, ctx)

    def demand(self, spec: Mapping[str, Any]) -> dict[str, int]:
        return _spec.demand(spec)

    def manifests(self, spec: Mapping[str, Any], ctx: BuildContext) -> list[Manifest]:
        """Everything but the key Secrets (`secret_manifests`), in apply order."""
        return _manifests.manifests(spec, ctx)

    def observe(
        self, objects: Mapping[ObjectKey, Manifest], spec: Mapping[str, Any], ctx: BuildContext
    ) -> Observation:
        return _status.observe(objects, spec, ctx)

    def scale(
        self, spec: Mapping[str, Any], changes: Mapping[str, Any], ctx: LaunchContext
    ) -> dict[str, Any]:
        return _spec.scale(spec, changes, ctx)

    def connection(
        self, objects: Mapping[ObjectKey, Manifest], spec: Mapping[str, Any], ctx: BuildContext
    ) -> Connection:
        return _status.connection(objects, spec, ctx)

    def gpu_pods(self, spec: Mapping[str, Any], ctx: BuildContext) -> str:
        # The NodeSet scales like a StatefulSet: its worker pods are `<nodeset>-<ordinal>`.
        return re.escape(f"{_manifests.Names(ctx).workers}-") + r"[0-9]+"


KIND = SlurmClusterKind()
KEY = SlurmClusterKind.KEY
LABEL = SlurmClusterKind.LABEL
OWNED_KINDS = SlurmClusterKind.OWNED_KINDS
