"""The fleet pages in a real browser: what an admin sees, and a drain's live status."""

import pytest

from inventory.models import HealthEvent, Node, NodeState
from tests.factories import TEST_PASSWORD
from tests.support.fixtures_browser import screenshot, sign_in

from .fleets import build_fleet

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_admin_walks_the_fleet_pages(page, platform_admin):
    nodes = build_fleet(60)
    sign_in(page, "platform-admin", TEST_PASSWORD)

    for path, landmark, name in (
        ("/fleet/", "#capacity-chart", "fleet-overview"),
        ("/fleet/nodes/", "#node-table", "fleet-nodes"),
        (f"/fleet/nodes/{nodes[0].pk}/", "#node-gpus", "fleet-node-detail"),
        ("/fleet/racks/", "[data-site]", "fleet-racks"),
        (f"/fleet/racks/{nodes[0].rack_id}/", "#rack-elevation", "fleet-rack-detail"),
        ("/fleet/capacity/", "#capacity-table", "fleet-capacity"),
    ):
        response = page.goto(path)
        assert response.status == 200, path
        page.locator(landmark).first.wait_for()
        screenshot(page, name)

    page.goto("/fleet/nodes/")
    page.select_option("#id_state", "maintenance")  # htmx swaps the table in place
    page.wait_for_url("**state=maintenance**")
    page.locator("#node-count", has_text="7").wait_for()
    assert page.locator("tr[data-node]").count() == 7

    page.goto("/fleet/import/")
    rows = "name,serial,site,rack,position\ngpu-new-1,SN-1,bulk1,gpu-r000,41\n"
    page.fill("#id_data", rows + "gpu new 2,SN-1,mars,r1,1\n")
    page.click("#import-submit")
    page.locator("#import-result").wait_for()
    screenshot(page, "fleet-import-errors")
    assert page.locator("tr.table-danger").count() == 1
    assert page.locator("#import-apply").count() == 0  # nothing to apply while rows are bad

    page.fill("#id_data", rows)
    page.click("#import-submit")
    page.locator("#import-apply").wait_for()
    screenshot(page, "fleet-import-preview")
    assert Node.objects.count() == 60  # a preview writes nothing
    page.click("#import-apply-submit")
    page.locator("#import-result", has_text="Imported").wait_for()
    assert Node.objects.get(hostname="gpu-new-1").state == NodeState.DISCOVERED


def test_a_draining_node_page_updates_by_itself_when_the_drain_ends(page, platform_admin):
    node = build_fleet(1)[0]
    Node.objects.filter(pk=node.pk).update(
        state=NodeState.DRAINING,
        drain_note="1 pod left: tenant-helix/train-0 refused (disruption budget)",
    )
    HealthEvent.objects.filter(node=node).update(remediation="drain")
    sign_in(page, "platform-admin", TEST_PASSWORD)

    page.goto(f"/fleet/nodes/{node.pk}/")
    page.locator("#drain-progress", has_text="tenant-helix/train-0").wait_for()
    screenshot(page, "fleet-node-draining")

    # The drain finishes in a worker; the page notices within a poll and reloads.
    Node.objects.filter(pk=node.pk).update(state=NodeState.MAINTENANCE, drain_note="")
    page.locator('#node-status[data-state="maintenance"]').wait_for(timeout=10_000)
    assert page.locator("#drain-progress").count() == 0
    assert page.locator("#action-return-to-service").is_visible()
    screenshot(page, "fleet-node-maintenance")


def test_an_empty_fleet_says_what_to_do(page, platform_admin):
    sign_in(page, "platform-admin", TEST_PASSWORD)
    for path, name in (("/fleet/", "fleet-empty-overview"), ("/fleet/nodes/", "fleet-empty-nodes"),
                       ("/fleet/racks/", "fleet-empty-racks")):
        page.goto(path)
        assert page.locator(".empty-state").count() >= 1, path
        screenshot(page, name)


def test_enter_in_the_why_field_changes_nothing_and_a_return_asks_for_the_node_name(
    page, platform_admin
):
    node = build_fleet(1)[0]
    Node.objects.filter(pk=node.pk).update(state=NodeState.MAINTENANCE)
    HealthEvent.objects.create(node=node, kind="ecc-dbe", subject="gpu:0", severity="critical")
    open_faults = HealthEvent.objects.filter(node=node, resolved_at__isnull=True)
    faults = open_faults.count()
    sign_in(page, "platform-admin", TEST_PASSWORD)
    page.goto(f"/fleet/nodes/{node.pk}/")

    # "Return to service" is the form's first action: Enter must not pick it.
    page.fill("#action-reason", "replaced GPU0")
    page.press("#action-reason", "Enter")
    page.wait_for_timeout(500)
    assert page.url.endswith(f"/fleet/nodes/{node.pk}/")
    node.refresh_from_db()
    assert node.state == NodeState.MAINTENANCE
    assert open_faults.count() == faults

    # The explicit button asks first, naming the node; a wrong name is refused.
    with page.expect_navigation():
        page.click("#action-return-to-service")
    assert node.hostname in page.locator("#confirm-page h1").inner_text()
    screenshot(page, "fleet-node-confirm")
    page.fill("#id_confirm", "gpu")
    with page.expect_navigation():
        page.click("#confirm-submit")
    assert page.locator("#confirm-error").is_visible()
    node.refresh_from_db()
    assert node.state == NodeState.MAINTENANCE

    page.fill("#id_confirm", node.hostname)
    with page.expect_navigation():
        page.press("#id_confirm", "Enter")  # on the confirmation page, Enter is the answer
    page.locator('#node-status[data-state="available"]').wait_for()
    assert not open_faults.exists()


def test_the_node_list_pages_in_place_keeping_its_filter(page, platform_admin):
    build_fleet(130)
    sign_in(page, "platform-admin", TEST_PASSWORD)
    page.goto("/fleet/nodes/")
    page.select_option("#id_health", "healthy")  # htmx swaps the table in place
    page.wait_for_url("**health=healthy**")
    first = page.locator("tr[data-node]").first.get_attribute("data-node")

    page.click("#node-pagination a[rel=next]")  # htmx again: the next page, same filter
    page.wait_for_url("**page=2**")
    page.locator("#node-pagination", has_text="Page 2 of").wait_for()
    screenshot(page, "fleet-nodes-page-2")

    assert "health=healthy" in page.url
    assert page.locator("#id_health").input_value() == "healthy"
    assert page.locator("tr[data-node]").first.get_attribute("data-node") != first
    assert page.locator("[data-health]:not([data-health=healthy])").count() == 0
