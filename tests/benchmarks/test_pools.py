"""The varied mode's URL pools: built from the data set's facts, the same for the same seed,
within the rows there are, and scheduled evenly over the groups."""

import datetime
from collections import Counter
from urllib.parse import parse_qs, urlsplit

from bench.pages import FLOOR
from bench.pools import (
    HTML_PAGE_SIZE,
    INVOICES,
    LONG_WALK,
    TENANTS,
    Facts,
    api_starts,
    build_groups,
    owner_usernames,
    schedule,
    spread,
)


def _facts(**changes) -> Facts:
    facts = Facts(
        tenant_owners=tuple((f"team-{n:04d}", f"user{n:05d}") for n in range(1, 121)),
        node_count=2000,
        sites=("ams1", "dub1", "fra1", "par1"),
        gpu_models=("nvidia-a100-80gb", "nvidia-h100-80gb", "nvidia-h200"),
        node_states=("available", "cordoned", "maintenance"),
        node_healths=("healthy", "degraded", "critical"),
        invoice_ids=tuple(range(1, 1001)),
        request_counts={"submitted": 400, "applied": 6000, "rejected": 2000},
        request_resources=("cpu", "gpu:nvidia-h200", "memory-gib"),
        request_tenants=tuple(f"team-{n:04d}" for n in range(1, 60)),
        workload_kinds=("inference", "slurm", "vcluster", "vm"),
        usage_start=datetime.date(2026, 11, 1),
        usage_days=30,
        usage_tenants=tuple(f"team-{n:04d}" for n in range(1, 40)),
    )
    return Facts(**(facts.__dict__ | changes))


def _api_pages(facts: Facts) -> dict[str, list[str]]:
    """What walking the APIs' `next` links would read: each start and its next pages."""
    return {name: [start if page == 1 else f"{start}{'&' if '?' in start else '?'}page={page}"
                   for start, pages in starts for page in range(1, pages + 1)]
            for name, starts in api_starts(facts).items()}


def _groups(facts: Facts | None = None, seed: int = 42):
    facts = facts or _facts()
    return {group.name: group for group in build_groups(
        facts, _api_pages(facts), floor_path="/bench/floor/", seed=seed)}


def test_each_group_varies_its_page_over_the_data_set():
    groups = _groups()
    assert list(groups) == [
        FLOOR, "tenant dashboard", "workload list", "node list", "finance invoice detail",
        "api: workloads", "api: nodes", "api: quota requests", "admin review queue",
        "usage explorer"]
    for group in groups.values():
        paths = [target.path for target in group.targets]
        assert len(paths) == len(set(paths)), group.name  # no URL twice in a pool
    # Fifty tenants, each dashboard opened by that tenant's own owner.
    dashboards = groups["tenant dashboard"].targets
    assert len(dashboards) == TENANTS
    assert {t.user for t in dashboards} == {f"owner:{user}" for _, user in
                                            spread(_facts().tenant_owners, TENANTS)}
    slug_of = {user: slug for slug, user in _facts().tenant_owners}
    assert all(t.path == f"/t/{slug_of[t.user.split(':', 1)[1]]}/" for t in dashboards)
    invoices = groups["finance invoice detail"].targets
    assert len(invoices) == INVOICES and {t.user for t in invoices} == {"finance"}
    # Pages, filters and the APIs' walks are all there.
    node_paths = [t.path for t in groups["node list"].targets]
    assert "/fleet/nodes/?page=40" in node_paths and "/fleet/nodes/?site=fra1" in node_paths
    assert "/fleet/nodes/?state=cordoned" in node_paths
    assert len(groups["api: workloads"].targets) >= LONG_WALK
    queue = [t.path for t in groups["admin review queue"].targets]
    assert "/admin/tenants/quotarequest/?status__exact=submitted&p=8" in queue
    assert "/admin/tenants/quotarequest/?status__exact=submitted&status__exact=approved" in queue
    assert groups["usage explorer"].fixed == "usage explorer"
    assert groups["api: quota requests"].fixed == "api: quota requests awaiting review"


def test_html_pages_stay_within_the_rows_there_are():
    small = _groups(_facts(node_count=120, request_counts={"submitted": 60}))
    node_pages = [int(parse_qs(urlsplit(t.path).query).get("page", ["1"])[0])
                  for t in small["node list"].targets]
    assert max(node_pages) == 3 == -(-120 // HTML_PAGE_SIZE)
    queue_pages = [int(parse_qs(urlsplit(t.path).query).get("p", ["1"])[0])
                   for t in small["admin review queue"].targets]
    assert max(queue_pages) == 2
    # Fewer tenants and invoices than the pools ask for: every one of them.
    tiny = _groups(_facts(tenant_owners=(("team-0001", "bench-owner"),), invoice_ids=(7, 9)))
    assert [t.path for t in tiny["tenant dashboard"].targets] == ["/t/team-0001/"]
    assert [t.path for t in tiny["finance invoice detail"].targets] == [
        "/billing/invoices/7/", "/billing/invoices/9/"]


def test_usage_ranges_stay_within_the_usage_month():
    for target in _groups()["usage explorer"].targets:
        query = parse_qs(urlsplit(target.path).query)
        if "start" not in query:
            continue
        start = datetime.date.fromisoformat(query["start"][0])
        end = datetime.date.fromisoformat(query["end"][0])
        assert datetime.date(2026, 11, 1) <= start <= end <= datetime.date(2026, 11, 30)


def test_the_same_seed_gives_the_same_pools_and_another_seed_other_ones():
    assert _groups(seed=42) == _groups(seed=42)
    assert _groups(seed=42)["finance invoice detail"] != _groups(seed=7)["finance invoice detail"]


def test_the_schedule_asks_each_group_as_often_and_is_repeatable():
    groups = list(_groups().values())
    requests = schedule(groups, 30, seed=1)
    assert Counter(name for name, _ in requests) == {group.name: 30 for group in groups}
    by_name = {group.name: set(group.targets) for group in groups}
    assert all(target in by_name[name] for name, target in requests)
    assert requests == schedule(groups, 30, seed=1)
    # Shuffled together, not one group after another; many URLs of a large pool.
    assert [name for name, _ in requests[:30]] != [requests[0][0]] * 30
    assert len({t for name, t in requests if name == "finance invoice detail"}) > 20


def test_the_owners_to_sign_in_are_named_once_each():
    groups = list(_groups().values())
    owners = owner_usernames(groups)
    assert len(owners) == TENANTS == len(set(owners))
    assert all(name.startswith("user") for name in owners)
