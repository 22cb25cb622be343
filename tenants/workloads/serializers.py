"""Serializers of the workloads API: what a workload and its timeline look like, and the
bodies that launch, check, scale and power one (its GPU use: `gpu_metrics_serializers`).

They only check the shape of a request (types, lengths, characters the database cannot
hold): every rule about a spec is the kind's, and the services' field errors (`name`, `kind`,
`spec.<field>`, `quota`, `tenant`) reach the caller as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.api.fields import RowUrlField
from core.validators import validate_dns1123_label

from ..access.serializers import ClusterStateSerializer
from .kinds.vm.spec import POWER_ACTIONS
from .models import OPEN_EPISODE_STATES, IdleEpisode, IdleMode, IdlePolicy, Workload, WorkloadEvent
from .registry import CHOICES as KIND_CHOICES
from .services.idle import rules_for

# PostgreSQL's jsonb holds neither NUL characters nor lone UTF-16 surrogates: refused here
# with a field error, before they could reach the database as a 500.
_UNSTORABLE = "The text holds a character that cannot be stored (NUL or a lone surrogate)."


def _unstorable(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value or any("\ud800" <= char <= "\udfff" for char in value)
    if isinstance(value, Mapping):
        return any(_unstorable(k) or _unstorable(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_unstorable(item) for item in value)
    return False


def unstorable_fields(field: str, value: Mapping[str, Any]) -> dict[str, list[str]]:
    """`{"<field>.<key>": [message]}` for each key of `value` holding an unstorable character
    (`<field>` itself when a key is)."""
    errors: dict[str, list[str]] = {}
    for key, item in value.items():
        name = field if _unstorable(key) else f"{field}.{key}"
        if _unstorable(key) or _unstorable(item):
            errors[name] = [_UNSTORABLE]
    return errors


# --- what a workload looks like ---------------------------------------------------------------


class IdleEpisodeSerializer(serializers.ModelSerializer):
    """Its GPUs idling now, and what the tenant's idle policy did or will do about it."""

    state_label = serializers.CharField(source="get_state_display", read_only=True)
    gpu_hours = serializers.DecimalField(max_digits=12, decimal_places=1, read_only=True,
                                         help_text="GPU-hours idle so far.")
    cost = serializers.DecimalField(max_digits=14, decimal_places=2, read_only=True,
                                    allow_null=True,
                                    help_text="What they cost so far (null: not priced).")

    class Meta:
        model = IdleEpisode
        fields = ["state", "state_label", "started_at", "seen_at", "gpus", "utilization",
                  "gpu_hours", "cost", "warned_at", "act_after", "acted_at", "action",
                  "reclaimed"]
        read_only_fields = fields



class ConnectionItemSerializer(serializers.Serializer):
    label = serializers.CharField()
    value = serializers.CharField()


class ConnectionCommandSerializer(serializers.Serializer):
    label = serializers.CharField()
    command = serializers.CharField()


def _pairs(rows: Any, second: str) -> list[dict[str, str]]:
    return [
        {"label": str(row[0]), second: str(row[1])}
        for row in rows or []
        if isinstance(row, list | tuple) and len(row) == 2
    ]


class ConnectionSerializer(serializers.Serializer):
    """How to use a ready workload: labelled values, commands to run, notes (empty lists until
    it is ready)."""

    items = ConnectionItemSerializer(many=True)
    commands = ConnectionCommandSerializer(many=True)
    notes = serializers.ListField(child=serializers.CharField())

    def to_representation(self, instance: Mapping[str, Any]) -> dict[str, Any]:
        # Stored as the kind's Connection (pairs as lists): named fields for API clients, the
        # declared fields' shape already (strings), so not walked through them again per row.
        connection = instance if isinstance(instance, Mapping) else {}
        return {
            "items": _pairs(connection.get("items"), "value"),
            "commands": _pairs(connection.get("commands"), "command"),
            "notes": [str(note) for note in connection.get("notes") or []],
        }


class WorkloadQueueSerializer(serializers.Serializer):
    """Kueue's side of a workload whose pods wait in its tenant's queue."""

    position_in_local_queue = serializers.IntegerField(
        allow_null=True, help_text="1 = next to be admitted from the tenant's LocalQueue; null "
        "when Kueue's visibility API did not say.")
    position_in_cluster_queue = serializers.IntegerField(
        allow_null=True, help_text="Its place in the tenant's ClusterQueue, from 1; null when "
        "unknown.")
    pending = serializers.IntegerField(help_text="Its Kueue Workloads still waiting.")
    gpus = serializers.IntegerField(help_text="GPUs (or MIG instances) they wait for.")
    flavor = serializers.CharField(help_text="The ResourceFlavor Kueue lacks quota in.")
    would_borrow = serializers.IntegerField(
        help_text="Of those GPUs, how many beyond the tenant's own quota its cohort would lend.")
    kueue_message = serializers.CharField(
        help_text="Why Kueue reserves no quota yet, in its words (empty if it said nothing).")
    summary = serializers.CharField(help_text="All of it in one line, as the page says it.")

    def to_representation(self, instance: Mapping[str, Any]) -> dict[str, Any]:
        # Stored by the observation as JSON: each field read with its type, never missing.
        queue = instance if isinstance(instance, Mapping) else {}

        def number(key: str) -> int | None:
            value = queue.get(key)
            return value if isinstance(value, int) and not isinstance(value, bool) else None

        return {
            "position_in_local_queue": number("position_in_local_queue"),
            "position_in_cluster_queue": number("position_in_cluster_queue"),
            "pending": number("pending") or 0,
            "gpus": number("gpus") or 0,
            "flavor": str(queue.get("flavor") or ""),
            "would_borrow": number("would_borrow") or 0,
            "kueue_message": str(queue.get("kueue_message") or ""),
            "summary": str(queue.get("summary") or ""),
        }


class WorkloadClusterSerializer(ClusterStateSerializer):
    """Where it runs and what that cluster holds of it: the cluster's slug and name, whether it
    answers (while it does not, the workload's status is its last known one), and the apply
    state."""

    slug = serializers.CharField(source="cluster_id", help_text="The cluster it runs on.")
    name = serializers.CharField(source="cluster.name")
    reachable = serializers.BooleanField(
        source="cluster.reachable",
        help_text="False while the cluster does not answer: `status` is as last seen.",
    )
    unreachable_since = serializers.DateTimeField(
        source="cluster.unreachable_since", allow_null=True
    )


class WorkloadSerializer(serializers.ModelSerializer):
    """A workload: what was asked (spec), what it holds (demand), where its lifecycle is, what
    the cluster last said of it and how to use it."""

    url = RowUrlField(view_name="api:workload-detail")
    tenant = serializers.CharField(source="tenant.slug", read_only=True)
    kind_label = serializers.CharField(read_only=True)
    status_label = serializers.SerializerMethodField()
    in_progress = serializers.BooleanField(
        read_only=True, help_text="Still being worked on: worth polling until false."
    )
    spec = serializers.DictField(read_only=True, help_text="The clean spec the kind accepted.")
    demand = serializers.DictField(
        child=serializers.IntegerField(), read_only=True,
        help_text="Resource class → units it holds of the tenant's quota.",
    )
    cluster = WorkloadClusterSerializer(source="*", read_only=True)
    cluster_unreachable = serializers.BooleanField(
        read_only=True,
        help_text="Its cluster does not answer: its status is unknown (`status` keeps the "
        "last one seen, `status_detail` says since when and why).",
    )
    status_detail = serializers.CharField(
        read_only=True,
        help_text="Why its status is unknown (its cluster unreachable since when, and the "
        "error); empty while its cluster answers.",
    )
    conditions = serializers.ListField(
        child=serializers.DictField(), read_only=True,
        help_text="The conditions its objects last reported, newest first.",
    )
    details = serializers.DictField(
        source="kind_details", read_only=True,
        help_text="Kind-specific figures the cluster reported (replicas, IP…).",
    )
    queue = WorkloadQueueSerializer(
        read_only=True, allow_null=True,
        help_text="While its pods wait in the tenant's Kueue queue: where it stands, what it "
        "waits for and why, in Kueue's words and the portal's; null otherwise.",
    )
    connection = ConnectionSerializer(read_only=True)
    launched_by = serializers.CharField(
        source="launched_by.username", read_only=True, allow_null=True
    )
    observed_at = serializers.DateTimeField(
        read_only=True, allow_null=True,
        help_text="When the portal last saw its state on the cluster (null until it has).",
    )
    gpu_utilization = serializers.DecimalField(
        max_digits=5, decimal_places=2, read_only=True, allow_null=True,
        help_text="Its GPUs' mean utilization over the last hour, from DCGM (percent; null: "
                  "not measured).",
    )
    idle = serializers.SerializerMethodField(
        help_text="Its GPUs' idle episode still open (null: not idle).")

    class Meta:
        model = Workload
        fields = [
            "id",
            "url",
            "tenant",
            "kind",
            "kind_label",
            "name",
            "status",
            "status_label",
            "status_reason",
            "status_message",
            "status_detail",
            "cluster_unreachable",
            "in_progress",
            "spec",
            "demand",
            "cluster",
            "conditions",
            "details",
            "queue",
            "connection",
            "observed_at",
            "gpu_utilization",
            "gpu_measured_at",
            "keep_running_reason",
            "idle",
            "created_at",
            "ready_at",
            "deleted_at",
            "launched_by",
            "label",
        ]
        read_only_fields = fields

    @extend_schema_field(IdleEpisodeSerializer(allow_null=True))
    def get_idle(self, workload: Workload) -> dict | None:
        # The API's querysets prefetch each workload's open episode (`open_idle`).
        episodes = getattr(workload, "open_idle", None)
        if episodes is None:
            episodes = list(workload.idle_episodes.filter(state__in=OPEN_EPISODE_STATES)[:1])
        return IdleEpisodeSerializer(episodes[0]).data if episodes else None

    def get_status_label(self, workload: Workload) -> str:
        # A method field: DRF inspects the signature of a callable source on every row. The
        # badge's word, as the pages say it (Stopped, Queued).
        return workload.status_label


class WorkloadEventSerializer(serializers.ModelSerializer):
    """One step of a workload's history, with the demand in force after it."""

    kind_label = serializers.CharField(source="get_kind_display", read_only=True)
    actor = serializers.CharField(source="actor.username", read_only=True, allow_null=True)
    demand = serializers.DictField(child=serializers.IntegerField(), read_only=True)

    class Meta:
        model = WorkloadEvent
        fields = [
            "id",
            "created_at",
            "kind",
            "kind_label",
            "from_status",
            "to_status",
            "reason",
            "message",
            "actor",
            "demand",
        ]
        read_only_fields = fields


# --- what a request asks ----------------------------------------------------------------------


class TextField(serializers.CharField):
    """Text from JSON text only: DRF's CharField also takes a number (42 would be "42")."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class _SpecBody(serializers.Serializer):
    tenant = serializers.CharField(help_text="The tenant's slug.")
    kind = serializers.ChoiceField(choices=KIND_CHOICES)
    spec = serializers.DictField(
        required=False,
        default=dict,
        help_text="The kind's fields (see the examples); a field left out takes its default.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        errors = unstorable_fields("spec", attrs.get("spec") or {})
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


class WorkloadLaunchSerializer(_SpecBody):
    name = TextField(
        max_length=63,
        help_text="A DNS-1123 label (lowercase letters, digits and '-'), unique in the tenant: "
        "it names the objects on the cluster.",
    )
    cluster = TextField(
        required=False, allow_blank=True, max_length=40,
        help_text="The slug of the cluster to run on, one of those where the tenant has quota "
        "and room for it; left out: the portal picks (the tenant's reserved nodes first, then "
        "the most free room). It stays there.",
    )
    label = TextField(
        required=False, allow_blank=True, max_length=63,
        help_text="A free label grouping its cost (a project, an experiment): letters, digits, "
        "spaces, '-', '_' and '.'. Cost is broken down by it.",
    )


class WorkloadCheckSerializer(_SpecBody):
    """A launch's body, checked without launching. A `name`, if sent, is checked too: its form,
    and whether a live workload of the tenant has it."""

    name = TextField(max_length=63, required=False, validators=[validate_dns1123_label])


class DemandLineSerializer(serializers.Serializer):
    """One resource class a launch would take, against the tenant's quota."""

    resource = serializers.CharField()
    label = serializers.CharField()
    asked = serializers.IntegerField()
    held = serializers.IntegerField(help_text="Held by the tenant's other workloads.")
    limit = serializers.IntegerField()
    left_after = serializers.IntegerField()
    fits = serializers.BooleanField()
    percent_after = serializers.IntegerField()


class PlacementOptionSerializer(serializers.Serializer):
    """A cluster the launch may go to, with the room its GPU classes have there."""

    cluster = serializers.CharField(help_text="The cluster's slug: `cluster` of a launch.")
    name = serializers.CharField()
    site = serializers.CharField(help_text="The cluster's site's name (empty: none).")
    fits = serializers.BooleanField(help_text="Its GPUs have room for the launch now (else it "
                                    "would wait there for room).")
    room = serializers.CharField(source="room_label", help_text="The room, in words.")


class WorkloadCheckResultSerializer(serializers.Serializer):
    """The clean spec the kind would store, what it would hold, whether the quota has it and
    where it may go."""

    kind = serializers.ChoiceField(choices=KIND_CHOICES)
    spec = serializers.DictField()
    demand = serializers.DictField(child=serializers.IntegerField())
    quota = DemandLineSerializer(many=True)
    fits = serializers.BooleanField(help_text="Every line fits: the launch would be admitted.")
    clusters = PlacementOptionSerializer(
        many=True, help_text="Where it may go, the portal's choice first (none: it cannot be "
        "placed; `unplaced` says why).")
    unplaced = serializers.CharField(
        allow_blank=True, help_text="Why no cluster may take it (empty when one may).")


class WorkloadScaleSerializer(serializers.Serializer):
    changes = serializers.DictField(
        allow_empty=False,
        help_text="The fields to change and their new values (vCluster: cpu, memory_gib, "
        "kubernetes_version, gpu_scheduling; inference: min_replicas, max_replicas, "
        "gpus_per_replica; VM: cpu, memory_gib, disk_gib, gpus; Slurm: workers; notebook: "
        "cpu, memory_gib, gpus, gpu_memory_gib, gpu_cores).",
    )

    def validate_changes(self, value: dict[str, Any]) -> dict[str, Any]:
        if _unstorable(value):
            raise serializers.ValidationError(_UNSTORABLE)
        return value


class WorkloadPowerSerializer(serializers.Serializer):
    action = serializers.ChoiceField(
        choices=POWER_ACTIONS,
        help_text="start, stop (keeps the disk or a notebook's home volume, gives the GPUs "
        "back) or restart (VMs only).",
    )


class KeepRunningSerializer(serializers.Serializer):
    reason = serializers.CharField(
        max_length=200, allow_blank=True, trim_whitespace=True,
        help_text="Why the idle policy must leave it be (shown and audited); empty: it may act "
                  "again.",
    )

    def validate_reason(self, value: str) -> str:
        if _unstorable(value):
            raise serializers.ValidationError(_UNSTORABLE)
        return value


class IdleRulesSerializer(serializers.Serializer):
    mode = serializers.ChoiceField(choices=IdleMode.choices)
    threshold_percent = serializers.IntegerField()
    window_minutes = serializers.IntegerField()
    grace_minutes = serializers.IntegerField()
    notebook_idle_hours = serializers.IntegerField(
        help_text="Notebooks nobody used for this many hours are stopped (0: never).")


class IdlePolicySerializer(serializers.ModelSerializer):
    """A tenant's idle GPU policy: what its owners set (null: the fleet's default), and the
    rules in force (`effective`, defaults filled in)."""

    effective = serializers.SerializerMethodField()
    updated_at = serializers.DateTimeField(
        read_only=True, allow_null=True,
        help_text="When its owners last chose it (null: never; the fleet's defaults apply).")

    class Meta:
        model = IdlePolicy
        fields = ["mode", "threshold_percent", "window_minutes", "grace_minutes",
                  "notebook_idle_hours", "effective", "updated_at"]
        read_only_fields = ["effective", "updated_at"]
        extra_kwargs = {"mode": {"required": True}}

    @extend_schema_field(IdleRulesSerializer)
    def get_effective(self, policy: IdlePolicy) -> dict:
        return IdleRulesSerializer(rules_for(policy if policy.pk else None)).data
