"""What every workload kind provides: pure functions over plain data, no Django, no I/O.

One module per kind (vcluster, inference, vm, slurm, notebook) implements `WorkloadKind`; the
registry (`tenants.workloads.registry`) lists them for every layer. The machinery above
(admission, reconciliation, pages, API) only ever talks to a kind through this contract:

- `validate(spec, ctx)`    the user's input → the clean spec, or `SpecError` with field errors
- `demand(spec)`           what it holds of each resource class (`gpu:…`, `mig:…`, `hami:…`,
                           `cpu`, `memory-gib`, `storage-gib`, `count:<kind>`) while it exists
- `manifests(spec, ctx)`   the Kubernetes objects, in apply order, each carrying `ctx.labels`
                           and living in `ctx.namespace` (one without the workload-id label
                           outlives the workload: applied, never pruned or deleted; a
                           notebook's home volume)
- `observe(objects, spec, ctx)`  the objects read back from the cluster → an `Observation`
- `scale(spec, changes, ctx)`    a running workload's new spec (or `SpecError`)
- `connection(objects, spec, ctx)`  what a person needs to use it (URLs, commands), shown when ready
- `gpu_pods(spec, ctx)`    a regular expression the names of the pods holding its GPUs match
                           (fully) in `ctx.namespace`: DCGM labels each GPU's series by pod

Specs are JSON-ready dicts (stored in the database); numbers are ints, never floats.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol

from inventory import resource_classes

Manifest = dict[str, Any]
ObjectKey = tuple[str, str, str]  # (apiVersion, kind, name) within the workload's namespace

# Labels every object a workload owns carries (selected on to observe, prune and delete).
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY = "ai-factory-portal"
LABEL_TENANT = "portal.ai-factory.io/tenant"
LABEL_WORKLOAD_ID = "portal.ai-factory.io/workload-id"
LABEL_KIND = "portal.ai-factory.io/workload-kind"
# Set by the inventory on nodes reserved for a dedicated tenant: label and NoSchedule taint.
RESERVED_FOR_KEY = "portal.ai-factory.io/reserved-for"


class SpecError(ValueError):
    """The spec is not acceptable: `fields` maps a spec field (dotted for nested ones, e.g.
    `workers.gpus`) or `__all__` to the messages a person reads."""

    def __init__(self, fields: Mapping[str, list[str] | str]) -> None:
        self.fields = {k: [v] if isinstance(v, str) else list(v) for k, v in fields.items()}
        super().__init__("; ".join(f"{k}: {' '.join(v)}" for k, v in self.fields.items()))


@dataclass(frozen=True)
class GpuOffer:
    """One GPU resource class a tenant may ask for, and the most one node of its pool holds.

    For HAMi's two classes of a model (`hami:<model>:memory-gib`, `hami:<model>:cores`) it is
    the most one GPU of the pool offers, its GiB of memory or its percent of compute: a vGPU
    lives on one GPU, whatever the node around it."""

    resource: str  # gpu:nvidia-h100-80gb | mig:nvidia-a100-80gb:1g.10gb | hami:…:memory-gib
    label: str  # "NVIDIA H100 80GB HBM3 GPUs"
    max_per_node: int  # whole GPUs (or MIG instances) on the largest node; HAMi: on one GPU


@dataclass(frozen=True)
class LaunchContext:
    """What validation may consult besides the spec: the tenant's isolation and quota, and what
    the tenant's pool of nodes can run. Built by the services from the database."""

    isolation: Literal["dedicated", "shared"]
    quota: Mapping[str, int]  # resource class → granted limit
    gpu_offers: tuple[GpuOffer, ...] = ()  # GPU classes of the tenant's pool
    # Admin-kept lists a kind may need (e.g. VM boot images: key → dict); empty by default.
    catalog: Mapping[str, Any] = field(default_factory=dict)
    # The tenant's model credentials an endpoint may pick: name → kind (huggingface | s3).
    credentials: Mapping[str, str] = field(default_factory=dict)
    # Who launches (their username): a notebook mounts that person's home volume in the tenant.
    # Empty where no one launches (scaling, policies): the spec keeps the home it has.
    person: str = ""

    def offer(self, resource: str) -> GpuOffer | None:
        return next((o for o in self.gpu_offers if o.resource == resource), None)

    def hami_offer(self, model_key: str) -> tuple[GpuOffer, GpuOffer] | None:
        """The pool's HAMi memory and compute offers of a model, if it has both."""
        memory = self.offer(resource_classes.hami_key(model_key, "memory-gib"))
        cores = self.offer(resource_classes.hami_key(model_key, "cores"))
        return (memory, cores) if memory and cores else None

    def hami_models(self) -> list[str]:
        """The models whose GPUs the pool shares through HAMi, in the order offered."""
        models = []
        for offer in self.gpu_offers:
            kind, _, rest = offer.resource.partition(":")
            model_key = rest.partition(":")[0]
            if kind == "hami" and model_key not in models and self.hami_offer(model_key):
                models.append(model_key)
        return models

    @property
    def partitions_allowed(self) -> bool:
        """MIG (and HAMi) partitions only inside one trust domain: never for dedicated tenants."""
        return self.isolation != "dedicated"


@dataclass(frozen=True)
class ExternalAccess:
    """How people reach workloads from outside the cluster (fleet-wide settings).

    vCluster API servers: a TLSRoute on the fleet Gateway's TLS-passthrough listener, by SNI
    hostname `<release>.<namespace>.<vcluster_domain>`, signed in with Keycloak (kubelogin).
    SSH to VMs and Slurm login nodes: a LoadBalancer Service each, open to `ssh_sources`."""

    vcluster_domain: str = ""  # empty: vClusters are reached in-cluster only
    gateway_namespace: str = "ingress-gateway"
    gateway_name: str = "fleet"
    gateway_listener: str = "tls-passthrough"  # the listener's name: a route's sectionName
    gateway_port: int = 443
    oidc_issuer: str = ""  # Keycloak realm URL; empty: no OIDC sign-in to vClusters
    oidc_client_id: str = ""  # the public client kubelogin uses
    oidc_groups_prefix: str = "oidc:"  # as the host API server's --oidc-groups-prefix
    ssh_load_balancer: bool = False
    ssh_sources: tuple[str, ...] = ("0.0.0.0/0", "::/0")

    @property
    def vcluster_oidc(self) -> bool:
        return bool(self.vcluster_domain and self.oidc_issuer and self.oidc_client_id)


@dataclass(frozen=True)
class OidcGate:
    """Sign-in at the gateway (notebooks): an Envoy Gateway SecurityPolicy's `oidc` with the
    Keycloak realm and a confidential client, and its `jwt` + `authorization` admitting only a
    token whose groups claim names one of `allowed_groups` (the tenant's owner and member group
    paths, as Keycloak puts them in tokens)."""

    issuer: str  # the Keycloak realm URL
    client_id: str
    # The Secret (key `client-secret`) in the workload's namespace holding the client's secret:
    # the tenant reconcile syncs it from NOTEBOOK_OIDC_CLIENT_SECRET.
    client_secret_name: str
    jwks_uri: str  # the realm's keys, to check the access token the OIDC filter keeps
    allowed_groups: tuple[str, ...]
    groups_claim: str = "groups"


@dataclass(frozen=True)
class Exposure:
    """Where a kind publishes a workload outside the cluster: the fleet's Gateway API Gateway
    and its HTTPS listener, the DNS suffix its hostnames take, and the API keys (the names of
    the Secrets holding them) its gateway policy admits."""

    gateway_namespace: str
    gateway_name: str
    listener: str  # the Gateway's HTTPS listener (a route's parentRef sectionName)
    domain: str  # each workload is one label under it, covered by the listener's certificate
    # Where people reach a hostname, when not `https://<hostname>` (the simulated fleet's
    # stand-in for the gateway, under the portal's URL).
    url_prefix: str = ""
    credentials: tuple[str, ...] = ()  # Secret names, in the workload's namespace
    # Keycloak sign-in at the gateway instead of API keys (notebooks); None: keys.
    oidc: OidcGate | None = None

    def url(self, hostname: str) -> str:
        return f"{self.url_prefix.rstrip('/')}/{hostname}" if self.url_prefix else (
            f"https://{hostname}")


@dataclass(frozen=True)
class BuildContext:
    """Who the objects are for: names, namespace, owner labels, and where they may run."""

    workload_id: int
    name: str  # the workload's DNS-1123 label, unique in the tenant
    kind: str
    tenant_slug: str
    namespace: str  # the tenant's namespace: every object lives there
    isolation: Literal["dedicated", "shared"]
    # Where the portal is reached (links in connection details); the cluster's DNS suffix.
    cluster_domain: str = "cluster.local"
    # Labels that queue a GPU workload's pods in its tenant's Kueue LocalQueue at its kind's
    # priority (kueue.x-k8s.io/queue-name, /priority-class); empty: not queued.
    admission_labels: Mapping[str, str] = field(default_factory=dict)
    # The same for the pods of a HAMi share: the tenant's `shares` LocalQueue, whose
    # ClusterQueue meters vGPUs, their memory and compute (tenants.enforcement.manifests.kueue).
    shares_admission_labels: Mapping[str, str] = field(default_factory=dict)
    # The kind's priority alone (kueue.x-k8s.io/priority-class), for its pods that hold no GPU:
    # Kueue queues them in the namespace's LocalQueue `default` by itself (its defaulting), and
    # at this priority a GPU pod of the same kind cannot preempt them for CPU or memory.
    priority_labels: Mapping[str, str] = field(default_factory=dict)
    # The kind's priority: the name of both Kueue's WorkloadPriorityClass and the Kubernetes
    # PriorityClass (for pods that cannot carry the label); empty: none.
    priority_class: str = ""
    # Reaching the workload from outside the cluster, and the tenant's Kubernetes group names
    # (OIDC groups prefix + Keycloak group path) that edit and view it, as in its namespace.
    access: ExternalAccess = field(default_factory=ExternalAccess)
    edit_groups: tuple[str, ...] = ()
    view_groups: tuple[str, ...] = ()
    # Published through the fleet's gateway (inference endpoints); None: in the cluster only.
    exposure: Exposure | None = None

    @property
    def partitions_allowed(self) -> bool:
        """As LaunchContext's: a spec stored while the tenant was shared is not built for it
        once it is dedicated."""
        return self.isolation != "dedicated"

    @property
    def labels(self) -> dict[str, str]:
        return {
            LABEL_MANAGED_BY: MANAGED_BY,
            LABEL_TENANT: self.tenant_slug,
            LABEL_WORKLOAD_ID: str(self.workload_id),
            LABEL_KIND: self.kind,
        }

    def metadata(self, name: str, **extra: Any) -> dict[str, Any]:
        """`metadata` for an owned object: the name, the namespace and the owner labels."""
        labels = {**self.labels, **extra.pop("labels", {})}
        return {"name": name, "namespace": self.namespace, "labels": labels, **extra}

    def gpu_node_selector(self, product_label: str | None) -> dict[str, str]:
        """Node selector for GPU pods: the GPU model, and a dedicated tenant's reserved nodes."""
        selector = {"nvidia.com/gpu.product": product_label} if product_label else {}
        if self.isolation == "dedicated":
            selector[RESERVED_FOR_KEY] = self.tenant_slug
        return selector

    def gpu_tolerations(self) -> list[dict[str, str]]:
        """A dedicated tenant's pods tolerate the taint of the nodes reserved for it (only)."""
        if self.isolation != "dedicated":
            return []
        return [
            {"key": RESERVED_FOR_KEY, "operator": "Equal", "value": self.tenant_slug,
             "effect": "NoSchedule"}
        ]


State = Literal["progressing", "ready", "degraded", "failed", "absent"]


@dataclass(frozen=True)
class Observation:
    """What the cluster says of a workload now.

    progressing: being created or changed, not ready yet; ready: serving; degraded: was ready,
    now partly unavailable (it may recover); failed: the cluster gave up, `reason`/`message`
    say why in its words; absent: none of its objects exist (deleted, or never applied).
    """

    state: State
    reason: str = ""
    message: str = ""
    # Condition dicts as the objects report them (type, status, reason, message), newest first.
    conditions: tuple[dict[str, Any], ...] = ()
    # Kind-specific figures for the page: replicas ready/desired, printable status, IP, URL…
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # The cluster's words are shown to people as text: Markdown's `code` quotes (Hugging
        # Face's errors, the operators') read as plain quotes there, not as stray backticks.
        object.__setattr__(self, "message", in_peoples_words(self.message))


_BACKTICKED = re.compile(r"`+([^`]*)`+")
# The device plugins' extended resources as the scheduler names them, as people read them.
_EXTENDED_RESOURCES = (
    (re.compile(r"\b(?:requests|limits)\.(?=nvidia\.com/)"), ""),  # a ResourceQuota's keys
    (re.compile(r"\bnvidia\.com/gpumem-percentage\b"), "HAMi GPU memory (percent)"),
    (re.compile(r"\bnvidia\.com/gpumem\b"), "HAMi GPU memory"),
    (re.compile(r"\bnvidia\.com/gpucores\b"), "HAMi GPU compute"),
    (re.compile(r"\bnvidia\.com/gpu\b(?![\w-]|\.\w)"), "GPUs"),  # not gpu.product
    (re.compile(r"\bnvidia\.com/mig-([\w.]+)"), r"MIG \1 instances"),
)


def in_peoples_words(text: str) -> str:
    """The cluster's words for a page: its resource names ("Insufficient nvidia.com/gpu") as
    people read them ("Insufficient GPUs"), Markdown's code quotes as plain quotes."""
    if "nvidia.com/" in text:
        for pattern, words in _EXTENDED_RESOURCES:
            text = pattern.sub(words, text)
        for device, words in _passthrough_words().items():
            text = text.replace(device, words)
    return plain_quotes(text)


def _passthrough_words() -> dict[str, str]:
    """The GPU models as the passthrough device plugin names them (nvidia.com/GH100_H100_…)."""
    return {resource: f"{resource_classes.GPU_MODELS[key].display_name} GPUs (passthrough)"
            for key, resource in resource_classes.PASSTHROUGH_RESOURCES.items()
            if key in resource_classes.GPU_MODELS}


def plain_quotes(text: str) -> str:
    """`text` with its Markdown code quotes (`repo_id`) as typographic single quotes."""
    if "`" not in text:
        return text
    return _BACKTICKED.sub("\u2018\\1\u2019", text).replace("`", "\u2019")


@dataclass(frozen=True)
class Connection:
    """How a person uses a ready workload: labelled values and commands, shown on its page."""

    items: tuple[tuple[str, str], ...] = ()  # (label, value) e.g. ("Endpoint URL", "https://…")
    commands: tuple[tuple[str, str], ...] = ()  # (label, shell command) e.g. ("Try it", "curl …")
    notes: tuple[str, ...] = ()  # short paragraphs: how to reach it from the tenant's namespace


class WorkloadKind(Protocol):
    """The contract of one kind's module (see the module docstring)."""

    KEY: ClassVar[str]  # "vcluster" | "inference" | "vm" | "slurm" | "notebook": its key
    LABEL: ClassVar[str]  # "vCluster" — singular, for people
    # Every (apiVersion, kind) the kind may create: observed, pruned and deleted by label.
    OWNED_KINDS: ClassVar[tuple[tuple[str, str], ...]]

    def validate(self, spec: Mapping[str, Any], ctx: LaunchContext) -> dict[str, Any]: ...

    def demand(self, spec: Mapping[str, Any]) -> dict[str, int]: ...

    def manifests(self, spec: Mapping[str, Any], ctx: BuildContext) -> list[Manifest]: ...

    def observe(
        self, objects: Mapping[ObjectKey, Manifest], spec: Mapping[str, Any], ctx: BuildContext
    ) -> Observation: ...

    def scale(
        self, spec: Mapping[str, Any], changes: Mapping[str, Any], ctx: LaunchContext
    ) -> dict[str, Any]: ...

    def connection(
        self, objects: Mapping[ObjectKey, Manifest], spec: Mapping[str, Any], ctx: BuildContext
    ) -> Connection: ...

    def gpu_pods(self, spec: Mapping[str, Any], ctx: BuildContext) -> str: ...


# The scheduling gate Kueue puts on a pod it has not admitted yet (its pod integration), and
# the reason a workload waiting for it is progressing with.
KUEUE_ADMISSION_GATE = "kueue.x-k8s.io/admission"
QUEUED_REASON = "Queued"


def queued_by_kueue(pod: Manifest | None) -> bool:
    """Whether Kueue holds `pod` in its tenant's queue: its admission gate is still on."""
    gates = ((pod or {}).get("spec") or {}).get("schedulingGates") or []
    return any(isinstance(g, Mapping) and g.get("name") == KUEUE_ADMISSION_GATE for g in gates)


def queued_words(count: int, of: str) -> str:
    """What a page says of `count` pods (`of`: "replica", "worker") Kueue holds in the queue."""
    plural = count != 1
    return (f"{count} {of}{'s' if plural else ''} waiting in the tenant's queue: Kueue admits "
            f"{'them' if plural else 'it'} when the tenant's GPU quota, or what its cohort "
            "lends, has room.")


def condition(obj: Manifest | None, kind: str) -> dict[str, Any] | None:
    """The condition of type `kind` in `obj.status.conditions`, if any."""
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return cond
    return None


def whole(value: Any, *, field_name: str, minimum: int = 0, maximum: int | None = None) -> int:
    """An int from user input (an int, or a string of digits), within bounds; else SpecError."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise SpecError({field_name: ["A whole number."]})
    if isinstance(value, str):
        if not value.strip().lstrip("-").isdigit():
            raise SpecError({field_name: ["A whole number."]})
        try:
            value = int(value.strip())
        except ValueError:  # "--5", "²", or more digits than int() reads
            raise SpecError({field_name: ["A whole number."]}) from None
    if value < minimum:
        raise SpecError({field_name: [f"At least {minimum:,}."]})
    if maximum is not None and value > maximum:
        raise SpecError({field_name: [f"At most {maximum:,}."]})
    return value
