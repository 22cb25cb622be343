"""Notebooks for people and the API: the launch form and the API launch (field errors are 400s
naming the field, never 500s), the person's home volume, power from the page and the API, one
running notebook per home volume when it mounts on one node only, another tenant's notebook a
404, the detail page's "Open" button and stopped state, pinned query counts, and where the
gateway publishes a notebook (sign-in for the tenant's people only)."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from core.errors import RuleViolation
from core.models import AuditEvent
from tenants.workloads import services
from tenants.workloads.forms import ScaleForm
from tenants.workloads.kinds.schemas import check_manifests
from tenants.workloads.models import NotebookImage, Workload, WorkloadStatus
from tenants.workloads.selectors import build_context, launch_context

from .conftest import H100

pytestmark = pytest.mark.django_db

IMAGE = {"key": "pytorch", "label": "PyTorch", "interface": "jupyterlab",
         "image": "quay.io/jupyter/pytorch-notebook:cuda12-2025-11-10"}
FORM = {"name": "explore", "image": "pytorch", "cpu": "4", "memory_gib": "16", "gpu": ""}
# session, user with roles and memberships, the page's tenant and switcher, then the page's:
# the workload with its tenant and launcher, the timeline, its idle episode.
DETAIL_QUERIES = 6


@pytest.fixture
def notebooks(gpu_pool, workload_quota):
    workload_quota(**{"count:notebook": 4, "storage-gib": 1000})
    return NotebookImage.objects.create(**IMAGE)


def _launch(tenant, who, name="explore", **spec) -> Workload:
    return services.workload_launch(tenant=tenant, actor=who, kind="notebook", name=name,
                                    spec={"image": "pytorch", **spec})


def _ready(workload: Workload, *, url: str = "") -> None:
    """As an observation leaves a running notebook: ready, applied, its address found."""
    Workload.objects.filter(pk=workload.pk).update(
        status=WorkloadStatus.READY, applied_version=workload.desired_version,
        observed={"state": "ready", "details": {"url": url, "interface": "jupyterlab",
                                                "image": IMAGE["image"]}},
    )


# --- contexts ---------------------------------------------------------------------------------


def test_the_launch_context_carries_the_catalog_and_who_launches(tenant, notebooks, settings):
    settings.NOTEBOOK_HOME_GIB = 80
    NotebookImage.objects.create(key="old", label="Old", image="quay.io/x/old:1", active=False)
    with CaptureQueriesContext(connection) as queries:
        ctx = launch_context(tenant=tenant, person="alice")
    assert len(queries) == 6
    assert ctx.person == "alice"
    assert ctx.catalog["notebook_images"] == {"pytorch": {
        "label": "PyTorch", "image": IMAGE["image"], "interface": "jupyterlab"}}
    assert ctx.catalog["notebook_custom_images"] is False
    assert ctx.catalog["notebook_home_gib"] == 80
    assert ctx.catalog["notebook_home_access_mode"] == "ReadWriteOnce"


def test_a_notebook_is_published_behind_sign_in_for_the_tenants_people_only(
    tenant, tenant_member, notebooks, settings
):
    settings.NOTEBOOK_DOMAIN = "notebooks.example.com"
    settings.OIDC_ISSUER_URL = "https://sso.example.com/realms/ai-factory"
    settings.OIDC_OP_JWKS_ENDPOINT = ""
    settings.FLEET_BACKEND = "kubernetes"
    workload = _launch(tenant, tenant_member)

    ctx = build_context(workload=workload)
    gate = ctx.exposure.oidc
    assert ctx.exposure.domain == "notebooks.example.com" and ctx.exposure.url_prefix == ""
    assert gate.issuer == "https://sso.example.com/realms/ai-factory"
    assert gate.jwks_uri == gate.issuer + "/protocol/openid-connect/certs"
    assert gate.client_secret_name == "portal-notebook-oidc"
    assert gate.allowed_groups == ("/tenants/acme/owner", "/tenants/acme/member")
    kinds = [m["kind"] for m in workload.kind_entry.module.manifests(workload.spec, ctx)]
    assert "SecurityPolicy" in kinds and "HTTPRoute" in kinds
    check_manifests(workload.kind_entry.module.manifests(workload.spec, ctx))


def test_the_simulated_fleet_signs_in_with_the_portal_and_no_domain_publishes_nothing(
    tenant, tenant_member, notebooks, settings
):
    workload = _launch(tenant, tenant_member)
    settings.FLEET_BACKEND, settings.OIDC_ISSUER_URL = "simulated", ""
    settings.NOTEBOOK_DOMAIN = "notebooks.demo.internal"
    assert build_context(workload=workload).exposure.oidc.issuer == settings.PORTAL_URL
    settings.NOTEBOOK_DOMAIN = ""
    assert build_context(workload=workload).exposure is None


# --- launch -----------------------------------------------------------------------------------


def test_the_form_launches_a_notebook_on_the_persons_home_volume(
    login, tenant, tenant_member, notebooks
):
    client = login(tenant_member)
    page = client.get("/t/acme/workloads/new/notebook/")
    html = page.content.decode()
    assert page.status_code == 200
    assert '<option value="pytorch"' in html
    assert 'name="custom_image"' not in html  # the tenant may not bring its own

    response = client.post("/t/acme/workloads/new/notebook/", FORM)
    workload = Workload.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/t/acme/workloads/{workload.pk}/"
    assert workload.spec["home"] == "home-member" and workload.spec["image_ref"] == IMAGE["image"]
    assert workload.spec["running"] is True and not workload.spec.get("gpu")


def test_a_tenant_that_may_offers_its_own_image_and_interface(
    login, tenant, tenant_member, notebooks
):
    tenant.custom_notebook_images = True
    tenant.save(update_fields=["custom_notebook_images"])
    client = login(tenant_member)
    html = client.get("/t/acme/workloads/new/notebook/").content.decode()
    assert 'name="custom_image"' in html and 'name="interface"' in html

    client.post("/t/acme/workloads/new/notebook/", {
        **FORM, "image": "__custom__", "custom_image": "ghcr.io/acme/lab:2.1",
        "interface": "code-server"})
    spec = Workload.objects.get().spec
    assert spec["image_ref"] == "ghcr.io/acme/lab:2.1" and spec["interface"] == "code-server"


def test_the_form_shows_hami_fields_only_for_a_hami_share(login, tenant_member, notebooks):
    client = login(tenant_member)
    whole = client.post("/t/acme/workloads/new/notebook/check/", {**FORM, "gpu": H100})
    assert 'name="gpus"' in whole.content.decode()
    assert 'name="gpu_memory_gib"' not in whole.content.decode()
    none = client.post("/t/acme/workloads/new/notebook/check/", FORM).content.decode()
    assert 'name="gpus"' not in none and 'name="gpu_cores"' not in none


def test_a_bad_form_keeps_what_was_typed_and_launches_nothing(login, tenant_member, notebooks):
    client = login(tenant_member)
    response = client.post("/t/acme/workloads/new/notebook/", {**FORM, "cpu": "999"})
    assert response.status_code == 200
    assert 'data-error-for="cpu"' in response.content.decode()
    assert 'value="999"' in response.content.decode()
    unknown = client.post("/t/acme/workloads/new/notebook/", {**FORM, "image": "nope"})
    assert 'data-error-for="image"' in unknown.content.decode()
    assert not Workload.objects.exists()


@pytest.mark.parametrize(("spec", "field"), [
    ({"image": "nope"}, "spec.image"),
    ({"image": "pytorch", "cpu": "lots"}, "spec.cpu"),
    ({"image": "pytorch", "memory_gib": 10**6}, "spec.memory_gib"),
    ({"image": "pytorch", "home": "home-someone-else"}, "spec"),  # not a person's to give
    ({"custom_image": "ghcr.io/acme/lab:2.1", "interface": "jupyterlab"}, "spec.custom_image"),
    ({"image": "pytorch", "gpu": "gpu:no-such-model"}, "spec.gpu"),
    ({"image": ["pytorch"]}, "spec.image"),
])
def test_api_launch_errors_are_400s_on_the_field(api_client, tenant_member, notebooks, spec,
                                                 field):
    api_client.force_login(tenant_member)
    response = api_client.post("/api/v1/workloads/", {
        "tenant": "acme", "kind": "notebook", "name": "explore", "spec": spec}, format="json")
    assert response.status_code == 400, response.content[:300]
    assert field in response.json()["error"]["fields"]
    assert not Workload.objects.exists()


def test_api_launch_and_check_answer_the_notebook(api_client, tenant_member, notebooks):
    api_client.force_login(tenant_member)
    body = {"tenant": "acme", "kind": "notebook", "name": "explore",
            "spec": {"image": "pytorch", "gpu": H100, "gpus": 1}}
    check = api_client.post("/api/v1/workloads/check/", body, format="json")
    assert check.status_code == 200 and check.json()["spec"]["home"] == "home-member"
    response = api_client.post("/api/v1/workloads/", body, format="json")
    assert response.status_code == 202, response.content[:300]
    assert response.json()["demand"][H100] == 1


# --- power and the home volume ----------------------------------------------------------------


def test_stop_and_start_from_the_page_and_the_api(login, api_client, tenant, tenant_member,
                                                 notebooks):
    workload = _launch(tenant, tenant_member, gpu=H100, gpus=1)
    client = login(tenant_member)
    url = f"/t/acme/workloads/{workload.pk}/power/"
    ask = client.post(url, {"action": "stop"})
    assert ask.status_code == 200 and "home volume is kept" in ask.content.decode()
    workload.refresh_from_db()
    assert workload.spec["running"] is True  # asked first, nothing changed

    assert client.post(url, {"action": "stop", "confirm": "explore"}).status_code == 302
    workload.refresh_from_db()
    assert workload.spec["running"] is False and H100 not in workload.demand
    assert workload.demand["storage-gib"] == workload.spec["home_gib"]

    api_client.force_login(tenant_member)
    started = api_client.post(f"/api/v1/workloads/{workload.pk}/power/", {"action": "start"},
                              format="json")
    assert started.status_code == 202 and started.json()["spec"]["running"] is True
    restart = api_client.post(f"/api/v1/workloads/{workload.pk}/power/", {"action": "restart"},
                              format="json")
    assert restart.status_code == 400
    assert AuditEvent.objects.filter(action__in=["workload.stop", "workload.start"]).count() == 2


def test_a_second_running_notebook_on_a_single_node_home_is_refused_naming_the_first(
    tenant, tenant_member, tenant_owner, notebooks, settings
):
    settings.NOTEBOOK_HOME_ACCESS_MODE = "ReadWriteOnce"
    first = _launch(tenant, tenant_member, name="first")
    with pytest.raises(Exception) as refused:
        _launch(tenant, tenant_member, name="second")
    assert ("Your home volume is mounted by notebook first: stop it first, or ask your admins "
            "for ReadWriteMany home volumes.") in str(refused.value)
    _launch(tenant, tenant_owner, name="owners")  # another person, another home volume

    services.workload_power(workload_id=first.pk, actor=tenant_member, action="stop")
    second = _launch(tenant, tenant_member, name="second")
    with pytest.raises(RuleViolation, match="mounted by notebook second"):
        services.workload_power(workload_id=first.pk, actor=tenant_member, action="start")
    services.workload_power(workload_id=second.pk, actor=tenant_member, action="stop")
    services.workload_power(workload_id=first.pk, actor=tenant_member, action="start")


def test_the_api_says_why_a_second_notebook_waits_for_the_home_volume(
    api_client, tenant, tenant_member, notebooks, settings
):
    settings.NOTEBOOK_HOME_ACCESS_MODE = "ReadWriteOncePod"
    _launch(tenant, tenant_member, name="first")
    api_client.force_login(tenant_member)
    response = api_client.post("/api/v1/workloads/", {
        "tenant": "acme", "kind": "notebook", "name": "second",
        "spec": {"image": "pytorch"}}, format="json")
    assert response.status_code == 400
    assert "mounted by notebook first" in str(response.json()["error"]["fields"]["spec"])


def test_shared_home_volumes_let_a_person_run_several_notebooks(
    tenant, tenant_member, notebooks, settings
):
    settings.NOTEBOOK_HOME_ACCESS_MODE = "ReadWriteMany"
    _launch(tenant, tenant_member, name="first")
    second = _launch(tenant, tenant_member, name="second")
    assert second.spec["home"] == "home-member"


# --- the detail page --------------------------------------------------------------------------


def test_a_running_notebook_opens_from_its_page(login, tenant, tenant_member, notebooks):
    workload = _launch(tenant, tenant_member)
    _ready(workload, url="https://explore-acme.notebooks.example.com/")
    html = login(tenant_member).get(f"/t/acme/workloads/{workload.pk}/").content.decode()
    assert re.search(r'id="notebook-open" href="https://explore-acme\.notebooks\.example\.com/"'
                     r'[^>]*>.*Open JupyterLab', html, re.S)
    assert IMAGE["image"] in html and "home-member" in html and "50 GiB" in html
    assert 'name="action" value="stop"' in html and 'value="restart"' not in html


def test_a_stopped_notebook_says_its_home_volume_is_kept(login, tenant, tenant_member,
                                                        notebooks):
    workload = _launch(tenant, tenant_member)
    services.workload_power(workload_id=workload.pk, actor=tenant_member, action="stop")
    workload.refresh_from_db()
    Workload.objects.filter(pk=workload.pk).update(
        status=WorkloadStatus.READY, status_reason="Stopped",
        applied_version=workload.desired_version)
    html = login(tenant_member).get(f"/t/acme/workloads/{workload.pk}/").content.decode()
    assert "Stopped — your home volume is kept" in html
    assert 'id="notebook-open"' not in html and 'name="action" value="start"' in html


def test_another_tenants_notebook_is_not_found(login, api_client, tenant, tenant_member,
                                              other_tenant_member, notebooks):
    workload = _launch(tenant, tenant_member)
    client = login(other_tenant_member)
    assert client.get(f"/t/acme/workloads/{workload.pk}/").status_code == 404
    assert client.post(f"/t/acme/workloads/{workload.pk}/power/",
                       {"action": "stop", "confirm": "explore"}).status_code == 404
    api_client.force_login(other_tenant_member)
    assert api_client.post(f"/api/v1/workloads/{workload.pk}/power/", {"action": "stop"},
                           format="json").status_code == 404
    workload.refresh_from_db()
    assert workload.spec["running"] is True


def test_the_notebook_page_and_launch_form_make_pinned_queries(
    login, tenant, tenant_member, notebooks
):
    client = login(tenant_member)
    workload = _launch(tenant, tenant_member)
    _ready(workload)
    counts = []
    for extra in (0, 6):
        for i in range(extra):
            NotebookImage.objects.create(key=f"img-{extra}-{i}", label=f"Image {extra} {i}",
                                         image=f"quay.io/x/img:{i}")
        for url in (f"/t/acme/workloads/{workload.pk}/", "/t/acme/workloads/new/notebook/"):
            client.get(url)
            with CaptureQueriesContext(connection) as queries:
                assert client.get(url).status_code == 200
            counts.append(len(queries))
    assert counts[0] == counts[2] == DETAIL_QUERIES
    assert counts[1] == counts[3]


# --- admin and price --------------------------------------------------------------------------


def test_platform_admins_keep_notebook_images_and_the_tenants_permission_in_admin(
    login, platform_admin, tenant
):
    client = login(platform_admin)
    form = {"key": "vscode", "label": "VS Code", "image": "ghcr.io/coder/code-server:4.96",
            "interface": "code-server", "active": "on"}
    refused = client.post("/admin/tenants/notebookimage/add/", {**form, "image": "not an image"})
    assert refused.status_code == 200 and not NotebookImage.objects.exists()
    assert client.post("/admin/tenants/notebookimage/add/", form).status_code == 302
    image = NotebookImage.objects.get()
    assert (image.interface, image.active) == ("code-server", True)
    assert AuditEvent.objects.filter(action="notebook_image.create", actor=platform_admin).exists()

    page = client.get(f"/admin/tenants/tenant/{tenant.pk}/change/").content.decode()
    assert 'name="custom_notebook_images"' in page


def test_the_launch_forms_price_answers_for_a_notebook(login, tenant_member, notebooks):
    response = login(tenant_member).post("/billing/quote/?tenant=acme&kind=notebook",
                                         {**FORM, "gpu": H100, "gpus": "1"})
    assert response.status_code == 200


@pytest.mark.parametrize("gpu, counted", [(H100, True), ("mig:nvidia-a100-80gb:1g.10gb", False),
                                          ("hami:nvidia-l40s", False)])
def test_resizing_asks_for_a_gpu_count_only_of_whole_gpus(gpu, counted):
    """One MIG instance or one HAMi share is all a notebook gets: its resize form has no
    count to change (a HAMi share is resized by its memory and compute instead)."""
    spec = {"gpu": gpu, "gpus": 1, "cpu": 4, "memory_gib": 16}
    if gpu.startswith("hami:"):
        spec |= {"gpu_memory_gib": 12, "gpu_cores": 20}
    form = ScaleForm(workload=Workload(kind="notebook", spec=spec))
    assert ("gpus" in form.fields) is counted
    assert ("gpu_memory_gib" in form.fields) is gpu.startswith("hami:")
