"""Unused notebooks stopped, from a real Prometheus holding Envoy Gateway's request counters of
the notebooks' routes and DCGM series of their GPUs (promtool-backfilled): which notebooks the
sweep stops, why it says it did, who hears of it, and what it leaves alone."""

from datetime import timedelta

import pytest
from django.utils import timezone

from core.models import AuditEvent, OutboxEmail
from core.prometheus import PrometheusClient
from tenants.workloads import services
from tenants.workloads.kinds import notebook
from tenants.workloads.models import IdleMode, IdlePolicy, Workload, WorkloadEvent
from tenants.workloads.selectors import stopped_by_policy, workload_events
from tenants.workloads.services import idle, notebook_culling
from tenants.workloads.services.lifecycle import workload_resize_by_policy
from tests.factories import MembershipFactory, QuotaFactory
from tests.support.fixtures_prometheus import Series

from .conftest import H100, VM_SPEC, ssh_public_key

pytestmark = pytest.mark.django_db
NOW = timezone.now().replace(second=0, microsecond=0)
HOURS = 30  # of series, up to NOW
ACME, GLOBEX = "tenant-acme", "tenant-globex"


def _samples(value, *, since_hours: float = HOURS) -> list[tuple[float, float]]:
    """Every minute up to NOW; `value` is a number or a function of the hours before NOW."""
    end = int(NOW.timestamp())
    return [(float(t), value((end - t) / 3600) if callable(value) else value)
            for t in range(end - int(since_hours * 3600), end + 1, 60)]


def _route(namespace: str, name: str, requests) -> tuple[dict, list]:
    cluster = f"httproute/{namespace}/{notebook.notebook_name(name)}/rule/0"
    labels = {"envoy_cluster_name": cluster, "namespace": "envoy-gateway-system",
              "pod": "envoy-fleet-https-7c9d8b6f5-abcde"}
    return labels, _samples(requests)


def _gpu(namespace: str, name: str, utilization: float) -> tuple[dict, list]:
    pod = f"{notebook.notebook_name(name)}-0"
    labels = {"gpu": "0", "UUID": f"GPU-{pod}", "Hostname": "gpu-a-001", "namespace": namespace,
              "pod": pod, "container": "notebook", "modelName": "NVIDIA H100 80GB HBM3"}
    return labels, _samples(utilization)


def culling_series() -> Series:
    return {
        "envoy_cluster_upstream_rq_total": [
            # Nobody came for a day and more: the counters stand still.
            _route(ACME, "quiet", 42), _route(ACME, "gpuidle", 7), _route(ACME, "gpubusy", 3),
            _route(ACME, "young", 0), _route(ACME, "kept", 0), _route(GLOBEX, "never", 0),
            # Opened two hours ago: one more request then, and polling since.
            _route(ACME, "used", lambda ago: 100 if ago > 2 else 100 + int((2 - ago) * 60)),
            # An inference endpoint's route of the same fleet (not a notebook).
            _route(ACME, "chat", 5),
        ],
        "DCGM_FI_DEV_GPU_UTIL": [_gpu(ACME, "gpuidle", 0), _gpu(ACME, "gpubusy", 71)],
    }


@pytest.fixture
def prometheus(prometheus_server, settings):
    server = prometheus_server(culling_series())
    settings.PROMETHEUS_URL = server.url
    return server


def _spec(*, gpu: bool) -> dict:
    """A notebook's clean spec, as the kind's `validate` leaves it for its launcher."""
    return {
        "image": "lab", "custom_image": "", "image_ref": "quay.io/jupyter/base-notebook:2025-11",
        "image_label": "JupyterLab", "interface": "jupyterlab", "cpu": 4, "memory_gib": 16,
        "gpu": H100 if gpu else "", "gpus": 1 if gpu else 0, "running": True,
        "home": "home-alice", "home_gib": 50, "home_access_mode": "ReadWriteOnce",
        "home_storage_class": "",
    }


def _notebook(tenant, person, name: str, *, gpu: bool = False,
              running_since=NOW - timedelta(hours=HOURS)) -> Workload:
    """A notebook running and ready since `running_since`, launched by `person`."""
    spec = _spec(gpu=gpu)
    workload = Workload.objects.create(
        tenant=tenant, kind=notebook.KEY, name=name, launched_by=person, spec=spec,
        demand=notebook.KIND.demand(spec), status=Workload.Status.READY, created_at=running_since)
    WorkloadEvent.objects.create(workload=workload, kind=WorkloadEvent.Kind.LAUNCHED,
                                 actor=person, demand=workload.demand, created_at=running_since)
    return workload


@pytest.fixture
def notebooks(tenant, other_tenant, tenant_member, gpu_pool, prometheus, settings):
    settings.NOTEBOOK_IDLE_HOURS = 24
    # One person's notebooks all run at once: their home volume is one many nodes mount.
    settings.NOTEBOOK_HOME_ACCESS_MODE = "ReadWriteMany"
    for owner in (tenant, other_tenant):
        for resource, limit in {H100: 8, "cpu": 64, "memory-gib": 512, "storage-gib": 1000,
                                "count:notebook": 10}.items():
            QuotaFactory(tenant=owner, resource=resource, limit=limit)
    # Acme's policy leaves the hours to the fleet's default; Globex never stops notebooks.
    IdlePolicy.objects.create(tenant=tenant, mode=IdleMode.OFF, threshold_percent=5)
    IdlePolicy.objects.create(tenant=other_tenant, mode=IdleMode.OFF, notebook_idle_hours=0)
    made = {name: _notebook(tenant, tenant_member, name, gpu=name.startswith("gpu"))
            for name in ("quiet", "used", "gpuidle", "gpubusy", "kept")}
    # Started again three hours ago, after a stop: younger than the window.
    made["young"] = _notebook(tenant, tenant_member, "young")
    WorkloadEvent.objects.create(workload=made["young"], kind=WorkloadEvent.Kind.POWER,
                                 actor=tenant_member, message="start",
                                 created_at=NOW - timedelta(hours=3))
    Workload.objects.filter(pk=made["kept"].pk).update(keep_running_reason="Training overnight")
    made["never"] = _notebook(other_tenant, MembershipFactory(tenant=other_tenant).user, "never")
    return made


def _running() -> dict[str, bool]:
    return {w.name: w.spec["running"] for w in Workload.objects.filter(kind=notebook.KEY)}


def test_the_sweep_stops_only_the_notebooks_nobody_used_over_the_window(
    notebooks, tenant_member
):
    result = notebook_culling.notebooks_cull_sweep(now=NOW)

    assert result.error == ""
    # Judged: the five acme notebooks running a day and more, not kept running; "young" was
    # started three hours ago, and globex never stops notebooks.
    assert (result.judged, result.stopped) == (4, 2)
    assert _running() == {"quiet": False, "gpuidle": False, "used": True, "gpubusy": True,
                          "young": True, "kept": True, "never": True}
    quiet, gpuidle = (Workload.objects.get(name=n) for n in ("quiet", "gpuidle"))
    # Its GPU and vCPUs are back in the quota; its home volume is still held.
    assert H100 not in gpuidle.demand and gpuidle.demand["storage-gib"] == 50
    assert "cpu" not in quiet.demand
    # The timeline says why, as a power action nobody took.
    stop = quiet.events.get(kind=WorkloadEvent.Kind.POWER)
    assert stop.actor is None and stop.message.startswith(
        "Stopped after 24 hours without use: no requests through its URL. ")
    assert gpuidle.events.get(kind=WorkloadEvent.Kind.POWER).message.startswith(
        "Stopped after 24 hours without use: no requests through its URL, GPUs idle. ")
    assert set(AuditEvent.objects.filter(action="workload.notebook_culled").values_list(
        "object_id", flat=True)) == {str(quiet.pk), str(gpuidle.pk)}
    assert AuditEvent.objects.filter(action="workload.stop", actor=None).count() == 2
    # Who launched each hears of it.
    mails = OutboxEmail.objects.filter(topic="workload.notebook_culled").order_by("subject")
    assert [m.subject for m in mails] == [
        "Notebook gpuidle of Acme Labs was stopped: unused for 24 hours",
        "Notebook quiet of Acme Labs was stopped: unused for 24 hours"]
    assert all(m.to == [tenant_member.email] for m in mails)
    assert f"/t/acme/workloads/{quiet.pk}/" in mails[1].body
    # Stopped already: the next sweep leaves them be.
    assert notebook_culling.notebooks_cull_sweep(now=NOW + timedelta(minutes=15)).stopped == 0


def test_the_reason_a_policy_stopped_it_stays_while_it_is_stopped(notebooks, tenant_member):
    notebook_culling.notebooks_cull_sweep(now=NOW)
    quiet = Workload.objects.get(name="quiet")

    reason = stopped_by_policy(quiet, list(workload_events(workload=quiet)))

    assert reason.message.startswith("Stopped after 24 hours without use")
    services.workload_power(workload_id=quiet.pk, actor=tenant_member, action="start")
    quiet.refresh_from_db()
    assert quiet.spec["running"] is True and H100 not in quiet.demand
    assert stopped_by_policy(quiet, list(workload_events(workload=quiet))) is None
    used = notebooks["used"]
    assert stopped_by_policy(used, list(workload_events(workload=used))) is None


def test_the_workload_page_says_why_a_policy_stopped_it(tenant, tenant_member, gpu_pool, login):
    """The page of any workload a policy stopped (here a VM, stopped through the same path the
    notebook sweep takes) shows the reason, until someone starts it."""
    for resource, limit in {H100: 4, "cpu": 64, "memory-gib": 512, "storage-gib": 500,
                            "count:vm": 2}.items():
        QuotaFactory(tenant=tenant, resource=resource, limit=limit)
    desk = services.workload_launch(tenant=tenant, actor=tenant_member, kind="vm", name="desk",
                                    spec={**VM_SPEC, "ssh_public_key": ssh_public_key()})
    workload_resize_by_policy(workload_id=desk.pk, changes={"power": "stop"},
                              message="Stopped after 24 hours without use: no requests.")
    client = login(tenant_member)

    html = client.get(f"/t/acme/workloads/{desk.pk}/").content.decode()

    assert 'id="policy-stop"' in html
    notice = html[html.index('id="policy-stop"'):]
    assert "Stopped after 24 hours without use: no requests." in notice[:400]
    services.workload_power(workload_id=desk.pk, actor=tenant_member, action="start")
    assert 'id="policy-stop"' not in client.get(f"/t/acme/workloads/{desk.pk}/").content.decode()


def test_a_shorter_window_of_a_tenant_is_read_on_its_own(notebooks, tenant, settings):
    """Acme's notebooks stopped after two hours: the one opened two hours ago is still used,
    "young" (started three hours ago) is now old enough."""
    IdlePolicy.objects.filter(tenant=tenant).update(notebook_idle_hours=2)

    result = notebook_culling.notebooks_cull_sweep(now=NOW)

    assert result.stopped == 3
    assert {n for n, running in _running().items() if not running} == {
        "quiet", "gpuidle", "young"}
    assert Workload.objects.get(name="young").events.filter(
        kind=WorkloadEvent.Kind.POWER, message__startswith="Stopped after 2 hours").exists()


def test_prometheus_down_stops_nothing_and_says_why(notebooks, prometheus_down_url):
    result = notebook_culling.notebooks_cull_sweep(
        client=PrometheusClient(base_url=prometheus_down_url, timeout=1), now=NOW)

    assert result.error.startswith("Prometheus did not answer")
    assert result.stopped == 0 and all(_running().values())
    assert not OutboxEmail.objects.filter(topic="workload.notebook_culled").exists()


def test_without_prometheus_nothing_is_culled(notebooks, settings):
    settings.PROMETHEUS_URL = ""

    result = notebook_culling.notebooks_cull_sweep(now=NOW)

    assert result.error.startswith("PROMETHEUS_URL is not set") and all(_running().values())


def test_a_prometheus_without_the_gateways_counters_judges_nothing(
    notebooks, prometheus_server, settings
):
    """A gateway nobody scrapes is not a gateway nobody uses."""
    only_gpus = {"DCGM_FI_DEV_GPU_UTIL": culling_series()["DCGM_FI_DEV_GPU_UTIL"]}
    settings.PROMETHEUS_URL = prometheus_server(only_gpus).url

    result = notebook_culling.notebooks_cull_sweep(now=NOW)

    assert "no request counts of the gateway's routes over 24 hours" in result.error
    assert result.stopped == 0 and all(_running().values())


def test_the_idle_gpu_policy_stops_a_notebook_and_one_click_starts_it(
    tenant, tenant_member, gpu_pool
):
    for resource, limit in {H100: 8, "cpu": 64, "memory-gib": 512, "storage-gib": 1000,
                            "count:notebook": 10}.items():
        QuotaFactory(tenant=tenant, resource=resource, limit=limit)
    workload = _notebook(tenant, tenant_member, "gpuidle", gpu=True)

    plan = idle.plan_for(workload, 1)

    assert (plan.changes, plan.restore) == ({"power": "stop"}, {"power": "start"})
    assert plan.words == "stopped (its home volume is kept)" and plan.given_back == {H100: 1}
    assert idle.plan_for(Workload(kind=notebook.KEY, spec={**workload.spec, "running": False}),
                         1) is None


def test_the_beat_sends_the_sweep_and_its_task_reports(settings):
    from portal.celery import app
    from tenants.workloads import tasks

    entry = settings.CELERY_BEAT_SCHEDULE["notebooks-cull-sweep"]
    assert entry["task"] == "tenants.workloads.tasks.notebooks_cull_sweep_task"
    assert entry["task"] in app.tasks and entry["schedule"] == settings.NOTEBOOK_CULL_SWEEP_SECONDS
    settings.PROMETHEUS_URL = ""
    assert tasks.notebooks_cull_sweep_task() == (
        "PROMETHEUS_URL is not set: notebooks are not culled.")


def test_owners_choose_the_notebook_hours_on_the_page_and_over_the_api(
    tenant, login, tenant_owner, api_client, settings
):
    settings.NOTEBOOK_IDLE_HOURS = 24
    client = login(tenant_owner)
    html = client.get("/t/acme/idle-gpus/").content.decode()
    assert 'name="notebook_idle_hours"' in html and 'placeholder="24 (default)"' in html
    assert "unused notebooks stopped after 24 h" in html

    bad = client.post("/t/acme/idle-gpus/", {"mode": "off", "notebook_idle_hours": "-1"})
    assert bad.status_code == 400 and "is-invalid" in bad.content.decode()
    client.post("/t/acme/idle-gpus/", {"mode": "off", "notebook_idle_hours": "0"})
    assert IdlePolicy.objects.get(tenant=tenant).notebook_idle_hours == 0
    assert "unused notebooks never stopped" in client.get("/t/acme/idle-gpus/").content.decode()

    api_client.force_login(tenant_owner)
    url = "/api/v1/tenants/acme/idle-policy/"
    body = api_client.put(url, {"mode": "off", "notebook_idle_hours": 8}, format="json").json()
    assert body["notebook_idle_hours"] == 8 and body["effective"]["notebook_idle_hours"] == 8
    body = api_client.put(url, {"mode": "off"}, format="json").json()
    assert body["notebook_idle_hours"] is None and body["effective"]["notebook_idle_hours"] == 24
    assert api_client.put(url, {"mode": "off", "notebook_idle_hours": 721},
                          format="json").status_code == 400
    audit = AuditEvent.objects.filter(action="tenant.idle_policy").order_by("pk").last()
    assert audit.changes["before"]["notebook_idle_hours"] == 8
