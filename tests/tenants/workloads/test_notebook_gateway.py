"""The simulated fleet's gateway in front of a notebook: Envoy Gateway's OIDC sign-in (the
portal's session standing in for Keycloak's) and its JWT authorization by the tenant's groups,
then the notebook's app while its pod is ready and Envoy's 503 while it is stopped. The
objects are the notebook kind's own, applied to the simulated fleet."""

from urllib.parse import parse_qs, urlsplit

import pytest
from django.conf import settings as django_settings

from tenants.workloads.kinds.base import BuildContext, Exposure, LaunchContext, OidcGate
from tenants.workloads.registry import KINDS

DOMAIN = "notebooks.example.com"
IMAGES = {
    "pytorch": {"label": "JupyterLab, PyTorch", "interface": "jupyterlab",
                "image": "quay.io/jupyter/pytorch-notebook:cuda12-2025-11-10"},
    "vscode": {"label": "VS Code", "interface": "code-server",
               "image": "docker.io/codercom/code-server:4.105.1"},
}
HOST = f"nb-lab-acme.{DOMAIN}"
URL = f"/{django_settings.SIMULATED_GATEWAY_PATH}/{HOST}"


def _notebook(tenant, *, image: str = "pytorch", running: bool = True) -> list[dict]:
    """The notebook `lab`'s objects, published with the tenant's edit groups allowed in."""
    kind = KINDS["notebook"].module
    launch = LaunchContext(isolation="shared", quota={}, catalog={"notebook_images": IMAGES},
                           person="member")
    spec = kind.validate({"image": image, "cpu": 2, "memory_gib": 8, "running": running}, launch)
    groups = tenant.keycloak_groups(prefix=django_settings.OIDC_GROUP_PREFIX)["edit"]
    ctx = BuildContext(
        workload_id=7, name="lab", kind="notebook", tenant_slug=tenant.slug,
        namespace=tenant.namespace, isolation="shared",
        exposure=Exposure(
            gateway_namespace="envoy-gateway-system", gateway_name="ai-factory",
            listener="https", domain=DOMAIN,
            oidc=OidcGate(issuer="https://portal.example.com", client_id="notebooks",
                          client_secret_name="portal-notebook-oidc",
                          jwks_uri="https://portal.example.com/jwks",
                          allowed_groups=tuple(groups)),
        ),
    )
    return kind.manifests(spec, ctx)


@pytest.fixture
def notebook(tenant, simulated_gateway, fleet_clock, settings):
    """A running JupyterLab notebook, its pod ready."""
    settings.FLEET_SIMULATED_READY_SECONDS = 10
    simulated_gateway.apply(manifests=_notebook(tenant))
    fleet_clock.advance(20)
    return fleet_clock


@pytest.mark.django_db
def test_someone_not_signed_in_is_sent_to_the_portals_sign_in_and_back(notebook, client):
    response = client.get(f"{URL}/lab/tree/work?reset")

    assert response.status_code == 302
    where = urlsplit(response["Location"])
    assert where.path == "/accounts/login/"
    assert parse_qs(where.query)["next"] == [f"{URL}/lab/tree/work?reset"]


@pytest.mark.django_db
@pytest.mark.parametrize("who", ["tenant_owner", "tenant_member"])
def test_an_owner_or_member_gets_the_notebooks_jupyterlab(notebook, client, request, who):
    client.force_login(request.getfixturevalue(who))

    page = client.get(f"{URL}/lab")

    assert page.status_code == 200
    assert page.templates[0].name == "demo/notebook_jupyterlab.html"
    body = page.content.decode()
    for shown in ("lab - JupyterLab", "quay.io/jupyter/pytorch-notebook:cuda12-2025-11-10",
                  "/home/jovyan", "Python 3 (ipykernel)"):
        assert shown in body
    assert client.get(f"{URL}/api").json() == {"version": "2.15.0"}


@pytest.mark.django_db
@pytest.mark.parametrize("who", ["tenant_viewer", "other_tenant_member", "platform_admin"])
def test_someone_signed_in_outside_the_tenants_edit_groups_is_denied_as_envoys_rbac_does(
    notebook, client, request, who
):
    client.force_login(request.getfixturevalue(who))

    denied = client.get(f"{URL}/lab")

    assert denied.status_code == 403
    assert denied["Content-Type"].startswith("text/plain")
    assert denied.content == b"RBAC: access denied"


@pytest.mark.django_db
def test_a_stopped_notebook_has_no_healthy_upstream_and_starting_it_brings_it_back(
    tenant, simulated_gateway, notebook, client, tenant_member
):
    client.force_login(tenant_member)
    simulated_gateway.apply(manifests=_notebook(tenant, running=False))

    stopped = client.get(f"{URL}/lab")
    simulated_gateway.apply(manifests=_notebook(tenant))
    starting = client.get(f"{URL}/lab")
    notebook.advance(20)
    started = client.get(f"{URL}/lab")

    assert (stopped.status_code, stopped.content) == (503, b"no healthy upstream")
    assert stopped["Content-Type"].startswith("text/plain")
    assert starting.status_code == 503
    assert started.status_code == 200


@pytest.mark.django_db
def test_a_vs_code_notebook_shows_code_server(
    tenant, simulated_gateway, fleet_clock, settings, client, tenant_member
):
    settings.FLEET_SIMULATED_READY_SECONDS = 10
    simulated_gateway.apply(manifests=_notebook(tenant, image="vscode"))
    fleet_clock.advance(20)
    client.force_login(tenant_member)

    page = client.get(f"{URL}/")

    assert page.status_code == 200
    assert page.templates[0].name == "demo/notebook_code_server.html"
    body = page.content.decode()
    assert "docker.io/codercom/code-server:4.105.1" in body and "/home/coder" in body
    assert client.get(f"{URL}/healthz").json()["status"] == "alive"


@pytest.mark.django_db
def test_an_unknown_hostname_has_no_route(simulated_gateway, client, tenant_member):
    client.force_login(tenant_member)

    missing = client.get(f"/{django_settings.SIMULATED_GATEWAY_PATH}/nb-x-acme.{DOMAIN}/")

    assert missing.status_code == 404
