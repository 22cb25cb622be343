"""A vCluster reached from a laptop: the TLSRoute on the fleet Gateway's passthrough listener
(against the vendored Gateway API schema), the chart values that put the hostname in the
certificate and the exported kubeconfig and let the virtual API server trust Keycloak (against
the chart's values schema), the group bindings inside it, and the connection a person reads:
a kubeconfig whose server is the Gateway and whose user is `kubectl oidc-login`."""

import base64
import dataclasses

import pytest
import yaml

from tenants.workloads.kinds import schemas, vcluster
from tenants.workloads.kinds.base import BuildContext, ExternalAccess, LaunchContext
from tenants.workloads.kinds.vcluster import access

KIND = vcluster.KIND
LAUNCH = LaunchContext(isolation="shared", quota={"cpu": 64})
ISSUER = "https://sso.example.com/realms/ai-factory"
EXPOSED = ExternalAccess(
    vcluster_domain="vc.example.com",
    gateway_namespace="ingress-gateway",
    gateway_name="fleet",
    gateway_listener="tls-passthrough",
    oidc_issuer=ISSUER,
    oidc_client_id="kubernetes",
    oidc_groups_prefix="oidc:",
)
GROUPS = {
    "edit_groups": ("oidc:/tenants/nova/owner", "oidc:/tenants/nova/member"),
    "view_groups": ("oidc:/tenants/nova/viewer",),
}


def build(access=EXPOSED, **more):
    return BuildContext(
        workload_id=41, name="dev", kind="vcluster", tenant_slug="nova",
        namespace="tenant-nova", isolation="shared", access=access, **more,
    )


def built(ctx):
    return KIND.manifests(KIND.validate({}, LAUNCH), ctx)


def values_of(objects):
    (release,) = [m for m in objects if m["kind"] == "HelmRelease"]
    return release["spec"]["values"]


def route_of(objects):
    (route,) = [m for m in objects if m["kind"] == "TLSRoute"]
    return route


def test_an_exposed_vcluster_gets_a_tls_route_on_the_gateways_passthrough_listener():
    objects = built(build(**GROUPS))

    schemas.check_manifests(objects)
    route = route_of(objects)
    assert route["apiVersion"] == "gateway.networking.k8s.io/v1"
    assert route["metadata"]["namespace"] == "tenant-nova"
    assert route["metadata"]["labels"]["portal.ai-factory.io/workload-id"] == "41"
    assert route["spec"] == {
        "parentRefs": [
            {"name": "fleet", "namespace": "ingress-gateway", "sectionName": "tls-passthrough"}
        ],
        "hostnames": ["dev.tenant-nova.vc.example.com"],
        "rules": [{"backendRefs": [{"name": "dev", "port": 443}]}],
    }
    assert (*vcluster.access.TLS_ROUTE,) in KIND.OWNED_KINDS


def test_the_route_schema_check_would_catch_a_route_without_hostnames():
    route = route_of(built(build()))
    del route["spec"]["hostnames"]

    assert schemas.manifest_errors(route) == ["spec: 'hostnames' is a required property"]


def test_exposed_values_name_the_hostname_in_the_certificate_and_the_kubeconfig():
    values = values_of(built(build(**GROUPS)))

    assert schemas.values_errors("vcluster", values) == []
    assert values["controlPlane"]["proxy"]["extraSANs"] == ["dev.tenant-nova.vc.example.com"]
    assert values["exportKubeConfig"] == {
        "context": "dev", "server": "https://dev.tenant-nova.vc.example.com"
    }
    # The chart values the kind always sets are still there.
    assert values["controlPlane"]["distro"]["k8s"]["enabled"] is True
    assert values["controlPlane"]["statefulSet"]["image"]["repository"] == "loft-sh/vcluster-oss"


def test_the_virtual_api_server_trusts_keycloak_with_the_hosts_group_prefix():
    values = values_of(built(build(**GROUPS)))

    assert values["controlPlane"]["distro"]["k8s"]["apiServer"]["extraArgs"] == [
        f"--oidc-issuer-url={ISSUER}",
        "--oidc-client-id=kubernetes",
        "--oidc-username-claim=preferred_username",
        "--oidc-username-prefix=oidc:",
        "--oidc-groups-claim=groups",
        "--oidc-groups-prefix=oidc:",
    ]


def test_the_tenants_groups_are_bound_inside_the_vcluster():
    values = values_of(built(build(**GROUPS)))

    bindings = list(yaml.safe_load_all(values["experimental"]["deploy"]["vcluster"]["manifests"]))
    by_name = {b["metadata"]["name"]: b for b in bindings}
    assert by_name["portal-tenant-edit"]["roleRef"]["name"] == "cluster-admin"
    assert [s["name"] for s in by_name["portal-tenant-edit"]["subjects"]] == list(
        GROUPS["edit_groups"]
    )
    assert by_name["portal-tenant-view"]["roleRef"]["name"] == "view"
    assert by_name["portal-tenant-view"]["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
         "name": "oidc:/tenants/nova/viewer"}
    ]
    for binding in bindings:
        assert binding["kind"] == "ClusterRoleBinding"


def test_without_a_realm_the_vcluster_is_exposed_but_keeps_certificates_only():
    values = values_of(built(build(dataclasses.replace(EXPOSED, oidc_issuer=""), **GROUPS)))

    assert schemas.values_errors("vcluster", values) == []
    assert "apiServer" not in values["controlPlane"]["distro"]["k8s"]
    assert "experimental" not in values
    assert values["exportKubeConfig"]["server"] == "https://dev.tenant-nova.vc.example.com"


def test_not_exposed_no_route_and_the_in_cluster_server():
    objects = built(build(ExternalAccess()))

    assert [m["kind"] for m in objects] == ["HelmRepository", "HelmRelease"]
    values = values_of(objects)
    assert "proxy" not in values["controlPlane"]
    assert values["exportKubeConfig"]["server"] == "https://dev.tenant-nova.svc:443"


def test_a_listener_port_other_than_443_is_in_the_server_url():
    ctx = build(dataclasses.replace(EXPOSED, gateway_port=6443))

    assert values_of(built(ctx))["exportKubeConfig"]["server"] == (
        "https://dev.tenant-nova.vc.example.com:6443"
    )


# Connection ------------------------------------------------------------------------------------

CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").decode()
EXPORTED = yaml.safe_dump(
    {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "dev", "cluster": {
            "server": "https://dev.tenant-nova.vc.example.com",
            "certificate-authority-data": CA}}],
        "users": [{"name": "dev", "user": {"client-key-data": "c2VjcmV0"}}],
    }
)


def objects_with_secret():
    secret = {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "vc-dev"},
        "data": {"config": base64.b64encode(EXPORTED.encode()).decode()},
    }
    return {("v1", "Secret", "vc-dev"): secret}


def saved_kubeconfig(connection):
    (command,) = [c for label, c in connection.commands if label.startswith("Save this")]
    head, _, rest = command.partition("\n")
    assert head == "cat > vcluster-dev.yaml <<'EOF'"
    body, _, tail = rest.rpartition("EOF")
    assert tail == ""
    return yaml.safe_load(body)


def test_the_connection_gives_a_kubeconfig_that_signs_in_with_kubelogin():
    connection = KIND.connection(objects_with_secret(), KIND.validate({}, LAUNCH), build())

    items = dict(connection.items)
    assert items["API server"] == "https://dev.tenant-nova.vc.example.com"
    config = saved_kubeconfig(connection)
    (cluster,) = config["clusters"]
    assert cluster["cluster"] == {
        "server": "https://dev.tenant-nova.vc.example.com", "certificate-authority-data": CA
    }
    (user,) = config["users"]
    exec_ = user["user"]["exec"]
    assert exec_["command"] == "kubectl"
    assert exec_["args"][:2] == ["oidc-login", "get-token"]
    assert f"--oidc-issuer-url={ISSUER}" in exec_["args"]
    assert "--oidc-client-id=kubernetes" in exec_["args"]
    assert exec_["apiVersion"] == "client.authentication.k8s.io/v1"
    assert exec_["interactiveMode"] == "IfAvailable"
    assert config["current-context"] == "dev"
    # The admin credentials of the exported kubeconfig never reach the page.
    assert "c2VjcmV0" not in repr(connection)
    commands = dict(connection.commands)
    assert commands["Sign in with your Keycloak account and use it"] == (
        "kubectl --kubeconfig vcluster-dev.yaml get namespaces"
    )
    assert "kubectl krew install oidc-login" in commands.values()


def test_before_the_kubeconfig_secret_exists_the_kubeconfig_has_no_ca():
    connection = KIND.connection({}, KIND.validate({}, LAUNCH), build())

    (cluster,) = saved_kubeconfig(connection)["clusters"]
    assert cluster["cluster"] == {"server": "https://dev.tenant-nova.vc.example.com"}


def test_exposed_without_a_realm_the_admin_kubeconfig_is_used_from_outside():
    ctx = build(dataclasses.replace(EXPOSED, oidc_client_id=""))
    connection = KIND.connection(objects_with_secret(), KIND.validate({}, LAUNCH), ctx)

    commands = dict(connection.commands)
    assert "Download the kubeconfig" in commands
    assert commands["Use it from your machine"] == (
        "kubectl --kubeconfig vcluster-dev.yaml get namespaces"
    )
    assert not any("oidc-login" in c for c in commands.values())


@pytest.mark.parametrize(
    ("status", "problem"),
    [
        (None, ""),
        ({"parents": [{"conditions": [{"type": "Accepted", "status": "True"}]}]}, ""),
        (
            {"parents": [{"conditions": [{"type": "Accepted", "status": "False",
                                          "reason": "NotAllowedByListeners",
                                          "message": "namespace not allowed"}]}]},
            "NotAllowedByListeners: namespace not allowed",
        ),
    ],
)
def test_the_gateways_refusal_of_the_route_is_read_back(status, problem):
    route = {"metadata": {"name": "dev"}, **({"status": status} if status else {})}

    assert access.route_problem(route) == problem
