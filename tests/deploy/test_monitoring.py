"""The monitoring the manifests ship: the ServiceMonitor finds the web Service, the
PrometheusRule's expressions load in promtool and fire when they should, and every metric an
alert or a Grafana panel names is one the portal exports."""

import json
import re
import shutil
import subprocess

import pytest
import yaml
from django.test import override_settings
from prometheus_client.parser import text_string_to_metric_families

from portal.celery import app as celery_app

from .rendering import DEPLOY, OVERLAYS, named, of_kind, render

# Exported by the observability work of issue 31 (queue depth, beat's last send per task, the
# end of the last metered hour); not in the portal's /metrics until that work is merged.
OBSERVABILITY_METRICS = frozenset({
    "portal_celery_queue_length",
    "portal_beat_last_run_timestamp_seconds",
    "portal_metering_last_hour_timestamp_seconds",
})
# Series Prometheus writes itself for every target.
PROMETHEUS_SERIES = frozenset({"up"})
DASHBOARD = DEPLOY / "base" / "monitoring" / "portal-dashboard.json"
# PromQL words that are no metric: functions and aggregations (followed by `(`) are skipped by
# the pattern; these are the keywords that stand alone.
PROMQL_KEYWORDS = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right",
                             "bool", "and", "or", "unless", "offset"})
ALERTS = {"PortalWeb5xxRate", "PortalCeleryQueueBacklog", "PortalBeatSilent",
          "PortalMeteringGap", "PortalReconcileFailures"}


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects."""
    expr = re.sub(r'"(?:\\.|[^"\\])*"', '""', expr)  # strings, with their escapes
    expr = re.sub(r"\{[^}]*\}", "", expr)  # label matchers
    expr = re.sub(r"\[[^\]]*\]", "", expr)  # ranges and subqueries
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", expr)
    names = set()
    for match in re.finditer(r"(?<![\w.])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?", expr):
        name, call = match.groups()
        if not call and name not in PROMQL_KEYWORDS and not re.fullmatch(r"\d+[smhdwy]", name):
            names.add(name)
    return names


def test_metric_names_reads_promql():
    expr = ('max by (task) (increase(a_total{job="x", task=~"b\\\\.c"}[30m])) / '
            'on (job) sum without (pod) (rate(b_bucket[5m] offset 1h)) > bool 2 or absent(up)')
    assert metric_names(expr) == {"a_total", "b_bucket", "up"}


def _rules(overlay: str = "production") -> dict:
    return named(render(overlay), "PrometheusRule", "portal")


def _alert_and_panel_exprs() -> dict[str, str]:
    exprs = {
        rule.get("alert") or rule["record"]: rule["expr"]
        for group in _rules()["spec"]["groups"]
        for rule in group["rules"]
    }
    for panel in json.loads(DASHBOARD.read_text())["panels"]:
        for target in panel["targets"]:
            exprs[f"panel {panel['title']!r} {target['refId']}"] = target["expr"]
    return exprs


@pytest.fixture
def exported_metrics(client) -> set[str]:
    """Every sample name the portal's /metrics serves, asked as the scraper asks."""
    client.get("/healthz")
    with override_settings(METRICS_BEARER_TOKEN="scrape-me", METRICS_ALLOWED_NETWORKS=[]):
        response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-me")
    assert response.status_code == 200
    names = set()
    for family in text_string_to_metric_families(response.content.decode()):
        names.add(family.name)
        suffixes = {"counter": ("_total", "_created"),
                    "histogram": ("_bucket", "_count", "_sum", "_created"),
                    "summary": ("_count", "_sum", "_created")}.get(family.type, ())
        names |= {family.name + suffix for suffix in suffixes}
        names |= {sample.name for sample in family.samples}
    return names


@pytest.mark.django_db
def test_every_metric_an_alert_or_a_panel_names_is_exported(exported_metrics):
    known = exported_metrics | OBSERVABILITY_METRICS | PROMETHEUS_SERIES
    unknown = {where: sorted(metric_names(expr) - known)
               for where, expr in _alert_and_panel_exprs().items()}
    assert {where: names for where, names in unknown.items() if names} == {}
    # The check can fail: a name the portal does not export is caught.
    assert metric_names("rate(portal_no_such_metric_total[5m])") - known


def test_the_alerts_the_operators_need_are_there():
    alerts = {rule.get("alert") for group in _rules()["spec"]["groups"] for rule in group["rules"]}
    assert alerts >= ALERTS


def test_the_reconcile_alert_matches_the_reconcile_tasks():
    (rule,) = [r for g in _rules()["spec"]["groups"] for r in g["rules"]
               if r.get("alert") == "PortalReconcileFailures"]
    (pattern,) = re.findall(r'task=~"((?:\\.|[^"\\])*)"', rule["expr"])
    regex = re.compile(pattern.replace("\\\\", "\\"))
    matched = {name for name in celery_app.tasks if regex.fullmatch(name)}
    assert {"tenants.enforcement.tasks.tenant_reconcile_task",
            "tenants.workloads.tasks.workload_reconcile_task"} <= matched
    assert not {name for name in matched if "reconcile" not in name}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_service_monitor_scrapes_the_web_service(overlay):
    objects = render(overlay)
    monitor = named(objects, "ServiceMonitor", "portal-web")
    (service,) = [s for s in of_kind(objects, "Service")
                  if monitor["spec"]["selector"]["matchLabels"].items()
                  <= s["metadata"]["labels"].items()]
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
    assert endpoint["path"] == "/metrics"
    # job="portal-web" in the rules is the scraped Service's name.
    assert service["metadata"]["name"] == "portal-web"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_grafana_dashboard_is_a_labelled_config_map_of_valid_json(overlay):
    (dashboard,) = [c for c in of_kind(render(overlay), "ConfigMap")
                    if c["metadata"].get("labels", {}).get("grafana_dashboard") == "1"]
    (text,) = dashboard["data"].values()
    board = json.loads(text)
    assert board["uid"] and board["panels"]
    assert all(panel["targets"] and all(t["expr"] for t in panel["targets"])
               for panel in board["panels"])


def _promtool() -> str:
    promtool = shutil.which("promtool")
    assert promtool, "promtool checks the rules (Debian package prometheus)"
    return promtool


def _rule_file(tmp_path, *, annotations: bool = True):
    groups = _rules()["spec"]["groups"]
    if not annotations:  # the unit tests compare labels; `check rules` checks the templates
        groups = [{**g, "rules": [{k: v for k, v in r.items() if k != "annotations"}
                                  for r in g["rules"]]} for g in groups]
    path = tmp_path / "portal-rules.yaml"
    path.write_text(yaml.safe_dump({"groups": groups}))
    return path


def test_promtool_loads_the_rules(tmp_path):
    result = subprocess.run([_promtool(), "check", "rules", str(_rule_file(tmp_path))],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


# promtool's rule unit tests: series over time, and the alerts expected at given instants.
RULE_TESTS = [
    {
        "interval": "1m",
        "input_series": [
            # Beat sent its last task at t=0 (the gauge holds that unix time) and then nothing.
            {"series": 'portal_beat_last_run_timestamp_seconds{job="portal-web", task="a"}',
             "values": "0x40"},
            # One workload reconcile failed at minute 10, seen alike by two web pods.
            {"series": 'portal_celery_task_outcomes_total{job="portal-web", pod="w1", '
                       'outcome="failure", task="tenants.workloads.tasks.workload_reconcile_task"}',
             "values": "0x10 1x30"},
            {"series": 'portal_celery_task_outcomes_total{job="portal-web", pod="w2", '
                       'outcome="failure", task="tenants.workloads.tasks.workload_reconcile_task"}',
             "values": "0x10 1x30"},
            # A task failing that is no reconcile.
            {"series": 'portal_celery_task_outcomes_total{job="portal-web", pod="w1", '
                       'outcome="failure", task="billing.tasks.budget_alerts_task"}',
             "values": "0x10 5x30"},
            # 10% of the requests are 5xx.
            {"series": 'django_http_responses_total_by_status_view_method_total{job="portal-web",'
                       ' status="500", view="v", method="GET"}', "values": "0+6x40"},
            {"series": 'django_http_responses_total_by_status_view_method_total{job="portal-web",'
                       ' status="200", view="v", method="GET"}', "values": "0+54x40"},
        ],
        "alert_rule_test": [
            {"eval_time": "4m", "alertname": "PortalBeatSilent", "exp_alerts": []},
            {"eval_time": "20m", "alertname": "PortalBeatSilent", "exp_alerts": [
                {"exp_labels": {"severity": "critical"}}]},
            {"eval_time": "5m", "alertname": "PortalReconcileFailures", "exp_alerts": []},
            {"eval_time": "20m", "alertname": "PortalReconcileFailures", "exp_alerts": [
                {"exp_labels": {"severity": "warning",
                                "task": "tenants.workloads.tasks.workload_reconcile_task"}}]},
            {"eval_time": "20m", "alertname": "PortalWeb5xxRate", "exp_alerts": [
                {"exp_labels": {"severity": "critical"}}]},
        ],
    },
]


def test_the_alerts_fire_when_they_should(tmp_path):
    rules = _rule_file(tmp_path, annotations=False)
    tests = tmp_path / "portal-rules-test.yaml"
    tests.write_text(yaml.safe_dump({
        "rule_files": [rules.name], "evaluation_interval": "1m", "tests": RULE_TESTS,
    }))
    result = subprocess.run([_promtool(), "test", "rules", tests.name], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
