"""The Kustomize manifests (deploy/): every overlay renders, validates against the Kubernetes
schema (and the monitoring CRDs), and holds the properties docs/deployment.md promises."""

import ipaddress
import os
import re
import subprocess
import sys

import pytest

from portal.config_vars import declared
from tests.support.manifest_schemas import KUBERNETES_MINOR

from .rendering import (
    DEPLOY,
    OVERLAYS,
    PREPARE_LABEL,
    ROOT,
    named,
    of_kind,
    pod_specs,
    render,
    render_base,
    schema_errors,
)

WORKLOADS = ("Deployment/portal-web", "Deployment/portal-worker", "Deployment/portal-beat",
             "Job/portal-migrate")
TMP = "/tmp"  # noqa: S108 - the emptyDir the pods write to, not a file of the tests
KEY_VALUE = re.compile(r"^[A-Z][A-Z0-9_]*=[^\s].*$|^[A-Z][A-Z0-9_]*=$")


def test_there_are_a_dev_and_a_production_overlay():
    assert {"dev", "production"} <= set(OVERLAYS)


def test_the_docs_name_the_kubernetes_version_the_manifests_are_checked_against():
    assert f"Kubernetes {KUBERNETES_MINOR}" in (ROOT / "docs" / "deployment.md").read_text()


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_rendered_object_validates(overlay):
    objects = render(overlay)
    errors = {
        f"{o['kind']}/{o['metadata']['name']}": schema_errors(o) for o in objects
    }
    assert {name: e for name, e in errors.items() if e} == {}
    kinds = {o["kind"] for o in objects}
    assert {"Deployment", "Job", "Service", "Ingress", "ConfigMap", "PodDisruptionBudget",
            "HorizontalPodAutoscaler", "NetworkPolicy", "ServiceAccount", "ServiceMonitor",
            "PrometheusRule"} <= kinds


def test_a_manifest_with_an_unknown_field_is_refused():
    """The validation can fail: strict mode refuses a field the schema does not have."""
    web = named(render("production"), "Deployment", "portal-web")
    web["spec"]["template"]["spec"]["containers"][0]["livenessProbes"] = {}
    assert schema_errors(web)
    monitor = named(render("production"), "ServiceMonitor", "portal-web")
    del monitor["spec"]["endpoints"]
    del monitor["spec"]["selector"]
    assert schema_errors(monitor)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_container_has_probes_resources_and_a_locked_down_security_context(overlay):
    pods = pod_specs(render(overlay))
    assert set(pods) == set(WORKLOADS)
    for owner, pod in pods.items():
        assert pod["serviceAccountName"] == "portal", owner
        assert pod["securityContext"]["runAsNonRoot"] is True, owner
        assert pod["securityContext"]["runAsUser"] == 10001, owner
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, owner
        tmp = {v["name"] for v in pod["volumes"] if "emptyDir" in v}
        for container in pod.get("initContainers", []) + pod["containers"]:
            where = f"{owner} {container['name']}"
            assert "livenessProbe" in container, where
            for kind in ("requests", "limits"):
                assert {"cpu", "memory"} <= set(container["resources"][kind]), where
            context = container["securityContext"]
            assert context["runAsNonRoot"] is True, where
            assert context["runAsUser"] == 10001, where
            assert context["readOnlyRootFilesystem"] is True, where
            assert context["allowPrivilegeEscalation"] is False, where
            assert context["capabilities"] == {"drop": ["ALL"]}, where
            assert context["seccompProfile"] == {"type": "RuntimeDefault"}, where
            mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
            assert mounts.get(TMP) in tmp, where


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_web_is_gunicorn_probed_on_healthz_and_readyz(overlay):
    web = named(render(overlay), "Deployment", "portal-web")
    (container,) = web["spec"]["template"]["spec"]["containers"]
    assert container["command"] == [
        "gunicorn", "-c", "python:portal.gunicorn_conf", "portal.wsgi", "--bind", "0.0.0.0:8000"
    ]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"http": 8000}
    probes = {
        kind: (container[kind]["httpGet"]["path"], container[kind]["httpGet"]["port"])
        for kind in ("startupProbe", "livenessProbe", "readinessProbe")
    }
    assert probes == {
        "startupProbe": ("/healthz", "http"),
        "livenessProbe": ("/healthz", "http"),
        "readinessProbe": ("/readyz", "http"),
    }
    # Probes and scrapes name the pod's address as Host: ALLOWED_HOSTS must take it.
    env = {e["name"]: e for e in container["env"]}
    assert env["POD_IP"]["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"
    assert env["ALLOWED_HOSTS"]["value"] == "$(ALLOWED_HOSTS),$(POD_IP)"
    names = [e["name"] for e in container["env"]]
    assert names.index("POD_IP") < names.index("ALLOWED_HOSTS")


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_worker_and_beat_run_celery_and_beat_is_exactly_one_recreated_replica(overlay):
    objects = render(overlay)
    worker = named(objects, "Deployment", "portal-worker")
    assert worker["spec"]["template"]["spec"]["containers"][0]["command"][:4] == [
        "celery", "-A", "portal", "worker"
    ]
    beat = named(objects, "Deployment", "portal-beat")
    assert beat["spec"]["template"]["spec"]["containers"][0]["command"][:4] == [
        "celery", "-A", "portal", "beat"
    ]
    assert beat["spec"]["replicas"] == 1
    assert beat["spec"]["strategy"] == {"type": "Recreate"}
    autoscalers = of_kind(objects, "HorizontalPodAutoscaler")
    scaled = {h["spec"]["scaleTargetRef"]["name"] for h in autoscalers}
    assert scaled == {"portal-web", "portal-worker"}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_web_and_worker_spread_have_budgets_and_autoscale(overlay):
    objects = render(overlay)
    budgets = {p["spec"]["selector"]["matchLabels"]["app.kubernetes.io/component"]
               for p in of_kind(objects, "PodDisruptionBudget")}
    assert budgets == {"web", "worker"}
    for name in ("portal-web", "portal-worker"):
        pod = named(objects, "Deployment", name)["spec"]["template"]["spec"]
        keys = {c["topologyKey"] for c in pod["topologySpreadConstraints"]}
        assert keys == {"topology.kubernetes.io/zone", "kubernetes.io/hostname"}
        hpa = named(objects, "HorizontalPodAutoscaler", name)
        assert 1 <= hpa["spec"]["minReplicas"] < hpa["spec"]["maxReplicas"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_no_secret_is_rendered_and_secrets_are_referenced_by_name(overlay):
    objects = render(overlay)
    assert of_kind(objects, "Secret") == []
    secrets = {"SECRET_KEY", "SEALING_KEYS", "DATABASE_URL", "CELERY_BROKER_URL"}
    assert not [o for o in objects if o["kind"] == "ConfigMap" and
                set(o.get("data", {})) & secrets]
    documented = (ROOT / "docs" / "deployment.md").read_text()
    for owner, pod in pod_specs(objects).items():
        container = pod["containers"][0]
        from_secret = [e["secretRef"]["name"] for e in container["envFrom"] if "secretRef" in e]
        assert from_secret == ["portal"], owner
        for env in container.get("env", []):
            assert "value" not in env or not env["name"].endswith(("SECRET", "PASSWORD")), owner
            ref = env.get("valueFrom", {}).get("secretKeyRef")
            if ref:
                assert ref["key"] == env["name"], owner
                assert f"`{ref['name']}`" in documented and f"`{ref['key']}`" in documented


def test_production_takes_the_keycloak_clients_secrets_from_their_secret():
    for owner, pod in pod_specs(render("production")).items():
        refs = {e["name"]: e["valueFrom"]["secretKeyRef"]["name"]
                for e in pod["containers"][0]["env"] if "secretKeyRef" in e.get("valueFrom", {})}
        assert refs == {"OIDC_RP_CLIENT_SECRET": "portal-keycloak",
                        "KEYCLOAK_DIRECTORY_CLIENT_SECRET": "portal-keycloak"}, owner


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_prepare_stage_is_the_migrate_job_and_what_it_needs(overlay):
    objects = render(overlay)
    prepare = {(o["kind"], o["metadata"]["name"]) for o in objects
               if o["metadata"].get("labels", {}).get(PREPARE_LABEL) == "prepare"}
    (settings,) = [o for o in of_kind(objects, "ConfigMap")
                   if o["metadata"]["name"].startswith("portal-settings")]
    assert prepare == {("Job", "portal-migrate"), ("ServiceAccount", "portal"),
                       ("ConfigMap", settings["metadata"]["name"])}
    job = named(objects, "Job", "portal-migrate")
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["python", "manage.py", "migrate", "--no-input"]
    assert {"configMapRef": {"name": settings["metadata"]["name"]}} in container["envFrom"]
    images = {c["image"] for pod in pod_specs(objects).values() for c in pod["containers"]}
    assert len(images) == 1 and images != {"portal"}, images


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_network_policies_deny_by_default_and_allow_only_named_peers(overlay):
    policies = {p["metadata"]["name"]: p["spec"] for p in of_kind(render(overlay), "NetworkPolicy")}
    deny = policies.pop("portal-default-deny")
    assert deny["policyTypes"] == ["Ingress", "Egress"]
    assert "ingress" not in deny and "egress" not in deny
    assert deny["podSelector"] == {"matchLabels": {"app.kubernetes.io/name": "ai-factory-portal"}}
    ingress = policies.pop("portal-web-ingress")
    assert len(ingress["ingress"]) == 2  # the ingress controller, Prometheus
    assert {"portal-egress-dns", "portal-egress-database", "portal-egress-redis",
            "portal-egress-keycloak", "portal-egress-apiserver",
            "portal-egress-prometheus"} == set(policies)
    for name, spec in [("portal-web-ingress", ingress), *policies.items()]:
        for rule in spec.get("ingress", []) + spec.get("egress", []):
            peers = rule.get("from", []) + rule.get("to", [])
            assert peers and rule["ports"], f"{name} allows every peer or every port"
            for peer in peers:
                assert peer.get("namespaceSelector", {}) != {} or "ipBlock" in peer, name
                if "ipBlock" in peer:
                    assert ipaddress.ip_network(peer["ipBlock"]["cidr"]).prefixlen >= 8, name


def _config_data(overlay: str) -> dict[str, str]:
    (settings,) = [o for o in of_kind(render(overlay), "ConfigMap")
                   if o["metadata"]["name"].startswith("portal-settings")]
    return settings["data"]


def test_settings_env_is_plain_key_value_of_declared_variables():
    lines = (DEPLOY / "base" / "settings.env").read_text().splitlines()
    pairs = [line for line in lines if line.strip() and not line.startswith("#")]
    assert all(KEY_VALUE.match(line) for line in pairs), pairs
    assert {line.split("=", 1)[0] for line in pairs} <= set(declared())
    assert dict(line.split("=", 1) for line in pairs)["PORTAL_ENV"] == "production"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_configured_variable_is_one_the_portal_reads(overlay):
    assert set(_config_data(overlay)) <= set(declared())


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_ingress_serves_the_allowed_hosts_over_tls(overlay):
    objects = render(overlay)
    ingress = named(objects, "Ingress", "portal-web")
    hosts = {rule["host"] for rule in ingress["spec"]["rules"]}
    tls_hosts = {h for entry in ingress["spec"]["tls"] for h in entry["hosts"]}
    assert hosts <= tls_hosts
    config = _config_data(overlay)
    assert hosts <= set(config["ALLOWED_HOSTS"].split(","))
    assert {f"https://{h}" for h in hosts} <= set(config["CSRF_TRUSTED_ORIGINS"].split(","))
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    service = named(objects, "Service", backend["name"])
    assert backend["port"]["name"] in {p["name"] for p in service["spec"]["ports"]}


def test_the_base_renders_on_its_own():
    assert named(render_base(), "Deployment", "portal-web")


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_rendered_settings_pass_djangos_deployment_checks(overlay):
    """The ConfigMap as a pod sees it (with the Secrets' keys filled in) starts the production
    posture with `manage.py check --deploy` clean."""
    config = _config_data(overlay)
    env = {key: value for key, value in os.environ.items()
           if key in {"PATH", "HOME", "LANG", "VIRTUAL_ENV"}}
    env |= config | {
        "ALLOWED_HOSTS": f"{config['ALLOWED_HOSTS']},10.244.1.17",
        "SECRET_KEY": "a-long-random-secret-key-for-the-check-" + "x" * 40,
        "SEALING_KEYS": "s" * 43 + "=",
        "DATABASE_URL": "postgres://portal:secret@127.0.0.1:5432/portal",
        "CELERY_BROKER_URL": "redis://127.0.0.1:6379/0",
        "CACHE_URL": "rediscache://127.0.0.1:6379/2",
        "OIDC_RP_CLIENT_SECRET": "client-secret",
        "KEYCLOAK_DIRECTORY_CLIENT_SECRET": "directory-secret",
        "DJANGO_SETTINGS_MODULE": "portal.settings",
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_production_overlays_patches_take_effect():
    """A patch whose target no longer exists changes nothing, silently: each one is checked."""
    objects = render("production")
    base = render_base()
    for name in ("portal-egress-database", "portal-egress-apiserver"):
        peers = named(objects, "NetworkPolicy", name)["spec"]["egress"][0]["to"]
        assert peers != named(base, "NetworkPolicy", name)["spec"]["egress"][0]["to"]
        assert all(set(peer) == {"ipBlock"} for peer in peers), name
    annotations = named(objects, "Ingress", "portal-web")["metadata"]["annotations"]
    assert "cert-manager.io/cluster-issuer" in annotations
    for kind in ("ServiceMonitor", "PrometheusRule"):
        (monitoring,) = of_kind(objects, kind)
        assert monitoring["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    for name in ("portal-web", "portal-worker"):
        hpa = named(objects, "HorizontalPodAutoscaler", name)["spec"]
        assert hpa != named(base, "HorizontalPodAutoscaler", name)["spec"]
