"""The varied mode's URL pools: what people ask for at once, built from the data set's facts.

Pure: `Facts` (read from the database by `bench.varied`) in, `Group`s out, the same for
the same facts and seed. Each group is a page of the fixed mode asked for many ways (other
tenants, pages, filters, invoices, date ranges); a request of the varied mode picks a group and
then one of its URLs (`schedule`). The API lists' pages are not computed here but walked from
their `next` links (`api_starts` says where each walk starts and how far it goes), so they hold
whatever the API's pagination is.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import random
from urllib.parse import urlencode

from .pages import FLOOR

TENANTS = 50  # tenants whose owners sign in (their dashboards and workload lists)
INVOICES = 200  # invoice details
HTML_PAGE_SIZE = 50  # the node list's and admin queue's rows per page, to stay within range
LONG_WALK = 40  # pages walked from an unfiltered list API
SHORT_WALK = 3  # pages walked from a filtered one
USAGE_RANGES = 12  # random date ranges of the usage explorer, besides the weeks and the month


@dataclasses.dataclass(frozen=True)
class Target:
    path: str
    user: str  # "admin", "finance", "owner", or "owner:<username>" (a tenant's own owner)


@dataclasses.dataclass(frozen=True)
class Group:
    name: str
    fixed: str  # the fixed mode's page this group varies
    targets: tuple[Target, ...]


@dataclasses.dataclass(frozen=True)
class Facts:
    """What the pools are built from (see `bench.varied.gather_facts`)."""

    tenant_owners: tuple[tuple[str, str], ...]  # (slug, owner's username) of active tenants
    node_count: int
    sites: tuple[str, ...]
    gpu_models: tuple[str, ...]
    node_states: tuple[str, ...]
    node_healths: tuple[str, ...]
    invoice_ids: tuple[int, ...]
    request_counts: dict[str, int]  # quota requests by status
    request_resources: tuple[str, ...]  # resources the quota requests' lines ask for
    request_tenants: tuple[str, ...]  # tenants with quota requests
    workload_kinds: tuple[str, ...]
    usage_start: datetime.date  # first day of the data set's usage month
    usage_days: int
    usage_tenants: tuple[str, ...]  # tenants with usage that month


def spread(items: tuple | list, count: int) -> list:
    """`count` items evenly spaced over `items` (all of them when there are fewer)."""
    if count >= len(items):
        return list(items)
    step = len(items) / count
    return [items[int(i * step)] for i in range(count)]


def _q(path: str, **params) -> str:
    query = urlencode([(key, value) for key, value in params.items() if value not in (None, "")])
    return f"{path}?{query}" if query else path


def api_starts(facts: Facts) -> dict[str, list[tuple[str, int]]]:
    """Per API group, where each walk along `next` starts and how many pages it reads."""
    tenants = [slug for slug, _ in spread(facts.tenant_owners, 5)]
    return {
        "api: workloads": [
            ("/api/v1/workloads/", LONG_WALK),
            ("/api/v1/workloads/?status=ready", SHORT_WALK),
            *((_q("/api/v1/workloads/", kind=kind), SHORT_WALK) for kind in facts.workload_kinds),
            *((_q("/api/v1/workloads/", tenant=slug), SHORT_WALK) for slug in tenants),
        ],
        "api: nodes": [
            ("/api/v1/nodes/", LONG_WALK),
            *((_q("/api/v1/nodes/", site=site), SHORT_WALK) for site in facts.sites),
            *((_q("/api/v1/nodes/", model=model), SHORT_WALK) for model in facts.gpu_models),
            *((_q("/api/v1/nodes/", state=state), SHORT_WALK) for state in facts.node_states),
        ],
        "api: quota requests": [
            ("/api/v1/quota-requests/", LONG_WALK),
            *((_q("/api/v1/quota-requests/", status=status), SHORT_WALK * 3)
              for status in sorted(facts.request_counts)),
            *((_q("/api/v1/quota-requests/", tenant=slug), 1)
              for slug in spread(facts.request_tenants, 5)),
        ],
    }


API_FIXED = {"api: workloads": "api: workloads", "api: nodes": "api: nodes",
             "api: quota requests": "api: quota requests awaiting review"}


def _pages(count: int, limit: int = LONG_WALK) -> range:
    return range(1, min(limit, max(1, math.ceil(count / HTML_PAGE_SIZE))) + 1)


def _node_list(facts: Facts) -> list[Target]:
    paths = [_q("/fleet/nodes/", page=page if page > 1 else None)
             for page in _pages(facts.node_count)]
    paths += [_q("/fleet/nodes/", site=site) for site in facts.sites]
    paths += [_q("/fleet/nodes/", site=site, page=2) for site in facts.sites
              if facts.node_count / max(1, len(facts.sites)) > HTML_PAGE_SIZE]
    paths += [_q("/fleet/nodes/", model=model) for model in facts.gpu_models]
    paths += [_q("/fleet/nodes/", state=state) for state in facts.node_states]
    paths += [_q("/fleet/nodes/", health=health) for health in facts.node_healths]
    paths += [_q("/fleet/nodes/", site=site, model=model)
              for site, model in zip(facts.sites, reversed(facts.gpu_models), strict=False)]
    return [Target(path, "admin") for path in paths]


def _review_queue(facts: Facts) -> list[Target]:
    base = "/admin/tenants/quotarequest/"
    submitted = facts.request_counts.get("submitted", 0)
    paths = [_q(base, status__exact="submitted", p=page if page > 1 else None)
             for page in _pages(submitted, 10)]
    paths += [_q(base, status__exact=status) for status in sorted(facts.request_counts)]
    paths += [_q(base, status__exact="submitted", age=age)
              for age in ("day", "week", "month", "older")]
    paths += [_q(base, status__exact="submitted", resource=resource)
              for resource in spread(facts.request_resources, 5)]
    paths += [_q(base, status__exact="submitted", tenant=slug)
              for slug in spread(facts.request_tenants, 5)]
    paths += [_q(base, q=slug) for slug in spread(facts.request_tenants, 2)]
    # A filter's parameter given twice, then once: each page is its own query string.
    paths += [f"{base}?status__exact=submitted&status__exact=approved",
              _q(base, status__exact="approved")]
    return [Target(path, "admin") for path in paths]


def _usage_explorer(facts: Facts, rng: random.Random) -> list[Target]:
    first, days = facts.usage_start, max(1, facts.usage_days)

    def day(n: int) -> str:
        return (first + datetime.timedelta(days=n)).isoformat()

    ranges = [(0, days - 1)]  # the whole month
    ranges += [(start, min(days - 1, start + 6)) for start in range(0, days, 7)]  # each week
    for _ in range(USAGE_RANGES):
        start = rng.randrange(days)
        ranges.append((start, min(days - 1, start + rng.randrange(1, 15))))
    tenants = list(spread(facts.usage_tenants, 10)) or [""]
    models = list(facts.gpu_models) or [""]
    paths = ["/billing/usage/"]  # the default range: the last 30 days
    for n, (start, end) in enumerate(ranges):
        paths.append(_q("/billing/usage/", start=day(start), end=day(end)))
        paths.append(_q("/billing/usage/", start=day(start), end=day(end),
                        tenant=tenants[n % len(tenants)]))
        if n % 3 == 0:
            paths.append(_q("/billing/usage/", start=day(start), end=day(end),
                            resource=models[n % len(models)]))
    return [Target(path, "finance") for path in paths]


def build_groups(facts: Facts, api_pages: dict[str, list[str]], *, floor_path: str,
                 seed: int) -> list[Group]:
    """The varied mode's groups, floor first. `api_pages` maps each API group of `api_starts`
    to the paths its walks read."""
    rng = random.Random(seed)  # noqa: S311 (a repeatable sample, not a secret)
    owners = spread(facts.tenant_owners, TENANTS)
    invoices = sorted(rng.sample(facts.invoice_ids, min(INVOICES, len(facts.invoice_ids))))
    groups = [
        Group(FLOOR, FLOOR, (Target(floor_path, "owner"),)),
        Group("tenant dashboard", "tenant dashboard",
              tuple(Target(f"/t/{slug}/", f"owner:{user}") for slug, user in owners)),
        Group("workload list", "workload list",
              tuple(Target(f"/t/{slug}/workloads/", f"owner:{user}") for slug, user in owners)),
        Group("node list", "node list", tuple(_node_list(facts))),
        Group("finance invoice detail", "finance invoice detail",
              tuple(Target(f"/billing/invoices/{pk}/", "finance") for pk in invoices)),
        *(Group(name, API_FIXED[name],
                tuple(Target(path, "admin") for path in api_pages.get(name, ())))
          for name in api_starts(facts)),
        Group("admin review queue", "admin review queue", tuple(_review_queue(facts))),
        Group("usage explorer", "usage explorer", tuple(_usage_explorer(facts, rng))),
    ]
    # A URL once per pool (a filter's page 1 may be another's, a status's its own list).
    return [dataclasses.replace(group, targets=tuple(dict.fromkeys(group.targets)))
            for group in groups if group.targets]


def schedule(groups: list[Group], per_group: int, *, seed: int) -> list[tuple[str, Target]]:
    """The varied mode's requests in order: each group `per_group` times, each time one of its
    URLs at random, all shuffled together."""
    rng = random.Random(seed)  # noqa: S311 (a repeatable sample, not a secret)
    requests = [(group.name, rng.choice(group.targets)) for group in groups
                for _ in range(per_group)]
    rng.shuffle(requests)
    return requests


def owner_usernames(groups: list[Group]) -> list[str]:
    """The tenants' owners the groups sign in as (a session each)."""
    return sorted({target.user.split(":", 1)[1] for group in groups
                   for target in group.targets if target.user.startswith("owner:")})
