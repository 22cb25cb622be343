"""Workload pages: list with filters and pagination, launch forms with htmx checks and a quota
preview, the detail page's live status, timeline, connection, scale and delete; isolation."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tenants.workloads import services
from tenants.workloads.models import Workload, WorkloadStatus

from .conftest import H100, INFERENCE_SPEC, ready_inference_service

FORM = {
    "name": "chat", "model_uri": INFERENCE_SPEC["model_uri"], "gpu": H100,
    "gpus_per_replica": "1", "min_replicas": "1", "max_replicas": "2", "cpu": "4",
    "memory_gib": "32",
}


@pytest.fixture
def member(login, tenant_member, gpu_pool, workload_quota):
    workload_quota()
    return login(tenant_member)


def _launched(tenant, who, name="chat", **spec):
    return services.workload_launch(tenant=tenant, actor=who, kind="inference", name=name,
                                    spec={**INFERENCE_SPEC, "max_replicas": 1, **spec})


@pytest.mark.django_db
def test_an_empty_list_says_how_to_launch(member):
    page = member.get("/t/acme/workloads/").content.decode()
    assert "Nothing runs in" in page and "/t/acme/workloads/new/" in page


@pytest.mark.django_db
def test_the_launch_chooser_lists_every_kind_with_the_tenants_quota(member):
    page = member.get("/t/acme/workloads/new/").content.decode()
    for kind in ("vcluster", "inference", "vm", "slurm"):
        assert f'data-kind="{kind}"' in page
    assert "Your quota: 3 Inference endpoints" in page


@pytest.mark.django_db
def test_the_launch_form_offers_only_gpus_the_tenant_may_use_and_says_why(member, tenant):
    page = member.get("/t/acme/workloads/new/inference/").content.decode()
    assert f'value="{H100}"' in page
    assert "MIG" not in page or "dedicated" not in page  # a shared tenant: no such note


@pytest.mark.django_db
def test_a_dedicated_tenant_is_told_why_it_gets_no_mig(login, tenant_member, tenant, gpu_pool,
                                                       workload_quota):
    tenant.isolation = "dedicated"
    tenant.save()
    workload_quota()
    page = login(tenant_member).get("/t/acme/workloads/new/inference/").content.decode()
    assert "dedicated tenants get whole GPUs on their reserved nodes only" in page


@pytest.mark.django_db
def test_the_htmx_check_shows_field_errors_and_the_quota_preview(member):
    bad = member.post("/t/acme/workloads/new/inference/check/",
                      {**FORM, "min_replicas": "3", "max_replicas": "2"}, HTTP_HX_REQUEST="true")
    assert bad.status_code == 200
    assert 'data-error-for="min_replicas"' in bad.content.decode()
    good = member.post("/t/acme/workloads/new/inference/check/", FORM, HTTP_HX_REQUEST="true")
    html = good.content.decode()
    assert f'data-resource="{H100}" data-fits="true"' in html
    assert "<strong>2</strong> of 4" in html
    assert not Workload.objects.exists()  # checking launches nothing


@pytest.mark.django_db
def test_launching_from_the_form_goes_to_its_page(member, simulated_gateway):
    response = member.post("/t/acme/workloads/new/inference/", FORM)
    workload = Workload.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/t/acme/workloads/{workload.pk}/"


@pytest.mark.django_db
def test_a_launch_over_quota_keeps_what_was_typed_and_says_why(member, simulated_gateway):
    response = member.post("/t/acme/workloads/new/inference/", {**FORM, "max_replicas": "9"})
    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="form-errors"' in html and "are left" in html
    assert 'value="hf://meta-llama/Llama-3.1-8B-Instruct"' in html
    assert not Workload.objects.exists()


@pytest.mark.django_db
def test_the_detail_page_polls_while_in_progress_and_stops_once_ready(
    member, tenant, tenant_member, kube_gateway, kube_emulator
):
    workload = _launched(tenant, tenant_member)
    services.workload_reconcile(workload_id=workload.pk)
    polling = member.get(f"/t/acme/workloads/{workload.pk}/").content.decode()
    assert 'hx-trigger="every 3s"' in polling and 'data-status="provisioning"' in polling

    ready_inference_service(kube_emulator, name="chat", namespace=tenant.namespace)
    services.workload_observe(workload_id=workload.pk)
    done = member.get(f"/t/acme/workloads/{workload.pk}/", HTTP_HX_REQUEST="true")
    html = done.content.decode()
    assert 'data-status="ready"' in html and 'hx-trigger' not in html
    assert 'id="connection"' in html and "curl" in html
    full = member.get(f"/t/acme/workloads/{workload.pk}/").content.decode()
    assert 'id="timeline"' in full and "Launched" in full


@pytest.mark.django_db
def test_delete_asks_first_naming_the_workload(member, tenant, tenant_member, simulated_gateway):
    workload = _launched(tenant, tenant_member)
    asked = member.post(f"/t/acme/workloads/{workload.pk}/delete/")
    assert asked.status_code == 200
    assert "Delete Inference endpoint chat?" in asked.content.decode()
    workload.refresh_from_db()
    assert workload.status != WorkloadStatus.DELETING

    wrong = member.post(f"/t/acme/workloads/{workload.pk}/delete/", {"confirm": "other"})
    assert wrong.status_code == 400
    member.post(f"/t/acme/workloads/{workload.pk}/delete/", {"confirm": "chat"})
    workload.refresh_from_db()
    assert workload.status in (WorkloadStatus.DELETING, WorkloadStatus.DELETED)


@pytest.mark.django_db
def test_scaling_from_the_page_checks_the_quota(member, tenant, tenant_member, simulated_gateway):
    workload = _launched(tenant, tenant_member)
    refused = member.post(f"/t/acme/workloads/{workload.pk}/scale/", {"max_replicas": "9"})
    assert refused.status_code == 400 and "are left" in refused.content.decode()
    done = member.post(f"/t/acme/workloads/{workload.pk}/scale/", {"max_replicas": "2"})
    assert done.status_code == 302
    workload.refresh_from_db()
    assert workload.spec["max_replicas"] == 2


@pytest.mark.django_db
def test_a_viewer_sees_workloads_but_cannot_launch_or_delete(
    login, tenant, tenant_member, tenant_viewer, gpu_pool, workload_quota, simulated_gateway
):
    workload_quota()
    workload = _launched(tenant, tenant_member)
    viewer = login(tenant_viewer)
    page = viewer.get(f"/t/acme/workloads/{workload.pk}/").content.decode()
    assert 'id="delete"' not in page and "You are a viewer" in page
    assert viewer.get("/t/acme/workloads/new/").status_code == 403
    assert viewer.post("/t/acme/workloads/new/inference/", FORM).status_code == 403
    assert viewer.post(f"/t/acme/workloads/{workload.pk}/delete/", {"confirm": "chat"}
                       ).status_code == 403
    workload.refresh_from_db()
    assert workload.status == WorkloadStatus.PENDING


@pytest.mark.django_db
def test_another_tenants_workload_is_not_found(login, tenant, tenant_member, other_tenant_member,
                                               gpu_pool, workload_quota, simulated_gateway):
    workload_quota()
    workload = _launched(tenant, tenant_member)
    outsider = login(other_tenant_member)
    for path in ("", "scale/", "delete/", "kubeconfig/", "power/"):
        url = f"/t/acme/workloads/{workload.pk}/{path}"
        assert outsider.get(url).status_code in (404, 405)
        assert outsider.post(url, {"confirm": "chat", "max_replicas": "1"}).status_code == 404
    # Under its own tenant's URL, too.
    assert outsider.get(f"/t/globex/workloads/{workload.pk}/").status_code == 404
    workload.refresh_from_db()
    assert workload.status == WorkloadStatus.PENDING and workload.spec["max_replicas"] == 1


@pytest.mark.django_db
def test_unknown_filters_are_said_and_ignored(member):
    page = member.get("/t/acme/workloads/?kind=bogus&status=nope").content.decode()
    assert "There is no workload kind" in page and "There is no state" in page


@pytest.mark.django_db
def test_the_list_makes_the_same_queries_at_any_size(login, tenant, tenant_member, gpu_pool,
                                                     simulated_gateway, workload_quota):
    workload_quota(**{"count:inference": 40, H100: 40, "cpu": 400, "memory-gib": 4000})
    member = login(tenant_member)

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert member.get("/t/acme/workloads/").status_code == 200
        return len(queries)

    for i in range(3):
        _launched(tenant, tenant_member, name=f"small-{i}")
    count()  # the first visit stores the current tenant in the session; later ones don't
    few = count()
    for i in range(20):
        _launched(tenant, tenant_member, name=f"more-{i}")
    assert count() == few


@pytest.mark.django_db(transaction=True)
def test_platform_admins_see_every_workload_in_django_admin_and_reconcile_it_now(
    login, tenant, tenant_member, platform_admin, gpu_pool, workload_quota, simulated_gateway
):
    from core.models import AuditEvent

    workload_quota()
    workload = _launched(tenant, tenant_member)
    client = login(platform_admin)
    listing = client.get("/admin/tenants/workload/")
    assert listing.status_code == 200 and "chat" in listing.content.decode()
    client.post("/admin/tenants/workload/", {"action": "reconcile_now",
                                             "_selected_action": [workload.pk]})
    assert AuditEvent.objects.filter(action="workload.reconcile_now", actor=platform_admin,
                                     object_id=str(workload.pk)).exists()
