"""Serializers of the inventory API (read models built from prefetched selectors)."""

import json

from rest_framework import serializers

from core.validators import validate_readable_text

from ..models import GPU, NIC, HealthEvent, Node, NodeState, NodeValidation, Rack, Site


class SiteSerializer(serializers.ModelSerializer):
    class Meta:
        model = Site
        fields = ["id", "slug", "name", "region"]


class RackSerializer(serializers.ModelSerializer):
    site = serializers.SlugRelatedField(slug_field="slug", read_only=True)

    class Meta:
        model = Rack
        fields = ["id", "site", "name", "row", "units"]


class GPUSerializer(serializers.ModelSerializer):
    node = serializers.CharField(source="node.hostname", read_only=True)

    class Meta:
        model = GPU
        fields = [
            "id", "node", "index", "uuid", "serial", "model", "memory_gib", "pci_bus_id",
            "mig_capable", "mig_layout", "ecc_enabled", "ecc_sbe_count", "ecc_dbe_count",
            "retired_pages", "health", "nvlink_domain", "numa_node",
        ]


class NodeGPUSerializer(GPUSerializer):
    class Meta(GPUSerializer.Meta):
        fields = [f for f in GPUSerializer.Meta.fields if f != "node"]


class NICSerializer(serializers.ModelSerializer):
    class Meta:
        model = NIC
        fields = ["id", "name", "kind", "mac_address", "ib_guid", "link_speed_gbps", "fabric",
                  "numa_node", "rail"]


class HealthEventSerializer(serializers.ModelSerializer):
    node = serializers.CharField(source="node.hostname", read_only=True)
    node_id = serializers.IntegerField(read_only=True)

    class Meta:
        model = HealthEvent
        fields = ["id", "node_id", "node", "kind", "subject", "severity", "source", "value",
                  "detail", "opened_at", "last_seen_at", "resolved_at", "resolution",
                  "remediation", "notified_tenants"]


class NodeValidationSerializer(serializers.ModelSerializer):
    class Meta:
        model = NodeValidation
        fields = ["id", "kind", "passed", "summary", "metrics", "recorded_at"]


class NodeListSerializer(serializers.ModelSerializer):
    site = serializers.CharField(source="rack.site.slug", read_only=True, allow_null=True)
    rack = serializers.CharField(source="rack.name", read_only=True, allow_null=True)
    gpu_count = serializers.IntegerField(read_only=True)
    gpu_model = serializers.CharField(read_only=True, allow_null=True)
    health = serializers.CharField(read_only=True)
    open_events = serializers.IntegerField(read_only=True)
    cluster = serializers.CharField(source="cluster_id", read_only=True,
                                    help_text="The slug of the cluster the node belongs to.")

    class Meta:
        model = Node
        fields = [
            "id", "hostname", "k8s_name", "serial", "cluster", "site", "rack", "position",
            "height_units", "role", "state", "state_changed_at", "bios_profile", "bmc_address",
            "reserved_for", "cpu_cores", "memory_gib", "gpu_count", "gpu_model", "gpu_sharing",
            "health", "open_events", "k8s_ready", "k8s_unschedulable", "k8s_last_seen_at",
        ]


class NodeDetailSerializer(NodeListSerializer):
    gpus = NodeGPUSerializer(many=True, read_only=True)
    nics = NICSerializer(many=True, read_only=True)
    health_events = HealthEventSerializer(many=True, read_only=True)
    validations = NodeValidationSerializer(many=True, read_only=True)
    allowed_moves = serializers.ListField(child=serializers.CharField(), read_only=True)

    class Meta(NodeListSerializer.Meta):
        fields = [
            *NodeListSerializer.Meta.fields, "allowed_moves", "k8s_conditions", "k8s_labels",
            "k8s_capacity", "placed_pods", "gpus_in_use", "mig_in_use", "hami_devices",
            "hami_in_use", "disks_wiped_at", "bmc_reset_at", "gpus", "nics", "health_events",
            "validations",
        ]


class ReasonSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=300, validators=[validate_readable_text])


class TransitionSerializer(ReasonSerializer):
    target = serializers.ChoiceField(choices=NodeState.choices)


class ValidationResultSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=NodeValidation.Kind.choices)
    passed = serializers.BooleanField()
    summary = serializers.CharField(
        max_length=500, required=False, allow_blank=True, default="",
        validators=[validate_readable_text],
    )
    metrics = serializers.DictField(required=False, default=dict)

    def validate_metrics(self, metrics: dict) -> dict:
        # Stored as jsonb, which holds no NUL character; and kept small: it is shown on pages.
        text = json.dumps(metrics)
        if "\\u0000" in text:
            raise serializers.ValidationError("Null characters are not allowed.")
        if len(text) > 10_000:
            raise serializers.ValidationError("At most 10,000 characters of metrics.")
        return metrics


class RetirementSerializer(serializers.Serializer):
    disks_wiped = serializers.BooleanField(default=False)
    bmc_reset = serializers.BooleanField(default=False)
    note = serializers.CharField(
        max_length=200, required=False, allow_blank=True, default="",
        validators=[validate_readable_text],
    )


class ImportRequestSerializer(serializers.Serializer):
    format = serializers.ChoiceField(choices=["csv", "json"])
    objects = serializers.ChoiceField(choices=["nodes", "gpus", "nics"], default="nodes")
    data = serializers.CharField(trim_whitespace=False, max_length=5 * 1024 * 1024)
    dry_run = serializers.BooleanField(default=True)


class ModelSharingSerializer(serializers.Serializer):
    whole = serializers.IntegerField()
    mig = serializers.IntegerField()
    hami = serializers.IntegerField()
    hami_reserved = serializers.IntegerField(
        help_text="HAMi-shared GPUs on nodes reserved for a dedicated tenant (usable by nobody)."
    )


class FleetSummarySerializer(serializers.Serializer):
    totals = serializers.DictField(child=serializers.IntegerField())
    nodes_by_state = serializers.DictField(child=serializers.IntegerField())
    health = serializers.DictField(child=serializers.IntegerField())
    gpu_sharing = serializers.DictField(
        child=ModelSharingSerializer(),
        help_text="Per GPU model: how many GPUs are whole, partitioned by MIG, shared by HAMi.",
    )


class ImportRowSerializer(serializers.Serializer):
    objects = serializers.CharField()
    line = serializers.IntegerField()
    key = serializers.CharField()
    action = serializers.CharField()
    changes = serializers.DictField()
    errors = serializers.ListField(child=serializers.CharField())


class ImportResultSerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    dry_run = serializers.BooleanField()
    applied = serializers.BooleanField()
    errors = serializers.ListField(child=serializers.CharField())
    summary = serializers.DictField(child=serializers.IntegerField())
    rows = ImportRowSerializer(many=True)
