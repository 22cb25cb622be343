"""Kueue's fair share in a real browser: a launch that cannot be admitted yet says where it
stands and why, live, and starts on its own once another workload frees the quota; a lender's
launch reclaims what a borrower held, and the borrower's timeline and dashboard say so."""

import re
from io import StringIO

import pytest
from django.core.management import call_command
from playwright.sync_api import Page, expect

from core.fleet import get_gateway
from tenants.enforcement.services import tenant_reconcile, tenants_reconcile_sweep
from tenants.workloads import services
from tenants.workloads.models import Workload
from tests.factories import TEST_PASSWORD, GPUFactory, NodeFactory, QuotaFactory
from tests.support.axe import axe_violations, describe
from tests.support.fixtures_browser import fresh_page, screenshot, sign_in
from tests.tenants.kueue_pods import queued_pod

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

H100 = "gpu:nvidia-h100-80gb"
PRODUCT = "NVIDIA-H100-80GB-HBM3"
# Long enough for a page that polls every 3 s to look a few times and see a pod start.
LIVE_MS = 30_000


def _clean(page: Page, name: str) -> None:
    violations = axe_violations(page)
    assert not violations, f"{name}:\n{describe(violations)}"


def _launch_endpoint(page: Page, tenant: str, *, name: str, model: str, gpu: str,
                     gpus: int, min_replicas: int = 1) -> None:
    """Fill the endpoint launch form as a person would (one replica) and launch it."""
    page.goto(f"/t/{tenant}/workloads/new/inference/")
    page.fill("#id_name", name)
    page.fill("#id_model_uri", model)
    page.select_option("#id_gpu", gpu)
    page.locator("#field-gpus_per_replica").wait_for()
    page.fill("#id_gpus_per_replica", str(gpus))
    page.fill("#id_min_replicas", str(min_replicas))
    page.fill("#id_max_replicas", "1")
    expect(page.locator("#launch-submit")).to_be_enabled()
    with page.expect_navigation(url=re.compile(r"/workloads/\d+/$")):
        page.click("#launch-submit")


@pytest.fixture
def full_queue(settings, tenant, tenant_member):
    """Acme's 8 H100s are all admitted by Kueue: its endpoint `chat` holds 4, and a fine-tuning
    job its members sent with kubectl (no workload of the portal's) holds 4 at the same
    priority, so nothing in the queue can displace it."""
    settings.FLEET_SIMULATED_READY_SECONDS = 1
    for node in (NodeFactory(reserved_for="") for _ in range(2)):
        for index in range(8):
            GPUFactory(node=node, index=index, model="nvidia-h100-80gb")
    for resource, limit in {H100: 8, "cpu": 64, "memory-gib": 512,
                            "count:inference": 3}.items():
        QuotaFactory(tenant=tenant, resource=resource, limit=limit)
    get_gateway("main").apply(manifests=[
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name, "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.product": PRODUCT, "nvidia.com/gpu.count": "8"}}, "spec": {}}
        for name in ("gpu-a", "gpu-b")
    ])
    tenant_reconcile(tenant_id=tenant.pk)  # its namespace and queues: Kueue manages it
    get_gateway("main").apply(manifests=[queued_pod(tenant.namespace, "finetune", gpus=4,
                                              priority="portal-serving", product=PRODUCT)])
    chat = services.workload_launch(
        tenant=tenant, actor=tenant_member, kind="inference", name="chat",
        spec={"model_uri": "hf://meta-llama/Llama-3.1-8B-Instruct", "gpu": H100,
              "gpus_per_replica": 4, "min_replicas": 1, "max_replicas": 1},
    )
    services.workload_reconcile(workload_id=chat.pk)
    services.workload_observe(workload_id=chat.pk)
    return chat


def test_a_queued_launch_says_where_it_stands_live_and_starts_once_quota_frees(
    browser, live_server, tenant, tenant_member, full_queue
):
    with fresh_page(browser, live_server) as page:
        sign_in(page, tenant_member.username, TEST_PASSWORD)
        # Minimum 0: it queues in the tenant's `default` behind the job (with a minimum it
        # would have a queue of its own and take its quota back from the job at once).
        _launch_endpoint(page, tenant.slug, name="chat-large",
                         model="hf://meta-llama/Llama-3.3-70B-Instruct", gpu=H100, gpus=4,
                         min_replicas=0)

        # The page polls: the first looks find its replica waiting in the queue.
        expect(page.locator("#workload-status [data-status=queued]")).to_be_visible(
            timeout=LIVE_MS)
        expect(page.locator("#queue-summary")).to_have_text(
            "1st in the queue · waits for 4 NVIDIA H100 80GB HBM3 GPUs "
            "(flavor gpu-nvidia-h100-80gb)", timeout=LIVE_MS)
        assert page.locator("#queue-kueue-message").inner_text() == (
            "Kueue: couldn't assign flavors to pod set main: insufficient unused quota for "
            "nvidia.com/gpu in flavor gpu-nvidia-h100-80gb, 4 more needed")
        assert "1 replica waiting in the tenant's queue" in page.locator("#progress").inner_text()
        screenshot(page, "queue-launch-waiting")
        _clean(page, "a queued endpoint")

        # Another workload of the tenant goes (in a second tab): its quota frees.
        with fresh_page(browser, live_server) as other:
            sign_in(other, tenant_member.username, TEST_PASSWORD)
            other.goto(f"/t/{tenant.slug}/workloads/{full_queue.pk}/")
            with other.expect_navigation():
                other.click("#delete")
            other.fill("#id_confirm", "chat")
            with other.expect_navigation():
                other.click("#confirm-submit")

        # The first tab was not reloaded: its polling sees the replica admitted, then running.
        expect(page.locator("#workload-status")).to_have_attribute(
            "data-status", "ready", timeout=LIVE_MS)
        expect(page.locator("#queue")).to_have_count(0)
        expect(page.locator("#workload-status [data-status=ready]")).to_be_visible()
        screenshot(page, "queue-launch-admitted")
    assert Workload.objects.get(name="chat").status in ("deleting", "deleted")


def test_a_lenders_launch_reclaims_a_borrowers_gpus_and_the_borrowers_pages_say_so(
    browser, live_server, settings
):
    # The demo: Atlas's benchmark cluster borrows Nova's idle L40S; Nova's 70B endpoint took
    # back one worker's. Mike is a member of Nova (the lender) and a viewer of Atlas.
    call_command("load_demo", stdout=StringIO())
    settings.FLEET_SIMULATED_READY_SECONDS = 1  # what is launched from now on comes up at once
    bench = Workload.objects.get(tenant__slug="atlas", name="bench-slurm")
    with fresh_page(browser, live_server) as page:
        sign_in(page, "mike", "mike-member-demo")

        page.goto(f"/t/atlas/workloads/{bench.pk}/")
        expect(page.locator("#workload-status [data-status=queued]")).to_be_visible()
        assert page.locator("#queue-summary").inner_text() == (
            "1st in the queue · waits for 2 NVIDIA L40S GPUs (flavor gpu-nvidia-l40s) · "
            "would borrow 2 from the cohort")
        reclaims = page.locator("#timeline [data-reason=Preempted]")
        expect(reclaims).to_have_count(1)
        assert "reclaimed by tenant Nova Inference's inference endpoint chat-70b" in (
            reclaims.first.inner_text())
        screenshot(page, "queue-borrower-preempted")
        _clean(page, "a preempted Slurm cluster")

        page.goto("/t/atlas/")
        queue_card = page.locator("#section-gpu-queue")
        assert queue_card.locator("[data-gpus-queued]").get_attribute("data-gpus-queued") == "2"
        assert queue_card.locator("[data-gpus-borrowed]").get_attribute(
            "data-gpus-borrowed") == "6"
        screenshot(page, "queue-borrower-dashboard")

        # Nova needs 2 more of its own L40S: Kueue takes them back from Atlas's cluster.
        _launch_endpoint(page, "nova", name="reranker", model="hf://BAAI/bge-reranker-v2-m3",
                         gpu="gpu:nvidia-l40s", gpus=2)
        expect(page.locator("#workload-status")).to_have_attribute(
            "data-status", "ready", timeout=LIVE_MS)
        screenshot(page, "queue-lender-launched")

        page.goto(f"/t/atlas/workloads/{bench.pk}/")
        expect(reclaims).to_have_count(2, timeout=LIVE_MS)
        assert "reclaimed by tenant Nova Inference's inference endpoint reranker" in (
            page.locator("#timeline").inner_text())
        expect(page.locator("#queue-summary")).to_contain_text(
            "waits for 4 NVIDIA L40S GPUs", timeout=LIVE_MS)
        screenshot(page, "queue-borrower-preempted-again")

        # The periodic sweep reads Kueue's counts into the quota: what Atlas borrows now.
        tenants_reconcile_sweep()
        page.goto("/t/atlas/")
        assert queue_card.locator("[data-gpus-queued]").get_attribute("data-gpus-queued") == "4"
        assert queue_card.locator("[data-gpus-borrowed]").get_attribute(
            "data-gpus-borrowed") == "4"
        screenshot(page, "queue-borrower-dashboard-after")
        _clean(page, "the borrower's dashboard")
