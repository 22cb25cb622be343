"""inventory.node_rows writes each row of the node list as the template used to."""

import pytest
from django.template import Context, Template
from django.urls import reverse

from inventory.models import HealthEvent, Node, Rack, Site
from inventory.node_rows import node_row
from inventory.selectors.nodes import node_rows_for_list
from tests.factories import GPUFactory, NodeFactory, RackFactory, hami_gpu_node

from .fleets import build_fleet

# The row of templates/inventory/nodes.html before it was written in Python.
TEMPLATE_ROW = Template(
    """{% load humanize inventory_tags %}<tr data-node="{{ node.hostname }}">
<td><a href="{% url 'inventory:node-detail' node.pk %}" class="fw-semibold">{{ node.hostname }}</a>{% if node.k8s_name != node.hostname %}<div class="small text-muted">{{ node.k8s_name }}</div>{% endif %}</td>
<td>{% if node.rack %}<a href="{% url 'inventory:rack-detail' node.rack_id %}">{{ node.rack.site.slug }}/{{ node.rack.name }}</a> <span class="text-muted small">U{{ node.position }}</span>{% else %}<span class="text-muted small">unracked</span>{% endif %}</td>
<td>{% if node.gpu_count %}{{ node.gpu_count|intcomma }}× <span class="small">{{ node.gpu_model|gpu_label }}</span>{% if node.gpu_sharing != 'whole' %} <span class="badge text-bg-{{ node.gpu_sharing_color }}" data-sharing="{{ node.gpu_sharing }}">{{ node.get_gpu_sharing_display }}</span>{% endif %}{% else %}<span class="text-muted">—</span>{% endif %}</td>
<td>{% include "inventory/_state_badge.html" %}</td>
<td>{% include "inventory/_health_badge.html" %}{% if node.open_events %} <span class="small text-muted">{{ node.open_events|intcomma }} open</span>{% endif %}</td>
<td>{% if node.reserved_for %}<span class="badge text-bg-light border"><i class="bi bi-lock"></i> {{ node.reserved_for }}</span>{% else %}<span class="text-muted small">shared</span>{% endif %}</td>
<td class="text-end small text-nowrap">{{ node.cpu_cores|intcomma }} vCPU · {{ node.memory_gib|intcomma }} GiB</td>
</tr>"""  # noqa: E501, RUF001
)


def _squeezed(html: str) -> str:
    return html.replace("\n", "")  # the template's line breaks (between tags) aside


@pytest.mark.django_db
def test_every_kind_of_row_is_what_the_template_wrote():
    build_fleet(48)  # racked, healthy, degraded and critical, every state, some reserved
    NodeFactory(
        hostname="loose-1",
        rack=None,
        position=None,
        reserved_for="<nova&co>",
        k8s_name="k8s-loose-1",
        cpu_cores=1234,
        memory_gib=16384,
    )
    hami_gpu_node(hostname="shared-1")
    nodes = list(node_rows_for_list())

    assert {n.health for n in nodes} == {"healthy", "degraded", "critical"}
    assert any(n.open_events for n in nodes) and any(not n.gpu_count for n in nodes)
    for node in nodes:
        rack_url = reverse("inventory:rack-detail", args=[node.rack_id]) if node.rack_id else ""
        written = node_row(
            node, detail_url=reverse("inventory:node-detail", args=[node.pk]), rack_url=rack_url
        )
        assert _squeezed(written) == _squeezed(TEMPLATE_ROW.render(Context({"node": node}))), (
            node.hostname
        )


def _page_rows(client, query: str = "") -> dict[str, str]:
    import re

    rows = client.get(f"/fleet/nodes/?{query}").context["page"].object_list
    return {re.search(r'<tr data-node="([^"]*)">', row).group(1): str(row) for row in rows}


def _rows_now() -> dict[str, str]:
    """Each node's row as node_row writes it of the node as it is now."""
    return {
        node.hostname: node_row(
            node, detail_url=reverse("inventory:node-detail", args=[node.pk]),
            rack_url=reverse("inventory:rack-detail", args=[node.rack_id]) if node.rack_id
            else "",
        )
        for node in node_rows_for_list()
    }


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


@pytest.mark.django_db
@pytest.mark.parametrize("change", NODE_CHANGES)
def test_a_listed_row_follows_each_value_it_shows(login, platform_admin, change):
    node = NodeFactory(hostname="gpu-a")
    GPUFactory(node=node, index=0)
    NodeFactory(hostname="gpu-b", rack=None, position=None)
    client = login(platform_admin)
    before = _page_rows(client)
    assert before == _rows_now()

    NODE_CHANGES[change](node)
    after = _page_rows(client)

    assert after == _rows_now()
    assert after != before and after["gpu-b"] == before["gpu-b"]


@pytest.mark.django_db
def test_rows_written_afresh_read_nothing_more_and_asked_again_are_not_written(
    login, platform_admin, django_assert_max_num_queries
):
    from inventory.views import nodes as node_views

    build_fleet(12)
    client = login(platform_admin)
    node_views._LISTED_ROWS.memo.clear()
    # The session, user, roles, review badge, stamps, count, rows, and the filter's two
    # choices (a test's transaction wrote: nothing is read from the cache); no query per row
    # written (its rack, say).
    with django_assert_max_num_queries(9):
        first = _page_rows(client)
    built = len(node_views._LISTED_ROWS.memo)

    assert first == _rows_now() and built == 12
    assert _page_rows(client) == first and len(node_views._LISTED_ROWS.memo) == built
