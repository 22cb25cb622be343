"""What the fleet is: sites, racks, nodes and their GPUs."""

from django.db import models

from . import resource_classes


class Site(models.Model):
    """A data centre or hall that holds racks."""

    slug = models.SlugField(max_length=63, unique=True)
    name = models.CharField(max_length=100)
    region = models.CharField(max_length=100, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Rack(models.Model):
    """A rack in a site."""

    site = models.ForeignKey(Site, on_delete=models.PROTECT, related_name="racks")
    name = models.CharField(max_length=50)
    units = models.PositiveSmallIntegerField(default=42)

    class Meta:
        ordering = ["site__name", "name"]
        constraints = [
            models.UniqueConstraint(fields=["site", "name"], name="unique_rack_per_site")
        ]

    def __str__(self) -> str:
        return f"{self.site.slug}/{self.name}"


class NodeState(models.TextChoices):
    DISCOVERED = "discovered", "Discovered"
    VALIDATING = "validating", "Validating"
    AVAILABLE = "available", "Available"
    CORDONED = "cordoned", "Cordoned"
    DRAINING = "draining", "Draining"
    MAINTENANCE = "maintenance", "Maintenance"
    RETIRED = "retired", "Retired"


NODE_STATE_COLORS = {
    NodeState.DISCOVERED: "secondary",
    NodeState.VALIDATING: "info",
    NodeState.AVAILABLE: "success",
    NodeState.CORDONED: "warning",
    NodeState.DRAINING: "warning",
    NodeState.MAINTENANCE: "danger",
    NodeState.RETIRED: "dark",
}


class Node(models.Model):
    """A bare-metal server in a rack, known to Kubernetes by `k8s_name`."""

    class Role(models.TextChoices):
        GPU_WORKER = "gpu-worker", "GPU worker"
        CPU_WORKER = "cpu-worker", "CPU worker"
        CONTROL_PLANE = "control-plane", "Control plane"

    hostname = models.CharField(max_length=253, unique=True)
    k8s_name = models.CharField("Kubernetes node name", max_length=253, unique=True)
    serial = models.CharField(max_length=100, unique=True)
    rack = models.ForeignKey(Rack, on_delete=models.PROTECT, related_name="nodes")
    position = models.PositiveSmallIntegerField(help_text="Lowest rack unit the node occupies.")
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.GPU_WORKER)
    state = models.CharField(
        max_length=20, choices=NodeState.choices, default=NodeState.DISCOVERED, db_index=True
    )
    cpu_cores = models.PositiveIntegerField(default=0)
    memory_gib = models.PositiveIntegerField(default=0)
    # Dedicated tenants get whole nodes; kept as the tenant's slug to keep inventory below tenants.
    reserved_for = models.CharField(max_length=63, blank=True, db_index=True)

    class Meta:
        ordering = ["hostname"]

    def __str__(self) -> str:
        return self.hostname

    @property
    def state_color(self) -> str:
        return NODE_STATE_COLORS[NodeState(self.state)]


class GPU(models.Model):
    """One accelerator in a node."""

    class Health(models.TextChoices):
        HEALTHY = "healthy", "Healthy"
        DEGRADED = "degraded", "Degraded"
        FAILED = "failed", "Failed"

    MODEL_CHOICES = [(m.key, m.display_name) for m in resource_classes.GPU_MODELS.values()]

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="gpus")
    index = models.PositiveSmallIntegerField()
    uuid = models.CharField("UUID", max_length=64, unique=True)
    model = models.CharField(max_length=50, choices=MODEL_CHOICES, db_index=True)
    memory_gib = models.PositiveIntegerField()
    mig_capable = models.BooleanField(default=False)
    mig_layout = models.JSONField(default=list, blank=True, help_text="MIG profiles configured.")
    health = models.CharField(max_length=20, choices=Health.choices, default=Health.HEALTHY)

    class Meta:
        ordering = ["node__hostname", "index"]
        verbose_name = "GPU"
        constraints = [models.UniqueConstraint(fields=["node", "index"], name="unique_gpu_index")]

    def __str__(self) -> str:
        return f"{self.node.hostname} GPU{self.index} ({self.model})"
