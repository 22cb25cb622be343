"""Idle GPUs given back, from a real Prometheus holding DCGM series (promtool-backfilled) for the
pods of five workloads of two tenants: what the sweep finds idle, whom it warns, what it gives
back after the grace period, what "keep running" spares, and the undo."""

import threading
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connections
from django.utils import timezone

from billing.models import Rate
from core.models import AuditEvent, OutboxEmail
from core.prometheus import PrometheusClient
from core.queueing import DEFERRED_NOTICE
from tenants.workloads import services
from tenants.workloads.models import IdleEpisode, IdleMode, IdlePolicy, Workload, WorkloadEvent
from tenants.workloads.services import idle
from tests.factories import MembershipFactory, QuotaFactory
from tests.support.fixtures_celery import CLOSED_PORT_BROKER, celery_broker
from tests.support.fixtures_prometheus import Series

from .conftest import H100, INFERENCE_SPEC, SLURM_SPEC, VM_SPEC, ssh_public_key

pytestmark = pytest.mark.django_db
NOW = timezone.now().replace(second=0, microsecond=0)
E = IdleEpisode.State


def _samples(value: float, *, hours: float = 3) -> list[tuple[float, float]]:
    end = int(NOW.timestamp())
    return [(float(t), value) for t in range(end - int(hours * 3600), end + 1, 30)]


def _gpu(namespace: str, pod: str, index: int, value: float) -> tuple[dict, list]:
    labels = {"gpu": str(index), "UUID": f"GPU-{pod}-{index}", "Hostname": "gpu-a-001",
              "modelName": "NVIDIA H100 80GB HBM3", "namespace": namespace, "pod": pod,
              "container": "main", "DCGM_FI_DRIVER_VERSION": "570.124.06"}
    return labels, _samples(value)


def idle_series() -> Series:
    acme, globex = "tenant-acme", "tenant-globex"
    return {"DCGM_FI_DEV_GPU_UTIL": [
        # acme's endpoint: three replicas, one GPU each, all but asleep
        *(_gpu(acme, f"chat-predictor-5d8f9c7b6-{s}", 0, 1) for s in ("aaaaa", "bbbbb", "ccccc")),
        # acme's busy endpoint
        _gpu(acme, "busy-predictor-7f6d5c4b3-ddddd", 0, 63),
        # acme's VM, idle; and the one its people keep running
        _gpu(acme, "virt-launcher-desk-x7k2p", 0, 0),
        _gpu(acme, "virt-launcher-kept-q9w8e", 0, 0),
        # acme's Slurm cluster: one worker computes, two idle
        _gpu(acme, "hpc-workers-0", 0, 92), _gpu(acme, "hpc-workers-1", 0, 2),
        _gpu(acme, "hpc-workers-2", 0, 0),
        # globex's endpoint of the same name, idle: its tenant's policy is off
        _gpu(globex, "chat-predictor-6a5b4c3d2-eeeee", 0, 2),
    ]}


@pytest.fixture
def prometheus(prometheus_server, settings):
    server = prometheus_server(idle_series())
    settings.PROMETHEUS_URL = server.url
    return server


def _launch(tenant, actor, kind, name, spec, *, ready_since=NOW - timedelta(hours=3)):
    workload = services.workload_launch(tenant=tenant, actor=actor, kind=kind, name=name,
                                        spec=spec)
    Workload.objects.filter(pk=workload.pk).update(status=Workload.Status.READY,
                                                   created_at=ready_since)
    WorkloadEvent.objects.filter(workload=workload).update(created_at=ready_since)
    workload.refresh_from_db()
    return workload


@pytest.fixture
def fleet(tenant, other_tenant, tenant_owner, tenant_member, gpu_pool, prometheus):
    for owner in (tenant, other_tenant):
        for resource, limit in {H100: 12, "cpu": 256, "memory-gib": 2048, "storage-gib": 500,
                                "count:inference": 3, "count:vm": 2, "count:slurm": 1}.items():
            QuotaFactory(tenant=owner, resource=resource, limit=limit)
    Rate.objects.create(resource=H100, unit_price=Decimal("2.50"),
                        valid_from=NOW.replace(minute=0) - timedelta(days=30))
    IdlePolicy.objects.create(tenant=tenant, mode=IdleMode.ACT, threshold_percent=5,
                              window_minutes=60, grace_minutes=30)
    vm = {**VM_SPEC, "ssh_public_key": ssh_public_key()}
    made = {
        "chat": _launch(tenant, tenant_member, "inference", "chat",
                        {**INFERENCE_SPEC, "max_replicas": 3}),
        "busy": _launch(tenant, tenant_member, "inference", "busy", INFERENCE_SPEC),
        "desk": _launch(tenant, tenant_member, "vm", "desk", vm),
        "kept": _launch(tenant, tenant_member, "vm", "kept", vm),
        "hpc": _launch(tenant, tenant_member, "slurm", "hpc", {**SLURM_SPEC, "workers": 3}),
        "globex": _launch(other_tenant, MembershipFactory(tenant=other_tenant).user,
                          "inference", "chat", INFERENCE_SPEC),
    }
    services.workload_keep_running(workload_id=made["kept"].pk, actor=tenant_member,
                                   reason="Interactive debugging session, back after lunch")
    return made


def _episodes() -> dict[str, IdleEpisode]:
    return {f"{e.workload.tenant.slug}/{e.workload.name}": e
            for e in IdleEpisode.objects.select_related("workload__tenant")}


def test_the_sweep_finds_each_workloads_idle_gpus_and_warns_where_the_policy_says(
    fleet, tenant, tenant_owner, tenant_member
):
    result = idle.workloads_idle_sweep(now=NOW)

    assert result.error == ""
    episodes = _episodes()
    # Every idle workload has its episode, the busy endpoint none; globex's policy is off (the
    # fleet default), and "kept" is kept running: recorded, not warned.
    assert set(episodes) == {"acme/chat", "acme/desk", "acme/kept", "acme/hpc", "globex/chat"}
    assert {name: e.state for name, e in episodes.items()} == {
        "acme/chat": E.WARNED, "acme/desk": E.WARNED, "acme/hpc": E.WARNED,
        "acme/kept": E.IDLE, "globex/chat": E.IDLE,
    }
    chat = episodes["acme/chat"]
    assert (chat.gpus, chat.utilization) == (3, Decimal("1.00"))
    assert chat.started_at == NOW - timedelta(hours=1)
    assert chat.act_after == NOW + timedelta(minutes=30)
    # Three H100s at 2.50 an hour for an hour: 3 GPU-hours, 7.50.
    assert (chat.gpu_hours, chat.cost) == (Decimal("3.0"), Decimal("7.50"))
    # The Slurm cluster's two idle workers, not the one that computes.
    assert episodes["acme/hpc"].gpus == 2
    # The last hour's utilization of each, for the lists.
    means = dict(Workload.objects.filter(tenant=tenant).values_list("name", "gpu_utilization"))
    assert means == {"chat": Decimal("1.00"), "busy": Decimal("63.00"), "desk": Decimal("0.00"),
                     "kept": Decimal("0.00"), "hpc": Decimal("31.33")}
    # One mail per warned workload, to who launched it and the tenant's owners.
    mails = list(OutboxEmail.objects.filter(topic="workload.idle_warned"))
    warned = sorted(m.subject for m in mails)
    assert warned == [f"{kind} {name} of Acme Labs has idle GPUs" for kind, name in
                      (("Inference endpoint", "chat"), ("Slurm cluster", "hpc"), ("VM", "desk"))]
    assert all(set(m.to) == {tenant_owner.email, tenant_member.email} for m in mails)
    body = next(m.body for m in mails if "chat" in m.subject)
    assert "3 idle GPUs at 1.00% utilization: 3.0 GPU-hours" in body and "7.50" in body
    assert "scaled to its minimum: at most 1 replica (was 3)" in body
    # The warning is on the workload's timeline, and audited.
    event = WorkloadEvent.objects.get(workload=fleet["chat"], kind=WorkloadEvent.Kind.IDLE)
    assert event.reason == "IdleWarning" and "keep running" in event.message
    assert AuditEvent.objects.filter(action="workload.idle_warned").count() == 3


def test_after_the_grace_period_the_policy_gives_the_gpus_back_and_one_click_undoes_it(
    fleet, tenant_member
):
    idle.workloads_idle_sweep(now=NOW)
    assert idle.workloads_idle_sweep(now=NOW + timedelta(minutes=10)).acted == 0  # grace

    result = idle.workloads_idle_sweep(now=NOW + timedelta(minutes=31))

    assert result.acted == 3
    for workload in fleet.values():
        workload.refresh_from_db()
    assert fleet["chat"].spec["max_replicas"] == 1 and fleet["chat"].demand[H100] == 1
    assert fleet["desk"].spec["running"] is False and H100 not in fleet["desk"].demand
    assert fleet["hpc"].spec["workers"] == 1 and fleet["hpc"].demand[H100] == 1
    assert fleet["kept"].spec["running"] is True  # kept running: never touched
    episodes = _episodes()
    assert (episodes["acme/chat"].state, episodes["acme/chat"].reclaimed) == (E.ACTED, 2)
    assert episodes["acme/chat"].saved_per_hour == Decimal("5.000000")
    assert episodes["acme/hpc"].restore == {"workers": 3}
    assert episodes["acme/desk"].restore == {"power": "start"}
    audited = AuditEvent.objects.filter(action="workload.idle_acted")
    assert sorted(a.changes["action"] for a in audited) == [
        "2 idle workers removed (3 → 1)", "scaled to its minimum: at most 1 replica (was 3)",
        "stopped (its disk is kept)"]
    assert fleet["chat"].events.filter(kind=WorkloadEvent.Kind.SCALED,
                                       message__contains="idle GPU policy").exists()
    # Acted on once: the next sweep leaves it be.
    assert idle.workloads_idle_sweep(now=NOW + timedelta(minutes=40)).acted == 0

    idle.idle_undo(episode_id=episodes["acme/chat"].pk, actor=tenant_member)
    idle.idle_undo(episode_id=episodes["acme/desk"].pk, actor=tenant_member)

    fleet["chat"].refresh_from_db()
    fleet["desk"].refresh_from_db()
    assert fleet["chat"].spec["max_replicas"] == 3 and fleet["chat"].demand[H100] == 3
    assert fleet["desk"].spec["running"] is True
    undone = _episodes()["acme/chat"]
    assert (undone.state, undone.ended_by) == (E.UNDONE, tenant_member)
    undone_audits = AuditEvent.objects.filter(action="workload.idle_undone", actor=tenant_member)
    assert undone_audits.count() == 2


def test_only_the_tenants_people_undo_or_keep_running(fleet, tenant_viewer, other_tenant):
    from django.contrib.auth import get_user_model
    from django.core.exceptions import PermissionDenied

    idle.workloads_idle_sweep(now=NOW)
    idle.workloads_idle_sweep(now=NOW + timedelta(minutes=31))
    chat = _episodes()["acme/chat"]
    stranger = get_user_model().objects.create_user("stranger", "s@example.com")
    for person in (tenant_viewer, stranger):
        with pytest.raises(PermissionDenied):
            idle.idle_undo(episode_id=chat.pk, actor=person)
        with pytest.raises(PermissionDenied):
            services.workload_keep_running(workload_id=fleet["chat"].pk, actor=person,
                                           reason="mine")
    assert IdleEpisode.objects.get(pk=chat.pk).state == E.ACTED


def test_keep_running_is_audited_and_stops_a_pending_action(fleet, tenant_member):
    idle.workloads_idle_sweep(now=NOW)
    services.workload_keep_running(workload_id=fleet["desk"].pk, actor=tenant_member,
                                   reason="Demo for the board at 3 pm")

    assert idle.workloads_idle_sweep(now=NOW + timedelta(minutes=31)).acted == 2
    fleet["desk"].refresh_from_db()
    assert fleet["desk"].spec["running"] is True
    assert AuditEvent.objects.filter(action="workload.keep_running").count() == 2


def test_prometheus_down_changes_nothing_and_says_why(fleet, prometheus_down_url):
    result = idle.workloads_idle_sweep(
        client=PrometheusClient(base_url=prometheus_down_url, timeout=1), now=NOW)

    assert "Prometheus did not answer" in result.error
    assert not IdleEpisode.objects.exists()
    assert not Workload.objects.filter(gpu_measured_at__isnull=False).exists()


def test_a_workload_resized_within_the_window_is_not_idle_yet(fleet, tenant_member):
    services.workload_scale(workload_id=fleet["chat"].pk, actor=tenant_member,
                            changes={"max_replicas": 2})
    WorkloadEvent.objects.filter(workload=fleet["chat"], kind=WorkloadEvent.Kind.SCALED).update(
        created_at=NOW - timedelta(minutes=20))

    idle.workloads_idle_sweep(now=NOW)

    assert "acme/chat" not in _episodes()


def test_busy_again_ends_the_episode(fleet, prometheus_server, settings):
    idle.workloads_idle_sweep(now=NOW)
    # An hour and a half later, no sample in the window is below the threshold any more: the
    # series end at NOW, so a window past them measures nothing and nobody is idle.
    idle.workloads_idle_sweep(now=NOW + timedelta(hours=2))

    assert {e.state for e in IdleEpisode.objects.all()} == {E.OVER}


# --- the pages ----------------------------------------------------------------------------------


def test_the_workload_page_says_how_idle_it_is_and_when_the_policy_acts(
    fleet, login, tenant_member, settings
):
    idle.workloads_idle_sweep(now=NOW)
    client = login(tenant_member)

    html = client.get(f"/t/acme/workloads/{fleet['chat'].pk}/").content.decode()

    assert 'data-idle-state="warned"' in html
    assert "3 idle GPUs" in html and f"3.0 GPU-hours, 7.50 {settings.BILLING_CURRENCY}" in html
    assert 'id="idle-deadline"' in html
    assert 'data-gpu-utilization="1.00"' in html and 'id="keep-running"' in html
    # The busy endpoint: its utilization, no notice.
    html = client.get(f"/t/acme/workloads/{fleet['busy'].pk}/").content.decode()
    assert 'id="idle-notice"' not in html and "63% busy" in html


def test_keep_running_from_the_page_needs_a_reason(fleet, login, tenant_member):
    client = login(tenant_member)
    url = f"/t/acme/workloads/{fleet['desk'].pk}/keep-running/"

    response = client.post(url, {"keep": "on", "reason": "  "}, follow=True)
    assert "Say why it must keep running" in response.content.decode()
    fleet["desk"].refresh_from_db()
    assert fleet["desk"].keep_running_reason == ""

    client.post(url, {"keep": "on", "reason": "Nightly demo"})
    fleet["desk"].refresh_from_db()
    assert fleet["desk"].keep_running_reason == "Nightly demo"
    html = client.get(f"/t/acme/workloads/{fleet['desk'].pk}/").content.decode()
    assert "Kept running: “Nightly demo”" in html

    client.post(url, {})
    fleet["desk"].refresh_from_db()
    assert fleet["desk"].keep_running_reason == ""


def test_undo_from_the_page_in_one_click(fleet, login, tenant_member, tenant_viewer):
    idle.workloads_idle_sweep(now=NOW)
    idle.workloads_idle_sweep(now=NOW + timedelta(minutes=31))
    url = f"/t/acme/workloads/{fleet['hpc'].pk}/"
    html = login(tenant_member).get(url).content.decode()
    assert 'data-idle-state="acted"' in html and "2 idle workers removed (3 → 1)" in html
    assert 'id="idle-undo"' in html

    assert login(tenant_viewer).post(f"{url}idle-undo/").status_code == 403
    response = login(tenant_member).post(f"{url}idle-undo/")

    assert response.status_code == 302
    fleet["hpc"].refresh_from_db()
    assert fleet["hpc"].spec["workers"] == 3
    assert 'id="idle-notice"' not in login(tenant_member).get(url).content.decode()


def test_the_list_shows_each_workloads_last_hour_and_its_price(fleet, login, tenant_member,
                                                               settings):
    idle.workloads_idle_sweep(now=NOW)

    html = login(tenant_member).get("/t/acme/workloads/").content.decode()

    def row(name: str) -> str:
        start = html.index(f'id="workload-{fleet[name].pk}"')
        return html[start:html.index("</tr>", start)]

    assert 'data-gpu-utilization="1.00"' in row("chat") and ">Idle<" in row("chat")
    assert f"7.50 {settings.BILLING_CURRENCY}" in row("chat")  # three H100s at 2.50
    assert 'data-gpu-utilization="63.00"' in row("busy") and ">Idle<" not in row("busy")
    assert "kept" in row("kept")


def test_the_idle_gpus_page_shows_what_idles_what_was_given_back_and_the_policy(
    fleet, login, tenant_member, tenant_owner, settings
):
    idle.workloads_idle_sweep(now=NOW)
    idle.workloads_idle_sweep(now=NOW + timedelta(minutes=31))
    # Given back half an hour ago: the three actions' GPUs (2 + 1 + 2) for half an hour.
    IdleEpisode.objects.filter(state=E.ACTED).update(acted_at=timezone.now() - timedelta(
        minutes=30))

    html = login(tenant_member).get("/t/acme/idle-gpus/").content.decode()

    assert 'data-idle-gpus="1"' in html  # "kept" is still idle (its one GPU), shown only
    assert 'data-reclaimed="2.5"' in html
    assert html.count('data-idle-state="acted"') == 3
    assert 'data-mode="act"' in html and 'id="idle-policy-form"' not in html  # members read it
    assert login(tenant_member).post("/t/acme/idle-gpus/", {"mode": "off"}).status_code == 403


def test_owners_choose_the_policy_with_field_errors_for_bad_input(fleet, tenant, login,
                                                                  tenant_owner, settings):
    client = login(tenant_owner)
    response = client.post("/t/acme/idle-gpus/", {"mode": "act", "threshold_percent": "0",
                                                   "window_minutes": "5"})
    assert response.status_code == 400
    html = response.content.decode()
    assert "is-invalid" in html and "greater than or equal to 10" in html

    response = client.post("/t/acme/idle-gpus/", {"mode": "warn", "threshold_percent": "10",
                                                   "window_minutes": "", "grace_minutes": ""})

    assert response.status_code == 302
    policy = IdlePolicy.objects.get(tenant=tenant)
    assert (policy.mode, policy.threshold_percent, policy.window_minutes) == ("warn", 10, None)
    assert idle.tenant_rules(tenant).window_minutes == settings.IDLE_GPU_WINDOW_MINUTES
    audit = AuditEvent.objects.get(action="tenant.idle_policy")
    assert audit.actor == tenant_owner and audit.changes["after"]["mode"] == "warn"


# --- the API ------------------------------------------------------------------------------------


def test_the_api_shows_each_workloads_gpu_use_and_idle_episode(fleet, api_client, tenant_member):
    idle.workloads_idle_sweep(now=NOW)
    api_client.force_login(tenant_member)

    rows = {row["name"]: row for row in api_client.get(
        "/api/v1/workloads/", {"tenant": "acme"}).json()["results"]}

    assert rows["chat"]["gpu_utilization"] == "1.00"
    assert rows["chat"]["idle"]["state"] == "warned" and rows["chat"]["idle"]["gpus"] == 3
    assert rows["chat"]["idle"]["cost"] == "7.50" and rows["chat"]["idle"]["gpu_hours"] == "3.0"
    assert rows["busy"]["idle"] is None and rows["busy"]["gpu_utilization"] == "63.00"
    assert rows["kept"]["keep_running_reason"].startswith("Interactive debugging")


def test_keep_running_and_undo_over_the_api(fleet, api_client, tenant_member, tenant_viewer):
    idle.workloads_idle_sweep(now=NOW)
    url = f"/api/v1/workloads/{fleet['desk'].pk}"
    api_client.force_login(tenant_member)

    assert api_client.post(f"{url}/idle-undo/").status_code == 400  # warned, not acted on
    idle.workloads_idle_sweep(now=NOW + timedelta(minutes=31))
    response = api_client.post(f"{url}/idle-undo/")
    assert response.status_code == 202 and response.json()["spec"]["running"] is True

    response = api_client.post(f"{url}/keep-running/", {"reason": "Board demo"}, format="json")
    assert response.status_code == 200 and response.json()["keep_running_reason"] == "Board demo"
    assert api_client.post(f"{url}/keep-running/", {"reason": "x" * 201},
                           format="json").status_code == 400
    assert api_client.post(f"{url}/keep-running/", {}, format="json").status_code == 400
    api_client.force_login(tenant_viewer)
    assert api_client.post(f"{url}/keep-running/", {"reason": ""},
                           format="json").status_code == 403


def test_the_dashboard_names_the_workloads_with_idle_gpus(fleet, login, tenant_member):
    idle.workloads_idle_sweep(now=NOW)

    html = login(tenant_member).get("/t/acme/").content.decode()

    notice = html[html.index('id="section-idle"'):html.index('id="section-quota"')]
    assert "4 workloads with idle GPUs" in notice  # chat, desk, kept, hpc (busy is not)
    assert "and 1 more" in notice and "/t/acme/idle-gpus/" in notice


def test_the_usage_explorer_shows_what_the_policies_gave_back(fleet, login, finance):
    idle.workloads_idle_sweep(now=NOW)
    idle.workloads_idle_sweep(now=NOW + timedelta(minutes=31))
    IdleEpisode.objects.filter(state=E.ACTED).update(
        acted_at=timezone.now() - timedelta(hours=2))
    client = login(finance)
    day = timezone.now().date()

    html = client.get("/billing/usage/", {"start": day - timedelta(days=1), "end": day}).content
    html = html.decode()
    # Five GPUs (2 + 1 + 2) for two hours; the saving at the H100's 2.50 an hour.
    assert 'data-reclaimed="10.0"' in html and "25.00" in html and "(3 actions)" in html
    other = client.get("/billing/usage/", {"tenant": "globex", "start": day, "end": day})
    assert 'data-reclaimed="0' in other.content.decode()


def test_platform_admins_see_the_episodes_and_set_a_policy_in_django_admin(
    fleet, login, platform_admin, other_tenant
):
    idle.workloads_idle_sweep(now=NOW)
    client = login(platform_admin)

    listing = client.get("/admin/tenants/idleepisode/").content.decode()
    assert listing.count("<th class=\"field-workload") == 5
    response = client.post("/admin/tenants/idlepolicy/add/", {
        "tenant": other_tenant.pk, "mode": "warn", "threshold_percent": "3",
        "window_minutes": "", "grace_minutes": ""})

    assert response.status_code == 302
    assert IdlePolicy.objects.get(tenant=other_tenant).threshold_percent == 3
    assert AuditEvent.objects.get(action="tenant.idle_policy").actor == platform_admin


def test_an_episode_ends_with_its_workloads_gpus_but_an_action_stays_undoable(
    fleet, tenant_member
):
    idle.workloads_idle_sweep(now=NOW)
    idle.workloads_idle_sweep(now=NOW + timedelta(minutes=31))  # desk stopped by the policy
    services.workload_power(workload_id=fleet["kept"].pk, actor=tenant_member, action="stop")
    services.workload_delete(workload_id=fleet["hpc"].pk, actor=tenant_member)

    idle.workloads_idle_sweep(now=NOW + timedelta(minutes=40))

    states = {name: e.state for name, e in _episodes().items()}
    # Stopped by its people (no GPUs held): over. Deleted: over, though acted on.
    assert states["acme/kept"] == E.OVER and states["acme/hpc"] == E.OVER
    # Stopped by the policy: still given back, and the page can undo it.
    assert states["acme/desk"] == E.ACTED


def test_the_policy_over_the_api(tenant, api_client, tenant_owner, tenant_member, other_tenant,
                                 settings):
    api_client.force_login(tenant_member)
    url = "/api/v1/tenants/acme/idle-policy/"

    body = api_client.get(url).json()
    assert body["mode"] == "off" and body["threshold_percent"] is None
    assert body["effective"]["window_minutes"] == settings.IDLE_GPU_WINDOW_MINUTES
    assert api_client.put(url, {"mode": "act"}, format="json").status_code == 403
    assert api_client.get("/api/v1/tenants/globex/idle-policy/").status_code == 404

    api_client.force_login(tenant_owner)
    bad = api_client.put(url, {"mode": "sometimes", "threshold_percent": 0}, format="json")
    assert bad.status_code == 400
    assert {"mode", "threshold_percent"} <= set(bad.json()["error"]["fields"])
    body = api_client.put(url, {"mode": "act", "grace_minutes": 30}, format="json").json()

    assert body["mode"] == "act" and body["grace_minutes"] == 30
    assert body["effective"]["grace_minutes"] == 30
    assert body["effective"]["threshold_percent"] == settings.IDLE_GPU_THRESHOLD_PERCENT
    assert AuditEvent.objects.get(action="tenant.idle_policy").actor == tenant_owner


@pytest.mark.parametrize(("reason", "kept"), [
    ("Démo für den Vorstand — 週末", "Démo für den Vorstand — 週末"),  # unicode is kept
    ("x" * 5000, "x" * 200),  # cut to the column
    ("bad\x00byte", ""),  # refused with a message, nothing written
])
def test_keep_running_from_the_page_with_odd_reasons(fleet, login, tenant_member, reason, kept):
    client = login(tenant_member)
    url = f"/t/acme/workloads/{fleet['desk'].pk}/keep-running/"

    response = client.post(url, {"keep": "on", "reason": reason}, follow=True)

    assert response.status_code == 200
    fleet["desk"].refresh_from_db()
    assert fleet["desk"].keep_running_reason == kept
    if not kept:
        assert "cannot be stored" in response.content.decode()
        # Only the fixture's own mark on "kept" is audited.
        assert AuditEvent.objects.filter(action="workload.keep_running").count() == 1


def test_another_tenants_workload_is_a_404_to_keep_running_or_undo(fleet, login, tenant_member):
    client = login(tenant_member)
    globex = fleet["globex"].pk
    assert client.post(f"/t/acme/workloads/{globex}/keep-running/",
                       {"keep": "on", "reason": "mine"}).status_code == 404
    assert client.post(f"/t/globex/workloads/{globex}/idle-undo/").status_code == 404
    assert client.get("/t/globex/idle-gpus/").status_code == 404


def _at_once(now, runs=2):
    """`runs` sweeps at the same moment, each in a thread of its own (its own connection)."""
    start, results, errors = threading.Barrier(runs), [], []

    def sweep():
        try:
            start.wait(timeout=10)
            results.append(idle.workloads_idle_sweep(now=now))
        except Exception as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=sweep) for _ in range(runs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == [] and len(results) == runs, errors
    return results


@pytest.mark.django_db(transaction=True)  # real commits and row locks between the two sweeps
def test_two_sweeps_at_the_same_moment_warn_once_and_act_once(fleet):
    _at_once(NOW)

    assert sorted(_episodes()) == ["acme/chat", "acme/desk", "acme/hpc", "acme/kept",
                                   "globex/chat"]  # one each, not two
    assert OutboxEmail.objects.filter(topic="workload.idle_warned").count() == 3
    assert AuditEvent.objects.filter(action="workload.idle_warned").count() == 3

    acted = _at_once(NOW + timedelta(minutes=31))

    assert sum(result.acted for result in acted) == 3
    assert AuditEvent.objects.filter(action="workload.idle_acted").count() == 3
    fleet["chat"].refresh_from_db()
    fleet["hpc"].refresh_from_db()
    assert fleet["chat"].spec["max_replicas"] == 1 and fleet["hpc"].spec["workers"] == 1
    assert _episodes()["acme/hpc"].restore == {"workers": 3}  # not {"workers": 1}


@pytest.mark.django_db(transaction=True)  # the follow-up is sent on commit
def test_an_undo_with_the_task_queue_down_is_saved_said_and_sent_by_the_sweep(
    fleet, login, tenant_member
):
    idle.workloads_idle_sweep(now=NOW)
    idle.workloads_idle_sweep(now=NOW + timedelta(minutes=31))
    hpc = fleet["hpc"]
    url = f"/t/acme/workloads/{hpc.pk}/"

    with celery_broker(CLOSED_PORT_BROKER):
        response = login(tenant_member).post(f"{url}idle-undo/", follow=True)

    assert response.status_code == 200
    assert DEFERRED_NOTICE in response.content.decode()
    hpc.refresh_from_db()
    assert hpc.spec["workers"] == 3 and hpc.applied_version < hpc.desired_version
    assert _episodes()["acme/hpc"].state == E.UNDONE
    assert AuditEvent.objects.filter(action="workload.idle_undone", actor=tenant_member).exists()
    # Nothing is lost: the reconcile sweep sends it once the queue is back.
    assert hpc.pk in services.workloads_reconcile_sweep()
