"""The devices inside a node: GPUs and network interfaces, with their topology."""

from django.core.exceptions import ValidationError
from django.db import models

from core.validators import validate_readable_name

from .. import identifiers, resource_classes
from .node import Node


class GPU(models.Model):
    """One accelerator in a node."""

    class Health(models.TextChoices):
        HEALTHY = "healthy", "Healthy"
        DEGRADED = "degraded", "Degraded"
        FAILED = "failed", "Failed"

    MODEL_CHOICES = [(m.key, m.display_name) for m in resource_classes.GPU_MODELS.values()]

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="gpus")
    index = models.PositiveSmallIntegerField()
    # Nullable: the cluster's labels count GPUs but do not name them; DCGM fills the UUID in.
    uuid = models.CharField("UUID", max_length=64, unique=True, null=True, blank=True)
    serial = models.CharField(
        max_length=100, unique=True, null=True, blank=True, validators=[validate_readable_name]
    )
    model = models.CharField(max_length=50, choices=MODEL_CHOICES, db_index=True)
    memory_gib = models.PositiveIntegerField()
    pci_bus_id = models.CharField("PCI bus ID", max_length=32, blank=True)
    mig_capable = models.BooleanField(default=False)
    mig_layout = models.JSONField(default=list, blank=True, help_text="MIG profiles configured.")
    ecc_enabled = models.BooleanField("ECC enabled", default=True)
    ecc_sbe_count = models.PositiveBigIntegerField("ECC single-bit errors", default=0)
    ecc_dbe_count = models.PositiveBigIntegerField("ECC double-bit errors", default=0)
    retired_pages = models.PositiveIntegerField(default=0)
    health = models.CharField(max_length=20, choices=Health.choices, default=Health.HEALTHY)
    # Topology: GPUs in one NVLink domain (an NVSwitch tray, or a GB200 NVL72 clique as GPU
    # Feature Discovery's `nvidia.com/gpu.clique` label names it) talk over NVLink.
    nvlink_domain = models.CharField(
        "NVLink domain", max_length=100, blank=True, validators=[validate_readable_name]
    )
    numa_node = models.PositiveSmallIntegerField("NUMA node", null=True, blank=True)

    class Meta:
        ordering = ["node__hostname", "index"]
        verbose_name = "GPU"
        constraints = [models.UniqueConstraint(fields=["node", "index"], name="unique_gpu_index")]
        indexes = [
            # The nodes with a failed (or degraded) GPU, for every node's health in the node
            # list: without it each of those lookups read all the fleet's GPUs.
            models.Index(fields=["health", "node"], name="gpu_health_node_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.node.hostname} GPU{self.index} ({self.model})"

    @property
    def model_label(self) -> str:
        model = resource_classes.GPU_MODELS.get(self.model)
        return model.display_name if model else self.model

    def clean(self) -> None:
        errors = {}
        if self.uuid:
            try:
                self.uuid = identifiers.normalize_gpu_uuid(self.uuid)
            except identifiers.InvalidIdentifier as exc:
                errors["uuid"] = str(exc)
        model = resource_classes.GPU_MODELS.get(self.model)
        if model is None:
            errors["model"] = f"Unknown GPU model {self.model!r}."
        elif self.mig_layout:
            unknown = sorted(set(self.mig_layout) - set(model.mig_profiles))
            if unknown:
                errors["mig_layout"] = f"{model.display_name} has no MIG profile {unknown[0]}."
        if errors:
            raise ValidationError(errors)


class NIC(models.Model):
    """A network interface of a node: Ethernet or an InfiniBand HCA port on a rail."""

    class Kind(models.TextChoices):
        ETHERNET = "ethernet", "Ethernet"
        INFINIBAND = "infiniband", "InfiniBand"

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="nics")
    name = models.CharField(
        max_length=50, help_text="e.g. mlx5_0, eno1", validators=[validate_readable_name]
    )
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.ETHERNET)
    mac_address = models.CharField("MAC address", max_length=17, unique=True, null=True, blank=True)
    ib_guid = models.CharField(
        "InfiniBand GUID", max_length=19, unique=True, null=True, blank=True
    )
    link_speed_gbps = models.PositiveIntegerField("Link speed (Gb/s)", default=0)
    fabric = models.CharField(
        max_length=50,
        blank=True,
        help_text="e.g. ib-compute, storage",
        validators=[validate_readable_name],
    )
    numa_node = models.PositiveSmallIntegerField("NUMA node", null=True, blank=True)
    # Rail-optimised fabrics wire NIC n of every node to leaf switch n.
    rail = models.PositiveSmallIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["node__hostname", "name"]
        verbose_name = "NIC"
        constraints = [models.UniqueConstraint(fields=["node", "name"], name="unique_nic_name")]

    def __str__(self) -> str:
        return f"{self.node.hostname} {self.name}"

    def clean(self) -> None:
        errors = {}
        if self.mac_address:
            try:
                self.mac_address = identifiers.normalize_mac(self.mac_address)
            except identifiers.InvalidIdentifier as exc:
                errors["mac_address"] = str(exc)
        if self.ib_guid:
            try:
                self.ib_guid = identifiers.normalize_guid(self.ib_guid)
            except identifiers.InvalidIdentifier as exc:
                errors["ib_guid"] = str(exc)
        if self.kind == self.Kind.INFINIBAND and not self.ib_guid:
            errors.setdefault("ib_guid", "An InfiniBand port needs its GUID.")
        if errors:
            raise ValidationError(errors)


# Module-level names for the API schema's enum names (portal.settings ENUM_NAME_OVERRIDES).
GpuHealth = GPU.Health
NicKind = NIC.Kind
