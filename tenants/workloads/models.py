"""Workloads: what a tenant runs on the fleet, its lifecycle, and the history of both."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Case, F, OuterRef, Q, Subquery, When
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from core.choices import ColoredChoices, colored
from core.reconcile import Reconciled
from core.state_machine import transition
from core.validators import validate_cost_label, validate_dns1123_label
from inventory.models import DEFAULT_CLUSTER, Cluster

from ..access.models import Tenant
from .advice import failure_advice

# The admins' images live beside, imported from here too (migrations name the validator here).
from .images import NotebookImage, VmImage, validate_oci_reference  # noqa: F401
from .kinds.base import QUEUED_REASON
from .registry import CHOICES as KIND_CHOICES
from .registry import KINDS


@colored(
    {
        "pending": "secondary",
        "provisioning": "info",
        "ready": "success",
        "degraded": "warning",
        "failed": "danger",
        "deleting": "dark",
        "deleted": "light",
    }
)
class WorkloadStatus(ColoredChoices):
    PENDING = "pending", "Pending"
    PROVISIONING = "provisioning", "Provisioning"
    READY = "ready", "Ready"
    DEGRADED = "degraded", "Degraded"
    FAILED = "failed", "Failed"
    DELETING = "deleting", "Deleting"
    DELETED = "deleted", "Deleted"


S = WorkloadStatus
# The one place the lifecycle's moves are listed. What the cluster reports drives most of them
# (level-triggered): a failed workload that the cluster later reports ready is ready.
TRANSITIONS: dict[str, frozenset[str]] = {
    S.PENDING: frozenset({S.PROVISIONING, S.READY, S.DEGRADED, S.FAILED, S.DELETING}),
    S.PROVISIONING: frozenset({S.READY, S.DEGRADED, S.FAILED, S.DELETING}),
    S.READY: frozenset({S.PROVISIONING, S.DEGRADED, S.FAILED, S.DELETING}),
    S.DEGRADED: frozenset({S.PROVISIONING, S.READY, S.FAILED, S.DELETING}),
    S.FAILED: frozenset({S.PROVISIONING, S.READY, S.DEGRADED, S.DELETING}),
    S.DELETING: frozenset({S.DELETED}),
    S.DELETED: frozenset(),
}
# Still being worked on: the detail page polls, the observation sweep watches.
IN_PROGRESS = frozenset({S.PENDING, S.PROVISIONING, S.DEGRADED, S.DELETING})
# Holding its quota (everything not deleted counts, failed included: its objects may exist).
HOLDING = frozenset(set(S.values) - {S.DELETED})
# The reason a settled, halted workload is Ready with (KubeVirt's printableStatus of a VM that
# was stopped): its badge says Stopped.
STOPPED_REASON = "Stopped"


class ObserveSweep(models.Model):
    """The last completed observe sweep of one cluster (a row per cluster): when it read the
    cluster, and what it saw.

    A sweep writes a workload's row only when what it saw changed; that it looked at all the
    others is this one row (`Workload.objects.with_observed_at()` reads the two together).
    """

    cluster = models.OneToOneField(
        Cluster, to_field="slug", on_delete=models.CASCADE, related_name="observe_sweep",
        default=DEFAULT_CLUSTER,
    )
    started_at = models.DateTimeField(help_text="Before it read the live workloads.")
    finished_at = models.DateTimeField()
    observed = models.PositiveIntegerField(default=0, help_text="Workloads it looked at.")
    changed = models.PositiveIntegerField(default=0, help_text="Workloads whose state it wrote.")

    def __str__(self) -> str:
        return f"observe sweep of {self.cluster_id} at {self.started_at:%Y-%m-%d %H:%M:%S}"


def observed_at() -> Case:
    """When the portal last saw a workload's state: its own last recorded observation, or the
    last completed sweep when that sweep covered it (live, applied before the sweep began)."""
    sweep = Subquery(
        ObserveSweep.objects.filter(cluster=OuterRef("cluster_id")).values("started_at")
    )
    covered = (
        Q(applied_version__gt=0)
        & ~Q(applied_at__gt=sweep)
        & ~Q(status__in=(WorkloadStatus.DELETING, WorkloadStatus.DELETED))
    )
    own = F("observation_recorded_at")
    return Case(
        # Each side coalesced: SQLite's MAX() of a NULL is NULL (PostgreSQL's GREATEST skips it).
        When(covered, then=Greatest(Coalesce(own, sweep), Coalesce(sweep, own))),
        default=own,
    )


class WorkloadQuerySet(models.QuerySet):
    def with_observed_at(self) -> WorkloadQuerySet:
        """Each workload with `observed_at`, when the portal last saw its state."""
        return self.annotate(observed_at=observed_at())


class Workload(Reconciled):
    """One thing a tenant runs: a vCluster, an inference endpoint, a VM or a Slurm cluster."""

    Status = WorkloadStatus

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="workloads")
    kind = models.CharField(max_length=20, choices=KIND_CHOICES)
    name = models.CharField(max_length=63, validators=[validate_dns1123_label])
    # Where it runs, chosen at launch (placement) and kept: moving is delete and relaunch.
    cluster = models.ForeignKey(
        Cluster, to_field="slug", on_delete=models.PROTECT, related_name="workloads",
        default=DEFAULT_CLUSTER,
    )
    launched_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        on_delete=models.SET_NULL,
        related_name="workloads_launched",
    )
    # Set at launch to group its cost (a project, an experiment); copied onto its usage.
    label = models.CharField(max_length=63, blank=True, default="", db_default="",
                             validators=[validate_cost_label],
                             help_text="A free label grouping its cost (project, experiment).")
    # The clean spec the kind validated (what the person asked for), and what it holds.
    spec = models.JSONField(default=dict)
    demand = models.JSONField(default=dict, help_text="Resource class → units held.")
    status = models.CharField(
        max_length=20, choices=WorkloadStatus.choices, default=WorkloadStatus.PENDING
    )
    status_reason = models.CharField(max_length=200, blank=True)
    status_message = models.TextField(blank=True)
    # What the cluster last said (conditions, details) and how to use it (connection), and
    # when that was recorded on this row: a change, or a look at this workload alone. When the
    # portal last saw it is `Workload.objects.with_observed_at()` (a sweep writes only changes).
    observed = models.JSONField(default=dict, blank=True)
    observation_recorded_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    ready_at = models.DateTimeField(null=True, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True)
    # Its GPUs as DCGM saw them over the last hour (the idle sweep writes it; null: unmeasured).
    gpu_utilization = models.DecimalField(max_digits=5, decimal_places=2, null=True, blank=True,
                                          help_text="Mean GPU utilization, last hour (percent).")
    gpu_measured_at = models.DateTimeField(null=True, blank=True)
    # Set by its people: the idle policy never acts on it (it still shows it idle).
    keep_running_reason = models.CharField(max_length=200, blank=True)

    objects = WorkloadQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            # A name is taken while its workload exists; once deleted it may be used again.
            models.UniqueConstraint(
                fields=["tenant", "name"],
                condition=~models.Q(status="deleted"),
                name="unique_live_workload_name_per_tenant",
            ),
            models.CheckConstraint(
                condition=models.Q(status__in=WorkloadStatus.values), name="workload_status_known"
            ),
        ]
        indexes = [
            # With each workload's demand: what a tenant's workloads hold (every tenant page's
            # quota bars) is read from the index alone, not from a page of the table per
            # workload (PostgreSQL; elsewhere the index has the two columns only).
            models.Index(
                fields=["tenant", "status"], include=["demand"], name="workload_tenant_demand_idx"
            ),
            models.Index(fields=["status", "kind"]),
            # A tenant's live workloads, newest first: the workload list's pages and the
            # dashboard's latest ones read an index range instead of sorting every workload.
            models.Index(
                fields=["tenant", "-created_at", "-id"],
                condition=~models.Q(status="deleted"),
                name="workload_live_recent_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind_label} {self.name}"

    def move_to(self, target: str, **changes) -> None:
        """Move to `target` or raise InvalidTransition (also when another worker moved first)."""
        transition(self, target=target, transitions=TRANSITIONS, **changes)

    @property
    def kind_entry(self):
        return KINDS[self.kind]

    @property
    def kind_label(self) -> str:
        return KINDS[self.kind].label if self.kind in KINDS else self.kind

    @property
    def status_color(self) -> str:
        if self.queued:
            return "info"
        return "secondary" if self.stopped else WorkloadStatus.color(self.status)

    @property
    def stopped(self) -> bool:
        """Halted on purpose and settled (a VM its tenant stopped): ready for nothing but to be
        started again, so its badge says Stopped, not Ready."""
        return self.status == WorkloadStatus.READY and self.status_reason == STOPPED_REASON

    @property
    def queued(self) -> bool:
        """Being provisioned, its pods waiting in the tenant's Kueue queue for quota: its badge
        says Queued (fair share at work, not a fault)."""
        return self.status == WorkloadStatus.PROVISIONING and self.status_reason == QUEUED_REASON

    @property
    def cluster_unreachable(self) -> bool:
        """Its cluster does not answer: what it last said of this workload may no longer hold
        (lists select the cluster with it: CLUSTER_FIELDS)."""
        return self.status != WorkloadStatus.DELETED and not self.cluster.reachable and (
            self.cluster.state != Cluster.State.RETIRED
        )

    @property
    def status_detail(self) -> str:
        """Unknown, since when and why, while its cluster does not answer; else empty."""
        return f"Unknown — {self.cluster.unreachable_note}" if self.cluster_unreachable else ""

    @property
    def status_label(self) -> str:
        """The badge's word: the status, Unknown while its cluster does not answer, Stopped
        for a stopped VM, Queued for a workload waiting in the queue."""
        if self.cluster_unreachable:
            return "Unknown"
        if self.queued:
            return "Queued"
        return "Stopped" if self.stopped else self.get_status_display()

    @property
    def in_progress(self) -> bool:
        return self.status in IN_PROGRESS or (
            self.status != WorkloadStatus.DELETED and not self.in_sync
        )

    @property
    def is_live(self) -> bool:
        return self.status not in (WorkloadStatus.DELETING, WorkloadStatus.DELETED)

    @property
    def failure_advice(self) -> str:
        """What to do about it when it failed, fitting what the cluster said caused it."""
        if self.status != WorkloadStatus.FAILED:
            return ""
        entry = KINDS.get(self.kind)
        return failure_advice(kind=self.kind, reason=self.status_reason or "",
                              message=self.status_message or "",
                              scalable=bool(entry and entry.scalable))[0]

    @property
    def serves(self) -> tuple[tuple[str, str], ...]:
        """What it serves, from its spec (an inference endpoint's model, runtime and GPUs);
        empty for kinds that serve nothing."""
        serves = getattr(self.kind_entry.module, "serves", None) if self.kind in KINDS else None
        try:
            return serves(self.spec or {}) if serves else ()
        except (KeyError, TypeError, ValueError):
            return ()

    @property
    def serves_keys(self) -> tuple[str, ...]:
        """The observed details the page shows on their own: the runtime KServe reports
        (`serves` shows it), a notebook's address, interface, image, home volume and power
        (its own card)."""
        if self.kind == "notebook":
            return ("url", "interface", "image", "home", "power")
        return ("runtime",) if self.serves else ()

    @property
    def connection(self) -> dict:
        return self.observed.get("connection") or {}

    @property
    def details(self) -> dict:
        return self.observed.get("details") or {}

    @property
    def queue(self) -> dict | None:
        """Kueue's side while its pods wait in the tenant's queue (position, Kueue's message,
        the flavor it waits for, what it would borrow), as last observed; else None."""
        return self.details.get("queue") or None

    @property
    def kind_details(self) -> dict:
        """The kind's own figures: the details without Kueue's side and an endpoint's key
        Secrets (each shown on its own)."""
        return {key: value for key, value in self.details.items()
                if key not in ("queue", "key_secrets")}  # keys: on their own card

    @property
    def conditions(self) -> list:
        return self.observed.get("conditions") or []


class WorkloadEvent(models.Model):
    """One step of a workload's history: a state change, a scale, a power action, an error.

    Each carries the demand in force after it, so the allocation history (what it held, from
    when to when) is read from these rows: metering bills from them.
    """

    class Kind(models.TextChoices):
        LAUNCHED = "launched", "Launched"
        TRANSITION = "transition", "State changed"
        SCALED = "scaled", "Scaled"
        POWER = "power", "Power action"
        APPLIED = "applied", "Applied on the cluster"
        ERROR = "error", "Cluster error"
        DELETE_REQUESTED = "delete", "Deletion requested"
        IDLE = "idle", "Idle GPUs"

    workload = models.ForeignKey(Workload, on_delete=models.CASCADE, related_name="events")
    created_at = models.DateTimeField(default=timezone.now)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    from_status = models.CharField(max_length=20, blank=True)
    to_status = models.CharField(max_length=20, blank=True)
    reason = models.CharField(max_length=200, blank=True)
    message = models.TextField(blank=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )
    demand = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["workload", "created_at"])]

    def __str__(self) -> str:
        return f"{self.workload_id} {self.kind} {self.from_status}→{self.to_status}"

    @property
    def to_status_color(self) -> str:
        return WorkloadStatus.color(self.to_status) if self.to_status else "secondary"


class IdleMode(models.TextChoices):
    OFF = "off", "Off: show idle GPUs, do nothing"
    WARN = "warn", "Warn the owners"
    ACT = "act", "Warn, then give the GPUs back"


class IdlePolicy(models.Model):
    """What a tenant asked the portal to do about its idle GPUs (opt-in); a field left empty
    takes the fleet's default (settings IDLE_GPU_*), and a tenant without a row has them all."""

    Mode = IdleMode

    tenant = models.OneToOneField(Tenant, on_delete=models.CASCADE, related_name="idle_policy")
    mode = models.CharField(max_length=10, choices=IdleMode.choices, default=IdleMode.OFF)
    threshold_percent = models.PositiveSmallIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1), MaxValueValidator(100)],
        help_text="A GPU is idle while its utilization stays below this (percent).",
    )
    window_minutes = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(10), MaxValueValidator(7 * 24 * 60)],
        help_text="…for this long: every sample of the window below the threshold.",
    )
    grace_minutes = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(0), MaxValueValidator(7 * 24 * 60)],
        help_text="Between the warning and the action.",
    )
    notebook_idle_hours = models.PositiveSmallIntegerField(
        null=True, blank=True, validators=[MaxValueValidator(30 * 24)],
        help_text="Stop a notebook nobody has used for this many hours (0: never).",
    )
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )

    class Meta:
        verbose_name = "idle GPU policy"
        verbose_name_plural = "idle GPU policies"

    def __str__(self) -> str:
        return f"idle GPU policy of {self.tenant}"


class IdleEpisodeState(models.TextChoices):
    IDLE = "idle", "Idle"
    WARNED = "warned", "Warned"
    ACTED = "acted", "GPUs given back"
    UNDONE = "undone", "Undone"
    OVER = "over", "Busy again"


OPEN_EPISODE_STATES = (IdleEpisodeState.IDLE, IdleEpisodeState.WARNED, IdleEpisodeState.ACTED)


class IdleEpisode(models.Model):
    """One stretch of a workload's GPUs idling, and what the policy did about it.

    Opened by the idle sweep when every sample of the window is below the tenant's threshold;
    warned (notice and mail) where the policy warns; acted on after the grace period where it
    acts (`action`, and `restore`: the spec changes that undo it); over when its GPUs are busy
    again, or undone from the workload's page. One open episode per workload.
    """

    State = IdleEpisodeState

    workload = models.ForeignKey(Workload, on_delete=models.CASCADE, related_name="idle_episodes")
    state = models.CharField(max_length=10, choices=IdleEpisodeState.choices,
                             default=IdleEpisodeState.IDLE)
    started_at = models.DateTimeField(help_text="Idle since: the start of the first idle window.")
    seen_at = models.DateTimeField(help_text="The last sweep that found it idle.")
    resource = models.CharField(max_length=100, help_text="The class of its idle GPUs.")
    gpus = models.PositiveIntegerField(help_text="Its idle GPUs (units of the class).")
    utilization = models.DecimalField(max_digits=5, decimal_places=2,
                                      help_text="Mean utilization over the window (percent).")
    idle_per_hour = models.DecimalField(
        max_digits=14, decimal_places=6, null=True, blank=True,
        help_text="What its idle GPUs cost per hour (its price, pro rata; null: not priced).",
    )
    warned_at = models.DateTimeField(null=True, blank=True)
    act_after = models.DateTimeField(null=True, blank=True)
    acted_at = models.DateTimeField(null=True, blank=True)
    action = models.CharField(max_length=200, blank=True, help_text="What was done, in words.")
    restore = models.JSONField(default=dict, blank=True, help_text="The spec changes undoing it.")
    reclaimed = models.PositiveIntegerField(default=0, help_text="GPUs the action gave back.")
    saved_per_hour = models.DecimalField(
        max_digits=14, decimal_places=6, null=True, blank=True,
        help_text="What the GPUs given back cost per hour when it acted (null: not priced).",
    )
    ended_at = models.DateTimeField(null=True, blank=True)
    ended_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )

    class Meta:
        ordering = ["-started_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["workload"], condition=Q(state__in=OPEN_EPISODE_STATES),
                name="one_open_idle_episode_per_workload",
            ),
            models.CheckConstraint(
                condition=Q(state__in=IdleEpisodeState.values), name="idle_episode_state_known"
            ),
        ]
        indexes = [
            # What the policy gave back in a period (the usage explorer): acted episodes by time.
            models.Index(fields=["acted_at"], condition=Q(acted_at__isnull=False),
                         name="idle_episode_acted_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.workload} idle since {self.started_at:%Y-%m-%d %H:%M}"

    @property
    def open(self) -> bool:
        return self.state in OPEN_EPISODE_STATES

    @property
    def idle_seconds(self) -> float:
        return max((self.seen_at - self.started_at).total_seconds(), 0.0)

    @property
    def gpu_hours(self) -> Decimal:
        """GPU-hours idle so far."""
        return (Decimal(self.idle_seconds) / 3600 * self.gpus).quantize(Decimal("0.1"))

    @property
    def cost(self) -> Decimal | None:
        """What its idle GPUs cost so far (null: not priced)."""
        if self.idle_per_hour is None:
            return None
        return (self.idle_per_hour * Decimal(self.idle_seconds) / 3600).quantize(Decimal("0.01"))

