"""Nodes and their lifecycle: the states, and every move allowed between them, in one place."""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from core.choices import ColoredChoices, colored
from core.validators import validate_readable_name, validate_readable_text

from .. import identifiers
from .cluster import DEFAULT_CLUSTER, Cluster
from .site import Rack


@colored(
    {
        "discovered": "secondary",
        "validating": "info",
        "available": "success",
        "cordoned": "warning",
        "draining": "warning",
        "maintenance": "danger",
        "retired": "dark",
    }
)
class NodeState(ColoredChoices):
    DISCOVERED = "discovered", "Discovered"
    VALIDATING = "validating", "Validating"
    AVAILABLE = "available", "Available"
    CORDONED = "cordoned", "Cordoned"
    DRAINING = "draining", "Draining"
    MAINTENANCE = "maintenance", "Maintenance"
    RETIRED = "retired", "Retired"


# The lifecycle: the only moves a node may make. Guards that depend on recorded facts
# (validation passed, disks wiped and BMC reset) are checked by the lifecycle service.
TRANSITIONS: dict[str, frozenset[str]] = {
    NodeState.DISCOVERED: frozenset({NodeState.VALIDATING, NodeState.RETIRED}),
    NodeState.VALIDATING: frozenset({NodeState.AVAILABLE, NodeState.MAINTENANCE}),
    NodeState.AVAILABLE: frozenset({NodeState.CORDONED}),
    NodeState.CORDONED: frozenset({NodeState.AVAILABLE, NodeState.DRAINING}),
    NodeState.DRAINING: frozenset({NodeState.MAINTENANCE, NodeState.CORDONED}),
    NodeState.MAINTENANCE: frozenset(
        {NodeState.AVAILABLE, NodeState.VALIDATING, NodeState.RETIRED}
    ),
    NodeState.RETIRED: frozenset(),
}

# Whether the Kubernetes node should be unschedulable in each state (None: the portal leaves
# it alone, e.g. while a node is being discovered or burnt in by the validation tooling).
UNSCHEDULABLE_IN_STATE: dict[str, bool | None] = {
    NodeState.DISCOVERED: None,
    NodeState.VALIDATING: None,
    NodeState.AVAILABLE: False,
    NodeState.CORDONED: True,
    NodeState.DRAINING: True,
    NodeState.MAINTENANCE: True,
    NodeState.RETIRED: True,
}


@colored({"whole": "secondary", "mig": "info", "hami": "primary"})
class GpuSharing(ColoredChoices):
    """How a node's GPUs are handed out, as the cluster sync last saw it: whole GPUs (the NVIDIA
    device plugin), MIG partitions on some of them, or shares of every GPU through HAMi."""

    WHOLE = "whole", "Whole GPUs"
    MIG = "mig", "MIG partitions"
    HAMI = "hami", "HAMi shares"


class BiosProfile(models.TextChoices):
    BASELINE = "baseline", "Baseline"
    PERFORMANCE = "performance", "Performance"
    CONFIDENTIAL_COMPUTE = "confidential-compute", "Confidential compute"


class Node(models.Model):
    """A bare-metal server in a rack, known to Kubernetes by `k8s_name`."""

    class Role(models.TextChoices):
        GPU_WORKER = "gpu-worker", "GPU worker"
        CPU_WORKER = "cpu-worker", "CPU worker"
        CONTROL_PLANE = "control-plane", "Control plane"

    hostname = models.CharField(
        max_length=253, unique=True, validators=[identifiers.validate_hostname]
    )
    # The cluster it is a node of (by slug); its Kubernetes name is unique within that cluster.
    cluster = models.ForeignKey(
        Cluster, to_field="slug", on_delete=models.PROTECT, related_name="nodes",
        default=DEFAULT_CLUSTER,
    )
    k8s_name = models.CharField(
        "Kubernetes node name", max_length=253,
        validators=[identifiers.validate_k8s_node_name],
    )
    # Nullable so that a node discovered in the cluster can exist before anyone racked it.
    serial = models.CharField(
        max_length=100, unique=True, null=True, blank=True, validators=[validate_readable_name]
    )
    bmc_address = models.GenericIPAddressField(
        "BMC address", unique=True, null=True, blank=True, unpack_ipv4=True
    )
    rack = models.ForeignKey(
        Rack, on_delete=models.PROTECT, related_name="nodes", null=True, blank=True
    )
    position = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Lowest rack unit the node occupies."
    )
    height_units = models.PositiveSmallIntegerField(default=1, help_text="Rack units occupied.")
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.GPU_WORKER)
    state = models.CharField(
        max_length=20, choices=NodeState.choices, default=NodeState.DISCOVERED, db_index=True
    )
    state_changed_at = models.DateTimeField(default=timezone.now)
    bios_profile = models.CharField(
        "BIOS profile", max_length=30, choices=BiosProfile.choices, default=BiosProfile.BASELINE
    )
    cpu_cores = models.PositiveIntegerField(default=0)
    memory_gib = models.PositiveIntegerField(default=0)
    # Dedicated tenants get whole nodes; kept as the tenant's slug to keep inventory below tenants.
    reserved_for = models.CharField(max_length=63, blank=True, db_index=True)

    # What the last sync saw in the cluster (None: never seen).
    k8s_last_seen_at = models.DateTimeField(null=True, blank=True)
    k8s_ready = models.BooleanField(null=True, blank=True)
    k8s_unschedulable = models.BooleanField(null=True, blank=True)
    k8s_conditions = models.JSONField(default=list, blank=True)
    k8s_labels = models.JSONField(default=dict, blank=True, help_text="GPU and topology labels.")
    k8s_capacity = models.JSONField(default=dict, blank=True)
    # Pods seen on the node by the last sync: [{namespace, name, gpus, mig: {profile: n}}].
    placed_pods = models.JSONField(default=list, blank=True)
    gpus_in_use = models.PositiveIntegerField(default=0)
    mig_in_use = models.JSONField(default=dict, blank=True)
    # Whole, MIG or HAMi (the sync reads HAMi's `gpu=on` label and register annotation).
    gpu_sharing = models.CharField(
        "GPU sharing", max_length=10, choices=GpuSharing.choices, default=GpuSharing.WHOLE,
        db_index=True,
    )
    # What HAMi's device plugin registered, per GPU: [{uuid, index, count (vGPUs), memory_mib,
    # cores, type, health, mode}]; and what its pods hold: {memory_mib, cores, vgpus}.
    hami_devices = models.JSONField(default=list, blank=True)
    hami_in_use = models.JSONField(default=dict, blank=True)
    # While draining: what the drain waits for (pods terminating, a PodDisruptionBudget).
    drain_note = models.CharField(max_length=300, blank=True, validators=[validate_readable_text])

    # Retirement record: a node leaves the fleet only with its disks wiped and its BMC reset.
    disks_wiped_at = models.DateTimeField(null=True, blank=True)
    bmc_reset_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["hostname"]
        constraints = [
            models.UniqueConstraint(
                fields=["cluster", "k8s_name"], name="unique_k8s_node_per_cluster"
            ),
            models.UniqueConstraint(fields=["rack", "position"], name="unique_rack_position"),
            models.CheckConstraint(
                condition=Q(rack__isnull=True) | Q(position__isnull=False),
                name="racked_node_has_position",
            ),
            models.CheckConstraint(
                condition=Q(state__in=NodeState.values), name="node_state_valid"
            ),
            models.CheckConstraint(
                condition=Q(gpu_sharing__in=GpuSharing.values), name="node_gpu_sharing_valid"
            ),
        ]

    def __str__(self) -> str:
        return self.hostname

    @property
    def state_color(self) -> str:
        return NodeState.color(self.state)

    @property
    def gpu_sharing_color(self) -> str:
        return GpuSharing.color(self.gpu_sharing)

    @property
    def allowed_moves(self) -> list[str]:
        return sorted(TRANSITIONS[NodeState(self.state)])

    @property
    def top_unit(self) -> int | None:
        if self.position is None:
            return None
        return self.position + self.height_units - 1

    def clean(self) -> None:
        if self.rack_id and self.position is None:
            raise ValidationError({"position": "A racked node needs its rack position."})
        if self.rack_id and self.position is not None:
            rack = self.rack
            if self.position < 1 or self.top_unit > rack.units:
                raise ValidationError(
                    {"position": f"Units {self.position} to {self.top_unit} do not fit in {rack}."}
                )
            overlapping = (
                Node.objects.filter(rack_id=self.rack_id)
                .exclude(pk=self.pk)
                .annotate(top=F("position") + F("height_units") - 1)
                .filter(position__lte=self.top_unit, top__gte=self.position)
            )
            other = overlapping.first()
            if other is not None:
                raise ValidationError({"position": f"{other} already occupies those units."})


class NodeValidation(models.Model):
    """One burn-in or NCCL test result recorded while a node was validating."""

    class Kind(models.TextChoices):
        BURN_IN = "burn-in", "Burn-in"
        NCCL = "nccl", "NCCL all-reduce"

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="validations")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    passed = models.BooleanField()
    summary = models.CharField(max_length=500, blank=True, validators=[validate_readable_text])
    metrics = models.JSONField(
        default=dict, blank=True, help_text='For example {"busbw_gbps": 380} (JSON).'
    )
    recorded_at = models.DateTimeField(default=timezone.now)
    recorded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )

    class Meta:
        ordering = ["-recorded_at", "-id"]

    def __str__(self) -> str:
        return f"{self.node} {self.get_kind_display()}: {'pass' if self.passed else 'fail'}"


# Module-level names for the API schema's enum names (portal.settings ENUM_NAME_OVERRIDES).
NodeRole = Node.Role
ValidationKind = NodeValidation.Kind
