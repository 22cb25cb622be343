"""Notebooks: JupyterLab or VS Code (code-server) in the browser, on a whole GPU, a MIG
instance, a HAMi share or no GPU, with the launching person's home volume.

A plain StatefulSet (replicas 1, or 0 while stopped), a Service and a PVC, not Kubeflow's
`Notebook` CRD: no extra operator runs on the fleet, stop and start are the replica count,
culling idle notebooks is per tenant in the portal (Kubeflow's controller culls fleet-wide by
one setting), Kueue admits the pod through its pod integration like every other kind's, and
the gateway (Envoy Gateway's OIDC) signs people in as Kubeflow does with Istio.

The spec a person gives (`validate` returns it clean, with what it resolved):

    image           key of the admins' catalog, `ctx.catalog["notebook_images"]`:
                    {key: {"label", "image" (OCI reference), "interface"}}; or, instead,
    custom_image    an image of one's own (an OCI reference, registry required) with its
                    `interface` — only where `ctx.catalog["notebook_custom_images"]` is True
                    (the tenant's `custom_notebook_images`)
    interface       jupyterlab | code-server: how the image starts, where the home goes
    cpu, memory_gib vCPUs (1..64, default 4), GiB of memory (1..512, default 16)
    gpu             optional: gpu:<model> | mig:<model>:<profile> | hami:<model>, as an
                    inference endpoint's (`kinds.gpu_input`); none: a CPU notebook
    gpus            whole GPUs (1..the largest node's count); MIG and HAMi: 1
    gpu_memory_gib, gpu_cores   a HAMi share's size
    running         power state (default true): stop and start keep the home volume

and what validate puts in: `image_ref`, `interface` and `image_label` (manifests need no
catalog), and the home volume — `home`, the PVC `home-<user>` (`home_claim(ctx.person)`),
with `home_gib`, `home_access_mode` and `home_storage_class` from the catalog
(NOTEBOOK_HOME_*). A person never types `home` (an unknown field at launch); with no person
(a stored spec validated again) the spec keeps the home it has.

The home PVC carries the tenant's and the portal's labels but not the workload-id label: it
outlives the notebook (every notebook the person launches in the tenant mounts it), so the
machinery applies it with the notebook but never observes, prunes or deletes it.

No token or password on the notebook server: from outside the only way in is the gateway's
OIDC SecurityPolicy, which admits only a token whose groups name one of the tenant's groups;
inside the namespace the tenant's members can exec into any pod anyway (the `edit` role), so
a token would add nothing there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

from ..base import BuildContext
from ..gateway_routes import HTTP_ROUTE, SECURITY_POLICY
from . import manifests as _manifests
from . import spec as _spec
from . import status as _status
from .manifests import POD, SERVICE, STATEFUL_SET, hostname, notebook_name, pod_name
from .spec import (
    DEFAULT_CPU,
    DEFAULT_MEMORY_GIB,
    FIELDS,
    INTERFACES,
    MAX_CPU,
    MAX_MEMORY_GIB,
    SCALABLE,
    home_claim,
    power,
)


class NotebookKind:
    """The `notebook` workload kind (see `base.WorkloadKind`)."""

    KEY: ClassVar[str] = "notebook"
    LABEL: ClassVar[str] = "Notebook"
    # Not the home PVC: it outlives the notebook (see the module's docstring).
    OWNED_KINDS: ClassVar[tuple[tuple[str, str], ...]] = (
        STATEFUL_SET,
        SERVICE,
        # Its pod carries the template's labels: Kueue's admission gate on it says the
        # notebook waits in the tenant's queue; its container statuses say why it fails.
        POD,
        HTTP_ROUTE,
        SECURITY_POLICY,
    )

    # Pure functions of the spec and the contexts: the kind's own modules, as they are.
    validate = staticmethod(_spec.validate)
    demand = staticmethod(_spec.demand)
    scale = staticmethod(_spec.scale)
    power = staticmethod(_spec.power)
    manifests = staticmethod(_manifests.manifests)
    observe = staticmethod(_status.observe)
    connection = staticmethod(_status.connection)

    def gpu_pods(self, spec: Mapping[str, Any], ctx: BuildContext) -> str:
        # The StatefulSet's one pod: `<statefulset>-0`.
        return re.escape(pod_name(ctx.name))


KIND = NotebookKind()
KEY = NotebookKind.KEY
LABEL = NotebookKind.LABEL
OWNED_KINDS = NotebookKind.OWNED_KINDS

__all__ = [
    "DEFAULT_CPU",
    "DEFAULT_MEMORY_GIB",
    "FIELDS",
    "INTERFACES",
    "KEY",
    "KIND",
    "LABEL",
    "MAX_CPU",
    "MAX_MEMORY_GIB",
    "OWNED_KINDS",
    "SCALABLE",
    "NotebookKind",
    "home_claim",
    "hostname",
    "notebook_name",
    "pod_name",
    "power",
]
