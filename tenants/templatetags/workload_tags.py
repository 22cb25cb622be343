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
        if resource in UNITS:
            words.append(f"{intcomma(amount)} {UNITS[resource]}")
            continue
        try:
            parsed = resource_classes.parse(resource)
        except resource_classes.UnknownResourceClass:
            words.append(f"{intcomma(amount)} {resource}")
            continue
        if parsed.kind == "hami":  # a share: GiB of the model's memory, percent of its compute
            unit = "GiB memory" if parsed.hami_counter == "memory-gib" else "% compute"
            words.append(f"{intcomma(amount)} {unit} of {parsed.gpu_model.display_name} (HAMi)")
            continue
        words.append(f"{intcomma(amount)} \u00d7 {parsed.label.removesuffix(' GPUs')}")
    return words


WORDS = {"ip": "IP address", "url": "URL", "cluster_url": "In-cluster URL"}


@register.filter
def detail_label(key: str) -> str:
    """`replicas_ready` → "Replicas ready" (the kinds' detail keys, as page labels)."""
    return WORDS.get(str(key)) or str(key).replace("_", " ").capitalize()
