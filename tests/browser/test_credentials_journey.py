"""A gated model in a real browser: a member stores a Hugging Face token on the tenant's
Credentials page (never shown again), launches an endpoint serving a gated model with it, and
the simulated KServe loads it. The token is in no page on the way. Screenshots land in
SHOTS_DIR (default /tmp/shots-creds)."""

import os
from pathlib import Path

import pytest

from tenants.credentials.models import ModelCredential
from tenants.workloads.models import Workload
from tests.factories import TEST_PASSWORD
from tests.support.axe import axe_violations, describe
from tests.support.fixtures_browser import sign_in
from tests.tenants.workloads.conftest import gpu_pool, workload_quota  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
TOKEN = "hf_BrowserJourneyToken0123456789abcdef"
SHOTS = Path(os.environ.get("SHOTS_DIR", "/tmp/shots-creds"))  # noqa: S108 (outside the repo)


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True, animations="disabled")


def assert_no_token(page) -> None:
    assert TOKEN not in page.content()


def test_store_a_token_and_serve_a_gated_model_with_it(
    tenant, tenant_member, gpu_pool, workload_quota, simulated_gateway, settings,  # noqa: F811
    page, live_server,
):
    settings.FLEET_SIMULATED_READY_SECONDS = 1
    workload_quota()
    sign_in(page, "member", TEST_PASSWORD)

    page.goto("/t/acme/credentials/")
    assert "No credentials yet" in page.locator("#credentials-empty").inner_text()
    shot(page, "1-credentials-empty")
    page.fill("#id_name", "hf-token")
    page.check("#id_kind_0")  # Hugging Face token
    assert not page.locator("#id_access_key_id").is_visible()  # the S3 fields are hidden
    page.fill("#id_token", TOKEN)
    with page.expect_navigation():
        page.click("#add-credential-submit")
    row = page.locator("#credential-hf-token")
    assert "Hugging Face token" in row.inner_text() and "Secret applied" in row.inner_text()
    assert_no_token(page)
    shot(page, "2-credential-stored")
    violations = axe_violations(page)
    assert not violations, describe(violations)

    page.goto("/t/acme/workloads/new/inference/")
    page.fill("#id_name", "llama-gated")
    page.fill("#id_model_uri", "hf://meta-llama/Llama-3.2-3B-Instruct")
    page.locator("#id_model_uri").blur()
    page.locator('#id_credential option[value="hf-token"]').wait_for(state="attached")
    page.select_option("#id_credential", "hf-token")
    shot(page, "3-launch-with-credential")
    with page.expect_navigation():
        page.click("#launch-submit")
    page.locator('#workload-status[data-status="ready"]').wait_for(timeout=30_000)
    assert_no_token(page)
    assert "hf-token" in page.locator("body").inner_text()  # the credential it loads with
    shot(page, "4-gated-endpoint-ready")
    workload = Workload.objects.get(name="llama-gated")
    assert workload.spec["credential"] == "hf-token"

    page.goto("/t/acme/credentials/")
    assert "llama-gated" in page.locator("#credential-hf-token").inner_text()
    page.click('#credential-hf-token a:has-text("Replace values")')
    assert_no_token(page)
    shot(page, "5-replace-values")
    assert ModelCredential.objects.get().in_sync
