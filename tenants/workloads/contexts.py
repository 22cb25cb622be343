"""The contexts the kinds validate and build against, read from the database and the settings:
what a launch may use (`launch_context`: the tenant's quota, GPU offers, the admins' catalogs,
who launches) and what a build needs (`build_context`: names, labels, Kueue's queues, where
the gateway publishes it); and what a notebook's page shows of it. `selectors` re-exports
them, where their readers look for reads."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from inventory import resource_classes
from inventory.selectors.capacity import largest_node_by_class

from ..access.models import Tenant
from ..credentials.models import ModelCredential
from ..enforcement.manifests.endpoint_queues import INFERENCE, endpoint_queue, local_queue_name
from ..enforcement.manifests.spec import (
    LOCAL_QUEUE,
    PRIORITY_CLASS_LABEL,
    PRIORITY_CLASSES,
    QUEUE_NAME_LABEL,
    SHARES_LOCAL_QUEUE,
    EndpointQueue,
)
from ..quota.capacity import pool_of
from ..quota.limits import fleet_limits, grants_by_cluster
from . import registry
from .external_access import external_access
from .kinds.base import BuildContext, Exposure, GpuOffer, LaunchContext
from .models import NotebookImage, VmImage, Workload, WorkloadStatus
from .publishing import endpoint_exposure, notebook_exposure


def vm_image_catalog() -> dict[str, dict]:
    """The boot images platform admins keep for VMs, by key (the VM kind's catalog)."""
    return {image.key: image.as_catalog_entry() for image in VmImage.objects.filter(active=True)}


def notebook_image_catalog() -> dict[str, dict]:
    """The images platform admins keep for notebooks, by key (the notebook kind's catalog).
    One query."""
    return {image.key: image.as_catalog_entry()
            for image in NotebookImage.objects.filter(active=True)}


def notebook_catalog(tenant: Tenant) -> dict[str, Any]:
    """What the notebook kind validates against besides the GPUs: the admins' images, whether
    the tenant may run its own, and the home volume every notebook of a person mounts (its
    size, access mode and storage class, put in the clean spec at launch)."""
    return {
        "notebook_images": notebook_image_catalog(),
        "notebook_custom_images": tenant.custom_notebook_images,
        "notebook_home_gib": settings.NOTEBOOK_HOME_GIB,
        "notebook_home_access_mode": settings.NOTEBOOK_HOME_ACCESS_MODE,
        "notebook_home_storage_class": settings.NOTEBOOK_HOME_STORAGE_CLASS,
    }


@dataclass(frozen=True)
class NotebookFacts:
    """What a notebook's page shows of it, from its spec and its last observation."""

    image: str
    interface: str  # jupyterlab | code-server
    interface_label: str
    home: str  # the PVC of the launching person's home volume
    home_gib: int | None
    home_access_mode: str
    running: bool
    url: str  # where it opens, once ready and running ("": not now, or not published)

    @property
    def open_label(self) -> str:
        return "Open VS Code" if self.interface == "code-server" else "Open JupyterLab"


def notebook_facts(*, workload: Workload) -> NotebookFacts | None:
    """A notebook's image, interface, home volume and the address it opens at (when it is
    ready and running); None for other kinds. No query."""
    if workload.kind != "notebook":
        return None
    spec = workload.spec or {}
    interface = str(spec.get("interface") or "")
    running = bool(spec.get("running", True))
    ready = workload.status == WorkloadStatus.READY and not workload.stopped
    labels = dict(NotebookImage.Interface.choices)
    return NotebookFacts(
        image=str(spec.get("image_ref") or spec.get("custom_image") or ""),
        interface=interface,
        interface_label=str(labels.get(interface, interface)),
        home=str(spec.get("home") or ""),
        home_gib=spec.get("home_gib"),
        home_access_mode=str(spec.get("home_access_mode") or ""),
        running=running,
        url=str(workload.details.get("url") or "") if ready and running else "",
    )


def launch_context(
    *, tenant: Tenant, quota: Mapping[str, int] | None = None, person: str = ""
) -> LaunchContext:
    """What the kinds validate against: the tenant's isolation, its quota, the GPU classes of its
    pool (with the most one node holds; for HAMi shares, the most one GPU offers), the admins'
    catalogs and model credentials, and who launches (`person`, a username: a notebook mounts
    their home volume; empty where no one launches). Partitions (MIG, HAMi) are offered to
    shared tenants only. Six queries."""
    if quota is None:
        quota = fleet_limits(grants_by_cluster(tenant))
    largest = largest_node_by_class(pool=pool_of(tenant))
    offers = []
    for key in sorted(largest):
        resource_class = resource_classes.parse(key)
        if (
            resource_class.kind in {"mig", "hami"}
            and tenant.isolation == Tenant.Isolation.DEDICATED
        ):
            continue  # partitions only inside one trust domain
        offers.append(GpuOffer(resource=key, label=resource_class.label, max_per_node=largest[key]))
    return LaunchContext(
        isolation=tenant.isolation,
        quota=dict(quota),
        gpu_offers=tuple(offers),
        catalog={"vm_images": vm_image_catalog(), **notebook_catalog(tenant)},
        credentials=ModelCredential.objects.kinds_of(tenant),
        person=person,
    )


def build_context(*, workload: Workload) -> BuildContext:
    tenant = workload.tenant
    groups = tenant.keycloak_groups(prefix=settings.OIDC_GROUP_PREFIX)
    groups_prefix = settings.KUBERNETES_OIDC_GROUPS_PREFIX
    return BuildContext(
        workload_id=workload.pk,
        name=workload.name,
        kind=workload.kind,
        tenant_slug=tenant.slug,
        namespace=tenant.namespace,
        isolation=tenant.isolation,
        cluster_domain=settings.KUBERNETES_CLUSTER_DOMAIN,
        admission_labels=admission_labels(workload.kind, queue=_local_queue(workload)),
        shares_admission_labels=admission_labels(workload.kind, queue=SHARES_LOCAL_QUEUE),
        priority_labels=priority_labels(workload.kind),
        priority_class=priority_class(workload.kind),
        access=external_access(),
        edit_groups=tuple(f"{groups_prefix}{g}" for g in groups["edit"]),
        view_groups=tuple(f"{groups_prefix}{g}" for g in groups["view"]),
        exposure=workload_exposure(workload.kind, edit_groups=tuple(groups["edit"])),
    )


def endpoint_queue_of(workload: Workload, spec: Mapping[str, Any] | None = None
                      ) -> EndpointQueue | None:
    """The queue of its own an inference endpoint has (for `spec`, else its stored one): one
    with a minimum on whole GPUs or MIG, whose minimum is never reclaimed; None for others."""
    if workload.kind != INFERENCE:
        return None
    return endpoint_queue(workload.name, workload.spec if spec is None else spec,
                          dedicated=workload.tenant.isolation == Tenant.Isolation.DEDICATED)


def _local_queue(workload: Workload) -> str:
    """The LocalQueue of the workload's GPU pods: its own for an endpoint that has one, else
    its tenant's."""
    return local_queue_name(workload.name) if endpoint_queue_of(workload) else LOCAL_QUEUE


def workload_exposure(kind_key: str, *, edit_groups: tuple[str, ...]) -> Exposure | None:
    """Where the fleet's gateway publishes a workload of `kind_key` (None: it is not): an
    endpoint behind its keys, a notebook behind sign-in for the tenant's `edit_groups`."""
    if kind_key == "notebook":
        return notebook_exposure(allowed_groups=edit_groups)
    return endpoint_exposure(kind_key)




def priority_class(kind_key: str) -> str:
    """The name of the portal's priority class for a workload of `kind_key`."""
    return PRIORITY_CLASSES[registry.kind(kind_key).priority].name


def priority_labels(kind_key: str) -> dict[str, str]:
    """Kueue's priority label alone, for the pods of a workload that hold no GPU."""
    return {PRIORITY_CLASS_LABEL: priority_class(kind_key)}


def admission_labels(kind_key: str, *, queue: str = LOCAL_QUEUE) -> dict[str, str]:
    """What queues a workload of `kind_key` in its tenant's LocalQueue `queue`, at its kind's
    priority (a kind puts them on the pods it has Kueue admit)."""
    return {QUEUE_NAME_LABEL: queue, **priority_labels(kind_key)}
