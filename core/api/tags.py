"""The API's OpenAPI tags, by domain, decided in this one place by each operation's URL: a new
endpoint gets its domain's tag without its view naming one."""

import re

# (tag, description, the URLs under /api/v1/ it covers), the first that matches wins.
TAGS: list[tuple[str, str, str]] = [
    ("service-accounts", "A tenant's service accounts (non-human members for CI) and their "
     "tokens.", r"tenants/[^/]+/service-accounts(/|$)"),
    ("webhooks", "HTTPS endpoints that receive signed events, and their deliveries.",
     r"(tenants/[^/]+/)?webhooks(/|$)"),
    ("quota", "Quota grants, quota requests and their review, capacity per pool.",
     r"(quota-requests|capacity)(/|$)|tenants/[^/]+/quota(/|$)"),
    ("workloads", "vClusters, VMs, Slurm clusters, inference endpoints and notebooks: launch, "
     "scale, stop, delete, their events, metrics and endpoint keys.", r"workloads(/|$)"),
    ("tenants", "Tenants, their members, settings and model credentials; who you are.",
     r"(tenants|me)(/|$)"),
    ("inventory", "The fleet's sites, racks, nodes, GPUs and health, and node lifecycle.",
     r"(sites|racks|nodes|gpus|health-events|inventory|fleet|clusters)(/|$)"),
    ("billing", "Rate cards, spend, usage, utilization, invoices and their exports.",
     r"billing(/|$)"),
    ("tokens", "Your personal API tokens and their scopes.", r"tokens(/|$)"),
    ("index", "The API's index: every list and endpoint by name.", r"$"),
]
_PATTERNS = [(name, re.compile(pattern)) for name, _, pattern in TAGS]
API_PREFIX = re.compile(r"^/api/v\d+/")


def tag_for_path(path: str) -> str | None:
    """The tag of an operation at `path` (e.g. /api/v1/billing/spend/); None for none."""
    rest = API_PREFIX.sub("", path, count=1)
    for name, pattern in _PATTERNS:
        if pattern.match(rest):
            return name
    return None


# How the documentation lists them (TAGS is in matching order: the narrower URLs first).
DISPLAY_ORDER = ["workloads", "tenants", "service-accounts", "quota", "billing", "inventory",
                 "tokens", "webhooks", "index"]


def tag_descriptions() -> list[dict[str, str]]:
    described = {name: description for name, description, _ in TAGS}
    return [{"name": name, "description": described[name]} for name in DISPLAY_ORDER]
