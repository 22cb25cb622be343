"""The GPU use card in headless Chromium: the workload page loads it after itself, draws its
three charts from a real Prometheus's series, and draws them again for another period."""

import pytest

from tenants.workloads.models import Workload
from tests.factories import TEST_PASSWORD
from tests.support.fixtures_browser import screenshot, sign_in

from .gpu_series import H100, gpu_series

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# How many GPU lines each of the card's charts draws.
LINES = """() => [...document.querySelectorAll("#gpu-use canvas[data-gpu-chart]")].map(
  (canvas) => Chart.getChart(canvas).data.datasets.length)"""
# Whether the three charts are drawn: htmx swaps the card in, then settles it and fires its
# `htmx:load`, on which gpu_use.js draws them.
DRAWN = """() => {
  const canvases = [...document.querySelectorAll("#gpu-use canvas[data-gpu-chart]")];
  return canvases.length === 3 && canvases.every((canvas) => Chart.getChart(canvas));
}"""


def test_the_card_draws_the_workloads_gpus_for_each_period(
    page, live_server, tenant, tenant_member, prometheus_server, settings
):
    settings.PROMETHEUS_URL = prometheus_server(gpu_series()).url
    box = Workload.objects.create(tenant=tenant, kind="vm", name="box", demand={H100: 1},
                                  status="ready", spec={"running": True},
                                  launched_by=tenant_member, applied_version=1)
    sign_in(page, "member", TEST_PASSWORD)
    page.goto(f"/t/acme/workloads/{box.pk}/")
    page.locator('#gpu-use[data-state="ok"][data-period="1h"]').wait_for(timeout=15_000)
    page.wait_for_function(DRAWN, timeout=15_000)
    assert page.evaluate(LINES) == [1, 1, 1]
    assert "Mean utilization 40 %" in page.locator("#gpu-use-summary").inner_text()
    screenshot(page, "workload-gpu-use")

    page.click('[data-gpu-period="7d"]')
    page.locator('#gpu-use[data-state="ok"][data-period="7d"]').wait_for(timeout=15_000)
    page.wait_for_function(DRAWN, timeout=15_000)
    assert page.evaluate(LINES) == [1, 1, 1]
    assert page.locator('[data-gpu-period="7d"]').get_attribute("aria-pressed") == "true"
