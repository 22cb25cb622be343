"""The price per hour on every launch form and on the quota-request form, and the billing API
(spend and quote): hand-computed against rates the test sets, a class with no price said so
(never zero), half-filled or bad input answered with what to fill in (never a 500)."""

import calendar
import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from billing.calculations.money import month_start
from billing.models import BillingAccount, BudgetAlert
from billing.selectors.spend import quote_demand
from tests.factories import GPUFactory, NodeFactory, QuotaFactory

from .spend_data import H100, rate, usage

pytestmark = pytest.mark.django_db

MIG = "mig:nvidia-a100-80gb:1g.10gb"
SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJxzqTKk2PRhAenYTuIaHAg1JffULaOZPmUUr46ou8oH alice"
FORMS = {
    "vcluster": {"name": "dev", "kubernetes_version": "1.35", "cpu": "2", "memory_gib": "4"},
    "inference": {"name": "chat", "model_uri": "hf://meta-llama/Llama-3.1-8B-Instruct",
                  "gpu": H100, "gpus_per_replica": "1", "min_replicas": "1",
                  "max_replicas": "2", "cpu": "4", "memory_gib": "32"},
    "vm": {"name": "box", "image": "__custom__",
           "custom_image": "quay.io/containerdisks/ubuntu:24.04", "default_user": "ubuntu",
           "cpu": "4", "memory_gib": "16", "disk_gib": "40", "gpu": H100, "gpus": "1",
           "ssh_public_key": SSH_KEY, "running": "on"},
    "slurm": {"name": "train", "workers": "2", "gpu": H100, "gpus_per_worker": "1",
              "cpu_per_worker": "4", "memory_gib_per_worker": "16"},
}


def _storage_hourly() -> Decimal:
    now = timezone.now()
    return Decimal("0.10") / (24 * calendar.monthrange(now.year, now.month)[1])


def _shown(value: Decimal) -> str:
    """To the cent, or to 4 places where a cent would hide it."""
    whole, _, places = f"{value:,.4f}".partition(".")
    return f"{whole}.{places.rstrip('0').ljust(2, '0')}"


@pytest.fixture
def card(db):
    """H100s 2.50, vCPUs 0.04 and GiB of memory 0.005 an hour; storage 0.10 a GiB-month."""
    rate(H100, "2.50")
    rate("cpu", "0.04")
    rate("memory-gib", "0.005")
    rate("storage-gib", "0.10", unit="month")


@pytest.fixture
def member(login, tenant_member, tenant):
    """A member of a shared tenant with two 8-H100 nodes in its pool and quota to launch."""
    for _ in range(2):
        node = NodeFactory(reserved_for="")
        for index in range(8):
            GPUFactory(node=node, index=index, model="nvidia-h100-80gb")
    for resource, limit in {H100: 8, "cpu": 64, "memory-gib": 512, "storage-gib": 500,
                            "count:inference": 3, "count:vcluster": 2, "count:vm": 2,
                            "count:slurm": 1}.items():
        QuotaFactory(tenant=tenant, resource=resource, limit=limit)
    return login(tenant_member)


def _quote(client, data, **query) -> str:
    query = {"tenant": "acme"} | query
    url = "/billing/quote/?" + "&".join(f"{k}={v}" for k, v in query.items())
    response = client.post(url, data, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    return response.content.decode()


# --- the selector -------------------------------------------------------------------------------


def test_a_quote_is_each_class_at_its_hourly_price_summed_and_rounded_once(card):
    now = datetime(2026, 2, 10, 12, 30, tzinfo=UTC)  # February 2026: 672 hours

    quote = quote_demand(demand={H100: 2, "cpu": 8, "memory-gib": 64, "storage-gib": 672,
                                 "count:inference": 1}, at=now)

    # 5.00 + 0.32 + 0.32 + 672 GiB * 0.10 / 672 h = 0.10 → 5.74 an hour; * 720 = 4132.80
    assert quote.per_hour == Decimal("5.74")
    assert quote.per_month == Decimal("4132.80")
    assert quote.complete and quote.not_billed == ("Inference endpoints",)
    lines = {line.resource: line for line in quote.lines}
    assert lines["storage-gib"].per_hour == Decimal("0.1000")
    assert lines[H100].unit_price_per_hour == Decimal("2.500000")


def test_a_class_without_a_price_or_unknown_is_said_so_never_priced_at_zero(card):
    quote = quote_demand(demand={H100: 1, MIG: 2, "gpu:nvidia-b900": 1},
                         at=timezone.now())

    statuses = {line.resource: line.status for line in quote.lines}
    assert statuses == {H100: "priced", MIG: "no_rate", "gpu:nvidia-b900": "unknown"}
    assert not quote.complete and quote.per_hour == Decimal("2.50")
    assert all(line.per_hour is None for line in quote.missing)


def test_the_quote_uses_the_rate_in_force_at_that_hour(db):
    change = datetime(2026, 5, 1, tzinfo=UTC)
    rate(H100, "2.00", end=change)
    rate(H100, "3.00", start=change)

    before = quote_demand(demand={H100: 1}, at=change - timedelta(minutes=1))
    after = quote_demand(demand={H100: 1}, at=change)

    assert (before.per_hour, after.per_hour) == (Decimal("2.00"), Decimal("3.00"))


# --- the price partial on each launch form ------------------------------------------------------


@pytest.mark.parametrize("kind", ["vcluster", "inference", "vm", "slurm"])
def test_every_launch_form_asks_billing_for_its_price(member, kind):
    page = member.get(f"/t/acme/workloads/new/{kind}/").content.decode()

    assert 'id="price-quote"' in page
    assert f'hx-post="/billing/quote/?tenant=acme&amp;kind={kind}"' in page
    assert 'hx-include="#launch-form"' in page


def test_the_vcluster_price_is_its_control_plane_and_volume(member, card):
    page = _quote(member, FORMS["vcluster"], kind="vcluster")

    # 2 vCPUs 0.08 + 4 GiB 0.02 + 5 GiB of storage at 0.10 a GiB-month over this month's hours
    # (each line to 4 places as shown, the total their sum)
    expected = Decimal("0.10") + (5 * _storage_hourly()).quantize(Decimal("0.0001"))
    assert f"EUR {_shown(expected)}</strong> per hour" in page
    assert 'data-resource="storage-gib" data-status="priced"' in page
    assert "Counted in your quota, not billed: vClusters" in page


def test_the_inference_price_holds_the_maximum_replicas(member, card):
    page = _quote(member, FORMS["inference"], kind="inference")

    # 2 replicas: 2 H100s 5.00 + 8 vCPUs 0.32 + 64 GiB 0.32 = 5.64 an hour, 4,060.80 a month
    assert "EUR 5.64</strong> per hour" in page
    assert "4,060.80 per 30-day month" in page
    assert f'data-resource="{H100}" data-status="priced"' in page


def test_the_vm_price_is_its_gpu_vcpus_memory_and_disk(member, card):
    page = _quote(member, FORMS["vm"], kind="vm")

    # 2.50 + 0.16 + 0.08 + 40 GiB of disk
    expected = Decimal("2.74") + (40 * _storage_hourly()).quantize(Decimal("0.0001"))
    assert f"EUR {_shown(expected)}</strong> per hour" in page


def test_a_stopped_vm_is_priced_for_its_disk_only(member, card):
    page = _quote(member, FORMS["vm"] | {"running": ""}, kind="vm")

    assert f'data-resource="{H100}"' not in page
    assert 'data-resource="storage-gib" data-status="priced"' in page


def test_the_slurm_price_counts_every_worker(member, card):
    page = _quote(member, FORMS["slurm"], kind="slurm")

    assert "2 \u00d7 NVIDIA H100" in page
    assert f'data-resource="{H100}" data-status="priced"' in page
    assert "5.00/h" in page


def test_a_half_filled_form_says_what_to_fill_in_never_a_500(member, card):
    empty = _quote(member, FORMS["inference"] | {"model_uri": ""}, kind="inference")
    wrong = _quote(member, FORMS["inference"] | {"max_replicas": "many"}, kind="inference")

    assert "Fill in model uri to see the price" in empty
    assert "Fill in max replicas to see the price" in wrong
    assert "per hour" not in empty + wrong


def test_the_name_does_not_change_the_price(member, card):
    assert "EUR 5.64</strong>" in _quote(member, FORMS["inference"] | {"name": ""},
                                         kind="inference")


def test_an_unknown_kind_or_nothing_at_all_says_what_to_fill_in(member):
    assert "Fill in the kind of workload" in _quote(member, {}, kind="rocket")
    assert "Fill in a resource and an amount" in _quote(member, {}, form="quota")


def test_a_class_with_no_rate_says_no_price_set(member):
    rate("cpu", "0.04")  # nothing else has a price

    page = _quote(member, FORMS["inference"], kind="inference")

    assert f'data-resource="{H100}" data-status="no_rate"' in page
    assert "no price set" in page and "ask the platform team" in page
    assert "without what has no price" in page


# --- the quota-request form -------------------------------------------------------------------


def test_the_quota_form_asks_billing_for_the_price_of_the_increase(member):
    page = member.get("/t/acme/quota/requests/new/").content.decode()

    assert 'hx-post="/billing/quote/?tenant=acme&amp;form=quota"' in page
    assert 'hx-include="#request-form"' in page


def test_the_quota_price_is_the_increase_asked_for(member, card):
    data = {"lines-TOTAL_FORMS": "3", "lines-0-resource": H100, "lines-0-amount": "4",
            "lines-1-resource": MIG, "lines-1-amount": "2",
            "lines-2-resource": "gpu:nvidia-b900", "lines-2-amount": "1"}

    page = _quote(member, data, form="quota")

    assert "EUR 10.00</strong> per hour" in page
    assert f'data-resource="{MIG}" data-status="no_rate"' in page
    assert "gpu:nvidia-b900" not in page  # not a resource class: not a line of the request


# --- the API ------------------------------------------------------------------------------------


def test_the_spend_api_answers_the_month_with_forecast_budget_and_lines(api_client, tenant_viewer,
                                                                       tenant, card):
    rate(MIG, "1.00")
    usage(tenant, H100, month_start(timezone.now()), 7200)
    BillingAccount.objects.create(tenant=tenant, monthly_budget=Decimal("6.00"))
    api_client.force_login(tenant_viewer)

    body = api_client.get("/api/v1/billing/spend/?tenant=acme").json()

    assert body["spent"] == "5.00" and body["budget"] == "6.00"
    assert body["budget_state"] == "warning" and body["budget_percent"] == "83.3"
    assert body["lines"] == [{"resource": H100, "label": "NVIDIA H100 80GB HBM3 GPUs",
                              "hours": "2.000000", "amount": "5.00"}]
    assert Decimal(body["forecast"]) >= Decimal("5.00")
    assert body["days"][0]["spent"] is not None


def test_the_spend_api_makes_the_same_queries_at_two_sizes(api_client, tenant_member, tenant,
                                                           card):
    api_client.force_login(tenant_member)
    start = month_start(timezone.now())

    def queries(hours: range) -> int:
        for hour in hours:
            for resource in (H100, "cpu", "memory-gib", MIG):
                usage(tenant, resource, start + timedelta(hours=hour), 3600)
        with CaptureQueriesContext(connection) as captured:
            assert api_client.get("/api/v1/billing/spend/?tenant=acme").status_code == 200
        return len(captured)

    small = queries(range(2))
    BudgetAlert.objects.create(tenant=tenant, month=start.date(), threshold=80,
                               spent=Decimal("1"), budget=Decimal("1"))
    assert queries(range(2, 30)) == small


def test_the_spend_api_without_a_budget_says_null(api_client, tenant_member, tenant):
    api_client.force_login(tenant_member)

    body = api_client.get("/api/v1/billing/spend/?tenant=acme").json()

    assert body["budget"] is None and body["budget_state"] == "none" and body["lines"] == []
    assert body["problem"] == ""


def test_the_spend_api_needs_a_tenant_and_hides_others(api_client, other_tenant_member, tenant):
    api_client.force_login(other_tenant_member)

    missing = api_client.get("/api/v1/billing/spend/")
    assert missing.status_code == 400 and "tenant" in missing.json()["error"]["fields"]
    assert api_client.get("/api/v1/billing/spend/?tenant=acme").status_code == 404


def test_the_quote_api_prices_a_launch(api_client, tenant_member, tenant, card, member):
    api_client.force_login(tenant_member)
    spec = {"model_uri": "hf://meta-llama/Llama-3.1-8B-Instruct", "gpu": H100,
            "gpus_per_replica": 1, "min_replicas": 1, "max_replicas": 2}

    response = api_client.post("/api/v1/billing/quote/",
                               {"tenant": "acme", "kind": "inference", "spec": spec},
                               format="json")

    assert response.status_code == 200, response.content
    body = response.json()
    # Defaults: 4 vCPUs and 32 GiB a replica → 5.00 + 0.32 + 0.32
    assert body["per_hour"] == "5.64" and body["complete"] is True
    assert body["not_billed"] == ["Inference endpoints"]


def test_the_quote_api_prices_resources_and_names_the_unpriced(api_client, tenant_member, tenant,
                                                               card):
    api_client.force_login(tenant_member)

    body = api_client.post("/api/v1/billing/quote/",
                           {"tenant": "acme", "resources": [{"resource": H100, "amount": 4},
                                                            {"resource": MIG, "amount": 1}]},
                           format="json").json()

    assert body["per_hour"] == "10.00" and body["per_month"] == "7200.00"
    assert body["complete"] is False
    assert [line["status"] for line in body["lines"]] == ["priced", "no_rate"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"tenant": "acme"}, "non_field_errors"),
        ({"tenant": "acme", "kind": "vm", "resources": []}, "resources"),
        ({"tenant": "acme", "resources": [{"resource": "gpu:nvidia-b900", "amount": 1}]},
         "resources"),
        ({"tenant": "acme", "resources": [{"resource": "cpu", "amount": 0}]}, "resources"),
        ({"tenant": "acme", "resources": [{"resource": "cpu", "amount": 1},
                                          {"resource": "cpu", "amount": 2}]}, "resources"),
        ({"tenant": "acme", "kind": "rocket"}, "kind"),
        ({"tenant": "acme", "kind": "inference", "spec": {"max_replicas": "many"}},
         "spec.max_replicas"),
        ({"tenant": "acme", "kind": "vcluster", "spec": {"cpu": "2\x00"}}, "spec.cpu"),
        ({"kind": "vcluster"}, "tenant"),
    ],
)
def test_bad_quote_input_is_a_400_with_field_errors(api_client, tenant_member, tenant, body,
                                                    field):
    api_client.force_login(tenant_member)

    response = api_client.post("/api/v1/billing/quote/", body, format="json")

    assert response.status_code == 400, response.content
    assert any(key.startswith(field) for key in response.json()["error"]["fields"]), (
        response.json()
    )


def test_the_quote_api_hides_another_tenant(api_client, other_tenant_member, tenant):
    api_client.force_login(other_tenant_member)

    response = api_client.post("/api/v1/billing/quote/",
                               {"tenant": "acme", "resources": [{"resource": "cpu",
                                                                 "amount": 1}]},
                               format="json")

    assert response.status_code == 404


def test_the_api_is_in_the_openapi_schema_with_examples():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    quote = schema["paths"]["/api/v1/billing/quote/"]["post"]
    spend = schema["paths"]["/api/v1/billing/spend/"]["get"]

    assert set(quote["requestBody"]["content"]["application/json"]["examples"]) >= {
        "InferenceEndpoint", "VCluster", "Resources"}
    assert spend["parameters"][0]["name"] == "tenant" and spend["parameters"][0]["required"]
    assert "400" in quote["responses"] and "404" in spend["responses"]


def test_the_lines_shown_add_up_to_the_total_shown(member, card):
    """Each line is rounded once, as shown; the total is their sum, never rounded apart."""
    page = _quote(member, FORMS["vm"], kind="vm")

    total = re.search(r"EUR ([\d,.]+)</strong> per hour", page).group(1)
    lines = re.findall(r"<span>([\d,.]+)/h</span>", page)
    assert len(lines) == 4  # GPU, vCPUs, memory, disk
    assert sum(Decimal(x.replace(",", "")) for x in lines) == Decimal(total.replace(",", ""))
