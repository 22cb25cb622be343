"""Serializers of a workload's GPU use in the API: its GPUs over a period, from DCGM."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from .gpu_metrics import DEFAULT_PERIOD, PERIODS, State


class GpuMetricsQuerySerializer(serializers.Serializer):
    period = serializers.ChoiceField(
        choices=[(p.key, p.label) for p in PERIODS.values()], default=DEFAULT_PERIOD,
        help_text="Up to now: " + ", ".join(f"`{p.key}` ({p.label.lower()}, a point every "
                                            f"{p.step} s)" for p in PERIODS.values()) + ".",
    )


POINTS = serializers.ListField(
    child=serializers.ListField(child=serializers.FloatField(), min_length=2, max_length=2),
    help_text="[unix seconds, value] at each step it had a value, in time order.",
)


class GpuSerializer(serializers.Serializer):
    """One GPU (or MIG instance) one of its pods had, as DCGM labels it, and its points."""

    pod = serializers.CharField()
    host = serializers.CharField()
    gpu = serializers.CharField(source="index", help_text="The GPU's index on its host.")
    uuid = serializers.CharField()
    model = serializers.CharField()
    mig_profile = serializers.CharField(help_text="A MIG instance's profile, or empty.")
    utilization = POINTS
    memory_mib = POINTS
    power_watts = POINTS

    def to_representation(self, instance: Any) -> dict[str, Any]:
        # Hundreds of points per metric: written as they are (floats already), not walked
        # field by field.
        return {
            "pod": instance.pod, "host": instance.host, "gpu": instance.index,
            "uuid": instance.uuid, "model": instance.model, "mig_profile": instance.mig_profile,
            **{key: [[at, value] for at, value in points]
               for key, points in instance.points.items()},
        }


class GpuSummarySerializer(serializers.Serializer):
    mean_utilization = serializers.FloatField(
        allow_null=True, help_text="Percent: its GPUs' mean over the period."
    )
    peak_memory_mib = serializers.FloatField(
        allow_null=True, help_text="The most framebuffer memory its GPUs held at once (MiB)."
    )
    mean_power_watts = serializers.FloatField(
        allow_null=True, help_text="What its GPUs drew together, on average (W)."
    )


class GpuMetricsSerializer(serializers.Serializer):
    """A workload's GPUs over a period, from DCGM in Prometheus: utilization (%), framebuffer
    memory used (MiB) and power (W), per GPU; or, in `state` and `message`, why there is
    nothing to show."""

    state = serializers.ChoiceField(
        choices=[State.OK, State.NOT_CONFIGURED, State.NO_GPUS, State.NO_SERIES],
        help_text="`ok`; `not_configured` (the portal has no Prometheus); `no_gpus` (the "
        "workload holds none); `no_series` (its pods have had no GPU within the period).",
    )
    message = serializers.CharField(help_text="For people: why there is nothing to show.")
    period = serializers.CharField(source="period.key")
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    step_seconds = serializers.IntegerField(source="period.step")
    summary = GpuSummarySerializer()
    gpus = GpuSerializer(many=True)
