"""Issue 29, item 3: downtime credit can never exceed the outage. Measured GPU time read from a
real Prometheus is stored no higher than the host's GPUs in the inventory allow; a downtime
credit is no more than the host's GPUs x the outage, even from measured records stored before
the cap; each cap is a metering flag an admin sees; the demo's generator stays within its
hosts."""

from datetime import timedelta
from decimal import Decimal
from fractions import Fraction
from io import StringIO

import pytest
from django.core.management import call_command
from django.db.models import Count, Sum

from billing.calculations.capacity import cap_to_capacity, gpu_share
from billing.models import Invoice, InvoiceLine, MeteringFlag, Rate, UsageRecord
from billing.services import invoicing, metering
from inventory.models import GPU, HealthEvent, Severity
from tests.factories import GPUFactory, NodeFactory

from .test_metering_measured import (  # noqa: F401 (fixtures)
    H100,
    HOUR,
    MEASURED,
    allocations,
    measured,
    prometheus_url,
)
from .timeline import utc

pytestmark = pytest.mark.django_db


def host_with_gpus(hostname: str, count: int, model: str = "nvidia-h100-80gb"):
    node = NodeFactory(hostname=hostname)
    for index in range(count):
        GPUFactory(node=node, index=index, model=model)
    return node


def test_measured_gpu_time_above_the_hosts_gpus_is_capped_and_flagged(
    prometheus_url, allocations, login, platform_admin  # noqa: F811
):
    # DCGM shows acme on two GPUs of gpu-a-001 (1.5 GPU-hours); the inventory lists one.
    host_with_gpus("gpu-a-001", 1)
    host_with_gpus("gpu-b-002", 2, model="nvidia-a100-80gb")  # a MIG slice and an L40S: room

    window = metering.usage_meter_window(source=MEASURED, hour=HOUR)

    assert window.status == "done"
    stored = measured()
    assert stored[("acme", "gpu-a-001", H100, HOUR)] == (3600, 2160)  # 5 400 → 3 600, busy alike
    assert stored[("acme", "gpu-b-002", "mig:nvidia-a100-80gb:1g.10gb", HOUR)] == (3600, 720)
    flag = MeteringFlag.objects.get()
    assert (flag.kind, flag.hostname, flag.hour, flag.gpus) == (
        "measured_capped", "gpu-a-001", HOUR, 1)
    assert (flag.capacity_seconds, flag.reported_seconds, flag.kept_seconds) == (3600, 5400, 3600)

    # Finance sees it where metering's health is shown.
    explorer = login(platform_admin).get(
        "/billing/usage/", {"start": "2026-03-03", "end": "2026-03-03"})
    body = explorer.content.decode()
    assert explorer.status_code == 200 and 'id="capped-hosts"' in body
    row = body.split('data-capped="gpu-a-001-2026-03-03T10"')[1].split("</tr>")[0]
    assert "5,400 s" in row and "3,600 s" in row

    # Metered again with the inventory right: the flag goes with the cap.
    GPUFactory(node=flag_node("gpu-a-001"), index=1, model="nvidia-h100-80gb")
    metering.usage_meter_window(source=MEASURED, hour=HOUR)
    assert measured()[("acme", "gpu-a-001", H100, HOUR)] == (5400, 3240)
    assert not MeteringFlag.objects.exists()


def flag_node(hostname: str):
    return GPU.objects.filter(node__hostname=hostname).first().node


def test_the_flag_is_shown_in_the_metering_admin(login, platform_admin, tenant):
    host_with_gpus("gpu-z-009", 2)
    MeteringFlag.objects.create(kind="measured_capped", hour=HOUR, hostname="gpu-z-009", gpus=2,
                                capacity_seconds=7200, reported_seconds=28800, kept_seconds=7200)

    page = login(platform_admin).get("/admin/billing/meteringflag/").content.decode()

    assert "gpu-z-009" in page and "28800" in page and "Measured usage above the host" in page


def test_a_downtime_credit_is_never_more_than_the_hosts_gpus_times_the_outage(
    login, finance, platform_admin, tenant
):
    """A measured record stored before the cap (8 GPU-hours on a host of 2 GPUs) and a 30-minute
    outage: the credit is 2 GPUs x 0.5 h = 1 GPU-hour, not 4."""
    host = host_with_gpus("gpu-c-003", 2).hostname
    Rate.objects.create(resource=H100, unit_price=Decimal("2.00"), valid_from=utc(2026, 1, 1))
    hour = utc(2026, 2, 3, 10)
    UsageRecord.objects.create(tenant=tenant, source="allocated", resource=H100, hour=hour,
                               unit_seconds=8 * 3600)
    UsageRecord.objects.create(tenant=tenant, source="measured", resource=H100, hour=hour,
                               hostname=host, unit_seconds=8 * 3600, busy_seconds=8 * 3600)
    HealthEvent.objects.create(node=flag_node(host), kind=HealthEvent.Kind.XID, subject="gpu:0",
                               severity=Severity.CRITICAL, detail="XID 79",
                               opened_at=hour + timedelta(minutes=15),
                               resolved_at=hour + timedelta(minutes=45))

    draft = invoicing.invoice_compute(tenant=tenant, month=hour.date(), actor=finance)

    credit = InvoiceLine.objects.get(invoice=draft, kind="credit")
    # A credit line counts down: 2 GPUs x 30 minutes, at 2.00 an hour.
    assert credit.unit_seconds == -2 * 1800 and credit.amount == Decimal("-2.00")
    assert Invoice.objects.get(pk=draft.pk).total < Decimal("16.00")
    page = login(finance).get(f"/billing/invoices/{draft.pk}/").content.decode()
    assert 'data-line="credit"' in page and "XID 79" in page
    flag = MeteringFlag.objects.get(kind="credit_capped")
    assert (flag.hostname, flag.tenant, flag.hour, flag.gpus) == (host, tenant, hour, 2)
    assert (flag.capacity_seconds, flag.reported_seconds, flag.kept_seconds) == (
        3600, 4 * 3600, 3600)
    admin = login(platform_admin).get("/admin/billing/meteringflag/?kind=credit_capped")
    assert host in admin.content.decode()

    # Recomputed: still one flag, not two.
    invoicing.invoice_compute(tenant=tenant, month=hour.date(), actor=finance)
    assert MeteringFlag.objects.filter(kind="credit_capped").count() == 1


def test_the_cap_weighs_mig_instances_by_their_slices():
    assert gpu_share("gpu:nvidia-h100-80gb") == 1
    assert gpu_share("mig:nvidia-a100-80gb:3g.40gb") == Fraction(3, 7)
    seconds = {("h", "mig:nvidia-a100-80gb:1g.10gb"): 7 * 3600, ("h", "gpu:x"): 3600}
    kept, capped = cap_to_capacity(
        seconds, host_hour=lambda key: (key[0], HOUR), resource=lambda key: key[1],
        gpus={"h": 2}, capacity=lambda host, hour: 2 * 3600,
    )
    assert kept == seconds and capped == []  # 7 instances of 1/7 and a GPU: 2 GPUs, no more
    kept, capped = cap_to_capacity(
        seconds, host_hour=lambda key: (key[0], HOUR), resource=lambda key: key[1],
        gpus={"h": 1}, capacity=lambda host, hour: 3600,
    )
    assert sum(gpu_share(k[1]) * v for k, v in kept.items()) <= 3600
    assert capped[0].reported_seconds == 7200 and capped[0].kept_seconds <= 3600


def test_the_demo_measures_no_more_gpus_than_its_hosts_have(settings):
    settings.PROMETHEUS_URL = ""
    call_command("load_demo", stdout=StringIO())

    gpus = {
        row["node__hostname"]: row["n"]
        for row in GPU.objects.values("node__hostname").annotate(n=Count("id")).order_by()
    }
    per_host_hour: dict[tuple, Fraction] = {}
    for host, hour, resource, seconds in UsageRecord.objects.filter(source="measured") \
            .values_list("hostname", "hour", "resource", "unit_seconds"):
        per_host_hour[host, hour] = per_host_hour.get((host, hour), 0) + gpu_share(
            resource) * seconds
    assert per_host_hour, "the demo measures usage"
    assert all(host in gpus for host, _ in per_host_hour)
    over = {key: used for key, used in per_host_hour.items() if used > gpus[key[0]] * 3600}
    assert over == {}
    assert not MeteringFlag.objects.exists()  # nothing had to be capped
    # Helix's downtime credit: never more than the failed host's GPUs x its outage.
    event = HealthEvent.objects.get(severity="critical", node__reserved_for="helix")
    outage = (event.resolved_at - event.opened_at).total_seconds()
    credited = -InvoiceLine.objects.filter(
        kind="credit", invoice__tenant__slug="helix"
    ).aggregate(s=Sum("unit_seconds"))["s"]
    assert 0 < credited <= gpus[event.node.hostname] * outage
