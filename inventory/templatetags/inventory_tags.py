"""Template filters of the fleet pages."""

from django import template

from inventory import resource_classes

register = template.Library()


@register.filter
def gpu_label(model_key: str | None) -> str:
    """`nvidia-h100-80gb` → `NVIDIA H100 80GB HBM3` (unknown keys are shown as they are)."""
    return resource_classes.gpu_label(model_key)


@register.filter
def mib_as_gib(mib: int | None) -> str:
    """`46068` (MiB) → `45.0` (GiB, one decimal): HAMi counts GPU memory in MiB."""
    return f"{(mib or 0) / resource_classes.MIB_PER_GIB:,.1f}"
