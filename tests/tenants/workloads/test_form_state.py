"""Forms keep their state and speak plainly: the launch form's quota preview survives a
refused submit and turns Launch off over quota (linking to a prefilled quota request); the
quota request form prefills, keeps its preview, warns of a second ask for the same class and
keeps the price the tenant was quoted, for the requester and the reviewer."""

import re
from decimal import Decimal

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from billing.models import Rate
from tenants.models import QuotaRequest
from tenants.workloads.models import Workload
from tests.billing.spend_data import rate

from .conftest import H100, INFERENCE_SPEC

FORM = {
    "name": "chat", "model_uri": "hf://meta-llama/Llama-3.1-8B-Instruct", "gpu": H100,
    "gpus_per_replica": "1", "min_replicas": "1", "max_replicas": "2", "cpu": "4",
    "memory_gib": "32",
}
LAUNCH = "/t/acme/workloads/new/inference/"


@pytest.fixture
def member(login, tenant_member, gpu_pool, workload_quota):
    workload_quota()
    return login(tenant_member)


def _launch_button(html: str) -> str:
    return re.search(r'<button[^>]*id="launch-submit"[^>]*>', html).group(0)


@pytest.mark.django_db
def test_a_refused_launch_shows_the_preview_of_what_was_submitted(member):
    # A bad name refuses the launch; the preview still shows what the rest would take.
    response = member.post(LAUNCH, {**FORM, "name": "Not A Name!", "max_replicas": "3"})
    html = response.content.decode()

    assert response.status_code == 200 and not Workload.objects.exists()
    assert 'data-error-for="name"' in html
    assert f'data-resource="{H100}" data-fits="true"' in html
    assert "<strong>3</strong> of 4" in html  # from the submitted 3 replicas, not the default
    assert "disabled" not in _launch_button(html)


@pytest.mark.django_db
def test_over_quota_the_preview_stays_launch_is_off_and_links_to_a_prefilled_request(member):
    response = member.post(LAUNCH, {**FORM, "max_replicas": "9"})
    html = response.content.decode()

    assert 'id="form-errors"' in html  # the service's refusal, in its words
    assert f'data-resource="{H100}" data-fits="false"' in html
    assert "<strong>9</strong> of 4" in html
    assert "disabled" in _launch_button(html)
    link = re.search(r'<a href="([^"]+)" id="request-more-quota">Request more quota</a>', html)
    assert link
    url = link.group(1).replace("&amp;", "&")
    assert url.startswith("/t/acme/quota/requests/new/?")
    assert f"resource={H100.replace(':', '%3A')}&amount=5" in url  # 9 asked, 4 left: 5 short

    form = member.get(url).content.decode()
    assert re.search(rf'<option value="{H100}" selected>', form)
    assert 'name="lines-0-amount" id="id_lines-0-amount" value="5"' in form
    assert f'<tr data-resource="{H100}">' in form  # the preview of the prefilled ask


@pytest.mark.django_db
def test_the_live_check_turns_launch_off_over_quota_and_on_again(member):
    over = member.post(LAUNCH + "check/", {**FORM, "max_replicas": "9"},
                       HTTP_HX_REQUEST="true").content.decode()
    assert "disabled" in _launch_button(over) and 'id="over-quota"' in over
    fits = member.post(LAUNCH + "check/", FORM, HTTP_HX_REQUEST="true").content.decode()
    assert "disabled" not in _launch_button(fits) and 'id="over-quota"' not in fits


@pytest.mark.django_db
def test_a_launch_says_it_is_being_provisioned_not_created(member, simulated_gateway):
    """Not "queued" either: that is Kueue's word, for a workload waiting for quota."""
    response = member.post(LAUNCH, FORM)
    (message,) = [str(m) for m in get_messages(response.wsgi_request)]
    assert "being provisioned" in message and "queued" not in message
    assert Workload.objects.get().status == "pending"


# --- the quota request form ----------------------------------------------------------------


REQUEST = "/t/acme/quota/requests/new/"


def _ask(resource=H100, amount="4", justification="More endpoints for the launch."):
    return {"lines-TOTAL_FORMS": "1", "lines-INITIAL_FORMS": "0", "lines-MIN_NUM_FORMS": "1",
            "lines-MAX_NUM_FORMS": "10", "lines-0-resource": resource,
            "lines-0-amount": amount, "justification": justification, "ends_on": ""}


@pytest.mark.django_db
def test_a_refused_quota_request_keeps_its_preview(member):
    response = member.post(REQUEST, _ask(justification=""))
    html = response.content.decode()

    assert not QuotaRequest.objects.exists()
    assert "is-invalid" in html  # the missing justification
    assert f'<tr data-resource="{H100}">' in html and "+4" in html


@pytest.mark.django_db
def test_a_second_ask_for_the_same_class_while_one_is_open_warns(member):
    member.post(REQUEST, _ask())
    first = QuotaRequest.objects.get()

    # On the form, as the person types (the preview partial)...
    preview = member.post("/t/acme/quota/requests/preview/", _ask(amount="2"),
                          HTTP_HX_REQUEST="true").content.decode()
    assert 'id="pending-asks"' in preview and f"Request #{first.pk}" in preview
    other = member.post("/t/acme/quota/requests/preview/", _ask(resource="cpu"),
                        HTTP_HX_REQUEST="true").content.decode()
    assert 'id="pending-asks"' not in other

    # ...and once sent.
    response = member.post(REQUEST, _ask(amount="2"))
    warnings = [str(m) for m in get_messages(response.wsgi_request) if m.level_tag == "warning"]
    assert len(warnings) == 1 and f"request #{first.pk}" in warnings[0]
    assert QuotaRequest.objects.count() == 2


@pytest.mark.django_db
def test_the_price_quoted_is_kept_on_the_request_and_shown_to_requester_and_reviewer(
    member, login, platform_admin
):
    rate(H100, "2.50")
    rate("cpu", "0.0345")
    ask = _ask() | {"lines-TOTAL_FORMS": "2", "lines-1-resource": "cpu", "lines-1-amount": "3"}
    member.post(REQUEST, ask)
    request = QuotaRequest.objects.get()
    # 4 x 2.50 + 3 x 0.0345 = 10.1035 an hour, each line as the price card showed it
    assert str(request.quoted_per_hour) == "10.1035" and request.quoted_currency

    # A changed rate does not change what was quoted.
    Rate.objects.filter(resource=H100).update(unit_price=Decimal("9.99"))
    detail = member.get(f"/t/acme/quota/requests/{request.pk}/").content.decode()
    assert re.search(r'id="quoted-price".*?10\.1035</strong> per hour', detail, re.S)
    review = login(platform_admin).get(
        reverse("admin:tenants_quotarequest_change", args=[request.pk])
    ).content.decode()
    assert re.search(r'id="quoted-price".*?10\.1035</strong> per hour', review, re.S)


@pytest.mark.django_db
def test_the_clusters_words_are_shown_with_peoples_names_for_its_resources(
    member, tenant, tenant_member, kube_gateway, kube_emulator
):
    from tenants.workloads import services

    workload = services.workload_launch(tenant=tenant, actor=tenant_member, kind="inference",
                                        name="chat", spec={**INFERENCE_SPEC, "max_replicas": 1})
    services.workload_reconcile(workload_id=workload.pk)
    words = ("0/4 nodes are available: 4 Insufficient nvidia.com/gpu. Please check the "
             "`nvidia.com/gpu` request.")
    kube_emulator.patch_object(
        "serving.kserve.io/v1beta1", "InferenceService", "chat", tenant.namespace,
        patch={"status": {"observedGeneration": 1, "conditions": [
            {"type": "PredictorReady", "status": "False", "reason": "Unschedulable",
             "message": words},
            {"type": "Ready", "status": "False", "reason": "Unschedulable", "message": words},
        ]}},
    )
    services.workload_observe(workload_id=workload.pk)

    page = member.get(f"/t/acme/workloads/{workload.pk}/").content.decode()
    assert "4 Insufficient GPUs. Please check the \u2018GPUs\u2019 request." in page
    assert "nvidia.com/gpu" not in page and "`" not in page


@pytest.mark.django_db
def test_a_request_sent_through_the_api_keeps_its_quoted_price_too(tenant, tenant_member,
                                                                   gpu_pool, workload_quota):
    from rest_framework.test import APIClient

    rate(H100, "2.50")
    client = APIClient()
    client.force_authenticate(tenant_member)
    response = client.post("/api/v1/quota-requests/", {
        "tenant": "acme", "lines": [{"resource": H100, "amount": 2}],
        "justification": "Two more for the evaluation runs.",
    }, format="json")

    assert response.status_code == 201, response.content
    request = QuotaRequest.objects.get()
    assert str(request.quoted_per_hour) == "5.0000" and str(request.quoted_per_month) == "3600.00"
