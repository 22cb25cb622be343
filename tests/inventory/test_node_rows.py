"""The node list's rows as people see them: every value a row shows, hostile names escaped,
and a page read in the same few queries whatever the fleet's size."""

import re

import pytest

from inventory.models import HealthEvent, Node, Rack, Site
from tests.factories import GPUFactory, NodeFactory, RackFactory, hami_gpu_node

from .fleets import build_fleet

pytestmark = pytest.mark.django_db


def _page_rows(client, query: str = "") -> dict[str, str]:
    html = client.get(f"/fleet/nodes/?{query}").content.decode()
    return {
        match.group(1): match.group(0)
        for match in re.finditer(r'<tr data-node="([^"]*)">.*?</tr>', html, re.S)
    }


def test_every_kind_of_row_shows_its_values(login, platform_admin):
    build_fleet(48)  # racked, healthy, degraded and critical, every state, some reserved
    loose = NodeFactory(hostname="loose-1", rack=None, position=None, reserved_for="nova",
                        k8s_name="k8s-loose-1", cpu_cores=1234, memory_gib=16384)
    hami_gpu_node(hostname="shared-1")
    critical = Node.objects.filter(health_events__severity="critical").first()

    rows = _page_rows(login(platform_admin))

    assert len(rows) == 50
    assert f'<a href="/fleet/nodes/{loose.pk}/" class="fw-semibold">loose-1</a>' in rows["loose-1"]
    assert '<div class="small text-muted">k8s-loose-1</div>' in rows["loose-1"]
    assert '<span class="text-muted small">unracked</span>' in rows["loose-1"]
    assert "1,234 vCPU · 16,384 GiB" in rows["loose-1"]
    assert '<i class="bi bi-lock"></i> nova</span>' in rows["loose-1"]
    assert 'data-sharing="hami"' in rows["shared-1"]
    if critical is not None and critical.hostname in rows:
        assert 'data-health="critical"' in rows[critical.hostname]
    racked = next(n for n in Node.objects.select_related("rack__site") if n.rack_id
                  and n.hostname in rows)
    assert (f'<a href="/fleet/racks/{racked.rack_id}/">{racked.rack.site.slug}/'
            f"{racked.rack.name}</a>") in rows[racked.hostname]
    assert {'data-health="healthy"', 'data-health="degraded"'} <= {
        m for row in rows.values() for m in re.findall(r'data-health="\w+"', row)
    }


def test_hostile_names_are_shown_escaped(login, platform_admin):
    site = Site.objects.create(slug="s<b>", name="<script>site</script>")
    rack = RackFactory(site=site, name="<script>rack</script>")
    NodeFactory(hostname="<script>alert(1)</script>", k8s_name='"><img src=x onerror=alert(2)>',
                rack=rack, reserved_for="<script>tenant</script>")

    html = login(platform_admin).get("/fleet/nodes/").content.decode()

    assert "<script>alert" not in html and "<img src=x" not in html
    assert "<script>rack" not in html and "<script>tenant" not in html
    assert '<tr data-node="&lt;script&gt;alert(1)&lt;/script&gt;">' in html
    assert "&quot;&gt;&lt;img src=x onerror=alert(2)&gt;" in html
    assert "s&lt;b&gt;/&lt;script&gt;rack&lt;/script&gt;" in html


NODE_CHANGES = {
    "state": lambda n: Node.objects.filter(pk=n.pk).update(state="cordoned"),
    "hostname": lambda n: Node.objects.filter(pk=n.pk).update(hostname="renamed-1"),
    "k8s name": lambda n: Node.objects.filter(pk=n.pk).update(k8s_name="k8s-other"),
    "reserved for": lambda n: Node.objects.filter(pk=n.pk).update(reserved_for="orion"),
    "rack": lambda n: Node.objects.filter(pk=n.pk).update(rack=RackFactory(name="r-new")),
    "rack name": lambda n: Rack.objects.filter(pk=n.rack_id).update(name="r-renamed"),
    "site slug": lambda n: Site.objects.filter(racks__id=n.rack_id).update(slug="far"),
    "a GPU more": lambda n: GPUFactory(node=n, index=7),
    "an open event": lambda n: HealthEvent.objects.create(
        node=n, kind="xid", severity="critical", detail="boom"),
    "memory": lambda n: Node.objects.filter(pk=n.pk).update(memory_gib=123456),
}


@pytest.mark.parametrize("change", NODE_CHANGES)
def test_a_listed_row_follows_each_value_it_shows(login, platform_admin, change):
    node = NodeFactory(hostname="gpu-a")
    GPUFactory(node=node, index=0)
    NodeFactory(hostname="gpu-b", rack=None, position=None)
    client = login(platform_admin)
    before = _page_rows(client)

    NODE_CHANGES[change](node)
    after = _page_rows(client)

    assert after != before and after["gpu-b"] == before["gpu-b"]


@pytest.mark.parametrize("size", [12, 120])
def test_a_page_reads_the_same_few_queries_whatever_the_fleet(
    login, platform_admin, django_assert_max_num_queries, size
):
    build_fleet(size)
    client = login(platform_admin)
    # The session, user, roles, review badge, stamps, count, rows, and the filter's three
    # choices (a test's transaction wrote: nothing is read from the cache); none per row.
    with django_assert_max_num_queries(10):
        rows = _page_rows(client)

    assert len(rows) == min(size, 50)
