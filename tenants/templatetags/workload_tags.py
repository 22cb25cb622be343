"""Template filters of the workload pages: what a workload holds, in words people read."""

from django import template
from django.contrib.humanize.templatetags.humanize import intcomma

from inventory import resource_classes

register = template.Library()

UNITS = {"cpu": "vCPU", "memory-gib": "GiB memory", "storage-gib": "GiB storage"}


@register.filter
def held(demand: dict) -> list[str]:
    """{"gpu:nvidia-h100-80gb": 2, "cpu": 8} → ["2 \u00d7 NVIDIA H100 80GB HBM3", "8 vCPU"]; a HAMi
    share → "20 GiB memory of NVIDIA L40S (HAMi)", "30 % compute of …"; the workload counters
    (`count:…`) are left out: every workload holds one of its kind."""
    words = []
    for resource, amount in (demand or {}).items():
        if resource.startswith("count:"):
            continue
        words.append(f"{intcomma(amount)}{_after_amount(resource)}")
    return words


def _after_amount(resource: str) -> str:
    """What follows the amount of `resource` (" vCPU", " \u00d7 NVIDIA H100 80GB HBM3")."""
    if resource in UNITS:
        return f" {UNITS[resource]}"
    try:
        parsed = resource_classes.parse(resource)
    except resource_classes.UnknownResourceClass:
        return f" {resource}"
    if parsed.kind == "hami":  # a share: GiB of the model's memory, percent of its compute
        unit = "GiB memory" if parsed.hami_counter == "memory-gib" else "% compute"
        return f" {unit} of {parsed.gpu_model.display_name} (HAMi)"
    return f" \u00d7 {parsed.label.removesuffix(' GPUs')}"


WORDS = {
    "ip": "IP address", "url": "URL", "cluster_url": "In-cluster URL",
    "replicas_queued": "Replicas waiting in the queue",
    "workers_queued": "Workers waiting in the queue",
    "runtime_image": "Runtime image (vLLM version)",
}


@register.filter
def detail_label(key: str) -> str:
    """`replicas_ready` → "Replicas ready" (the kinds' detail keys, as page labels)."""
    return WORDS.get(str(key)) or str(key).replace("_", " ").capitalize()


@register.filter
def detail_value(value) -> str:
    """A kind's detail as people read it: True → "Yes", {"idle": 4, "down": 0} →
    "idle 4 · down 0", a list → its items joined (never a Python repr)."""
    if isinstance(value, bool):
        return "Yes" if value else "No"
    if isinstance(value, dict):
        return " · ".join(f"{str(key).replace('_', ' ')} {detail_value(item)}"
                          for key, item in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(detail_value(item) for item in value)
    if isinstance(value, int):
        return intcomma(value)
    return str(value)
