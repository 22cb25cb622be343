"""Service accounts: a tenant's owners create, change, disable and delete them and issue and
revoke their scoped tokens, in the pages and the API; each decision audited; a service account
never signs in in the browser and holds no role outside its one tenant."""

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.test import Client, RequestFactory
from rest_framework.test import APIClient

from core.models import ApiToken, AuditEvent
from tenants.access import service_accounts as services
from tenants.access import services as access_services
from tenants.models import Membership, ServiceAccount
from tests.factories import TEST_PASSWORD

pytestmark = pytest.mark.django_db

User = get_user_model()
API = "/api/v1/tenants/acme/service-accounts/"
PAGE = "/t/acme/service-accounts/"


@pytest.fixture
def ci(tenant_owner, tenant):
    return services.service_account_create(actor=tenant_owner, tenant=tenant, name="ci",
                                           role="member", scopes=["read"])


def _bearer(raw: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {raw}"}


def test_an_owner_creates_one_backed_by_a_member_user_and_it_is_audited(ci, tenant):
    assert ci.user.username == "sa.acme.ci"
    assert not ci.user.has_usable_password()
    assert Membership.objects.get(user=ci.user).tenant == tenant
    assert Membership.objects.get(user=ci.user).role == "member"
    event = AuditEvent.objects.get(action="service_account.create")
    assert event.changes["name"] == "ci" and event.changes["scopes"] == ["read"]


@pytest.mark.parametrize("name", ["CI", "ci_deploy", "-ci", "x" * 64, ""])
def test_a_name_that_is_no_dns_label_is_a_field_error(tenant_owner, tenant, name):
    with pytest.raises(ValidationError) as refused:
        services.service_account_create(actor=tenant_owner, tenant=tenant, name=name)

    assert "name" in refused.value.message_dict
    assert not ServiceAccount.objects.exists()


def test_members_and_other_tenants_owners_cannot_manage_them(
    ci, tenant, tenant_member, other_tenant_member
):
    for actor in (tenant_member, other_tenant_member):
        with pytest.raises(PermissionDenied):
            services.service_account_create(actor=actor, tenant=tenant, name="rogue")
        with pytest.raises(PermissionDenied):
            services.service_account_delete(actor=actor, account=ci)
    assert list(ServiceAccount.objects.values_list("name", flat=True)) == ["ci"]


def test_it_never_signs_in_nor_joins_another_tenant_nor_gets_a_platform_role(
    ci, tenant_owner, other_tenant, platform_admin
):
    ci.user.set_password(TEST_PASSWORD)  # even with a password an admin set by hand
    ci.user.save()

    assert authenticate(RequestFactory().post("/accounts/login/"), username="sa.acme.ci",
                        password=TEST_PASSWORD) is None
    login = Client().post("/accounts/login/", {"username": "sa.acme.ci",
                                               "password": TEST_PASSWORD})
    assert "_auth_user_id" not in login.client.session
    with pytest.raises(ValidationError):
        access_services.role_grant(actor=platform_admin, user=ci.user, role="finance")
    membership = Membership.objects.get(user=ci.user)
    with pytest.raises(ValidationError):
        access_services.tenant_member_change_role(actor=tenant_owner, membership=membership,
                                                  role="owner")


def test_its_token_works_within_its_scopes_and_disabling_stops_it(ci, tenant_owner):
    issued = services.service_account_token_create(actor=tenant_owner, account=ci, name="gh",
                                                   scopes=["read"])
    api = APIClient()

    assert api.get("/api/v1/me/", **_bearer(issued.raw)).json()["username"] == "sa.acme.ci"
    launch = api.post("/api/v1/workloads/", {}, format="json", **_bearer(issued.raw))
    assert launch.status_code == 403
    assert launch.json()["error"]["code"] == "missing_scope"
    # A token cannot make itself more tokens: its owners issue them.
    made = api.post("/api/v1/tokens/", {"name": "more", "scopes": ["read"]}, format="json",
                    **_bearer(services.service_account_token_create(
                        actor=tenant_owner, account=ci, name="admin", scopes=["admin"]).raw))
    assert made.status_code == 403
    assert not ApiToken.objects.filter(name="more").exists()

    services.service_account_set_disabled(actor=tenant_owner, account=ci, disabled=True)

    assert api.get("/api/v1/me/", **_bearer(issued.raw)).status_code == 401
    actions = list(AuditEvent.objects.order_by("id").values_list("action", flat=True))
    assert actions[-1] == "service_account.disable"
    assert actions.count("api_token.create") == 2


def test_the_api_creates_lists_issues_revokes_and_deletes(api_client, tenant_owner, tenant):
    api_client.force_login(tenant_owner)

    created = api_client.post(API, {"name": "deploy", "role": "viewer", "scopes": ["read"]},
                              format="json")
    assert created.status_code == 201, created.content
    account = created.json()
    assert (account["username"], account["role"], account["active"]) == (
        "sa.acme.deploy", "viewer", True)
    tokens = f"{API}{account['id']}/tokens/"
    issued = api_client.post(tokens, {"name": "gl", "scopes": ["read", "billing:read"]},
                             format="json")
    assert issued.status_code == 201, issued.content
    assert issued.json()["token"].startswith("afp_")
    assert issued.json()["scopes"] == ["read", "billing:read"]
    APIClient().get("/api/v1/me/", **_bearer(issued.json()["token"]))

    listed = api_client.get(API).json()["results"]
    assert [a["name"] for a in listed] == ["deploy"]
    [token] = listed[0]["tokens"]
    assert token["last_used_at"] is not None and "token" not in token

    assert api_client.delete(f"{tokens}{token['id']}/").status_code == 204
    assert ApiToken.objects.get(pk=token["id"]).revoked_at is not None
    assert api_client.delete(f"{API}{account['id']}/").status_code == 204
    assert not User.objects.filter(username="sa.acme.deploy").exists()
    assert {"service_account.create", "api_token.create", "api_token.revoke",
            "service_account.delete"} <= set(AuditEvent.objects.values_list("action", flat=True))


@pytest.mark.parametrize("body", [
    {"name": "Bad Name"}, {"name": "ok", "role": "owner"}, {"name": "ok", "scopes": ["root"]},
    {"name": "ci"}, {"name": "x" * 64}, {"name": "ok", "keycloak_client_id": "c" * 256},
])
def test_bad_input_is_a_field_error_never_a_500(api_client, tenant_owner, ci, body):
    api_client.force_login(tenant_owner)

    response = api_client.post(API, body, format="json")

    assert response.status_code == 400, response.content
    assert response.json()["error"]["fields"]


def test_another_tenants_service_account_is_a_404(api_client, other_tenant_member, ci):
    api_client.force_login(other_tenant_member)

    assert api_client.get(f"{API}{ci.pk}/").status_code == 404
    assert api_client.delete(f"/api/v1/tenants/globex/service-accounts/{ci.pk}/").status_code \
        in (403, 404)
    assert ServiceAccount.objects.filter(pk=ci.pk).exists()


def test_the_page_creates_one_and_issues_a_token_shown_once(
    login, tenant_owner, tenant, django_assert_max_num_queries
):
    client = login(tenant_owner)

    created = client.post(PAGE, {"name": "nightly", "role": "member", "scopes": ["read"]})
    assert created.status_code == 302
    account = ServiceAccount.objects.get(name="nightly")
    issued = client.post(f"{PAGE}{account.pk}/tokens/", {"name": "jenkins",
                                                         "expires_in_days": "30",
                                                         "scopes": ["workloads"]})
    assert issued.status_code == 200
    raw = issued.context["issued"].raw
    assert raw in issued.content.decode()
    for n in range(3):
        services.service_account_token_create(actor=tenant_owner, account=account,
                                              name=f"t{n}", scopes=["read"])
        services.service_account_create(actor=tenant_owner, tenant=tenant, name=f"sa-{n}")

    with django_assert_max_num_queries(20):
        page = client.get(PAGE)

    html = page.content.decode()
    assert raw not in html and "jenkins" in html and "never" in html
    assert "sa.acme.nightly" in html and "workloads" in html
    assert "sa.acme" not in client.get("/t/acme/members/").content.decode()


def test_the_page_shows_field_errors_and_members_cannot_act(login, tenant_owner, tenant_member):
    refused = login(tenant_owner).post(PAGE, {"name": "Not A Label", "role": "member"})
    assert refused.status_code == 400
    assert "is-invalid" in refused.content.decode()
    assert login(tenant_member).post(PAGE, {"name": "ok", "role": "member"}).status_code == 403
    assert not ServiceAccount.objects.exists()


def _grow(owner, tenant, start: int, n: int) -> None:
    for i in range(start, start + n):
        account = services.service_account_create(actor=owner, tenant=tenant, name=f"bot-{i}")
        for t in range(2):
            services.service_account_token_create(actor=owner, account=account, name=f"t{t}",
                                                  scopes=["read"])


def test_the_list_api_and_page_read_a_fixed_number_of_queries(api_client, login, tenant_owner,
                                                               tenant):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def counts() -> tuple[int, int]:
        api_client.force_login(tenant_owner)
        with CaptureQueriesContext(connection) as api:
            assert api_client.get(API).status_code == 200
        with CaptureQueriesContext(connection) as page:
            assert login(tenant_owner).get(PAGE).status_code == 200
        return len(api), len(page)

    _grow(tenant_owner, tenant, 0, 1)
    counts()  # the first visit writes the session's current tenant
    small = counts()
    _grow(tenant_owner, tenant, 1, 4)

    assert counts() == small


# --- linking a Keycloak client: platform admins only -------------------------------------------


@pytest.fixture
def globex_ci(other_tenant, platform_admin):
    """Another tenant's CI account, its Keycloak client linked by a platform admin."""
    return services.service_account_create(actor=platform_admin, tenant=other_tenant, name="ci",
                                           keycloak_client_id="globex-ci")


def test_an_owner_cannot_claim_a_keycloak_client_nor_learn_which_are_taken(
    api_client, tenant_owner, ci, globex_ci
):
    api_client.force_login(tenant_owner)
    refused = {
        "taken": api_client.post(API, {"name": "hijack", "keycloak_client_id": "globex-ci"},
                                 format="json"),
        "free": api_client.post(API, {"name": "mine", "keycloak_client_id": "acme-ci"},
                                format="json"),
        "change": api_client.patch(f"{API}{ci.pk}/", {"keycloak_client_id": "globex-ci"},
                                   format="json"),
    }

    for response in refused.values():
        assert response.status_code == 400, response.content
        assert response.json()["error"]["fields"] == {"keycloak_client_id": [
            services.LINK_REFUSED]}
    assert list(ServiceAccount.objects.order_by("pk").values_list(
        "tenant__slug", "name", "keycloak_client_id")) == [
        ("acme", "ci", None), ("globex", "ci", "globex-ci")]
    assert not AuditEvent.objects.filter(action="service_account.update").exists()
    # The client id it holds is shown, and sending it back unchanged is no change.
    same = api_client.patch(f"{API}{ci.pk}/", {"keycloak_client_id": None, "role": "viewer"},
                            format="json")
    assert same.status_code == 200, same.content
    assert same.json()["keycloak_client_id"] is None


def test_a_platform_admin_links_a_keycloak_client_in_the_api_audited(
    api_client, platform_admin, ci, globex_ci
):
    api_client.force_login(platform_admin)

    linked = api_client.patch(f"{API}{ci.pk}/", {"keycloak_client_id": "acme-ci"},
                              format="json")
    taken = api_client.patch(f"{API}{ci.pk}/", {"keycloak_client_id": "globex-ci"},
                             format="json")

    assert linked.status_code == 200, linked.content
    assert linked.json()["keycloak_client_id"] == "acme-ci"
    assert taken.status_code == 400
    assert "keycloak_client_id" in taken.json()["error"]["fields"]
    event = AuditEvent.objects.get(action="service_account.update")
    assert event.actor == platform_admin and event.tenant_slug == "acme"
    assert event.changes == {"keycloak_client_id": [None, "acme-ci"]}


def test_the_page_offers_the_keycloak_client_to_platform_admins_only(
    login, tenant_owner, platform_admin, tenant
):
    owner = login(tenant_owner)
    page = owner.get(PAGE).content.decode()
    assert 'name="keycloak_client_id"' not in page
    assert "ask a platform admin to link the client" in page

    created = owner.post(PAGE, {"name": "nightly", "role": "member", "scopes": ["read"],
                                "keycloak_client_id": "someone-elses-ci"})
    assert created.status_code == 302
    assert ServiceAccount.objects.get(name="nightly").keycloak_client_id is None

    admin_page = login(platform_admin).get(PAGE).content.decode()
    assert 'name="keycloak_client_id"' in admin_page
    created = login(platform_admin).post(PAGE, {"name": "gitlab", "role": "member",
                                                "scopes": ["read"],
                                                "keycloak_client_id": "acme-gitlab"})
    assert created.status_code == 302
    linked = ServiceAccount.objects.get(name="gitlab")
    assert linked.keycloak_client_id == "acme-gitlab"
    shown = login(tenant_owner).get(PAGE).content.decode()
    assert "<code>acme-gitlab</code>" in shown and 'name="keycloak_client_id"' not in shown


def test_platform_admins_link_a_keycloak_client_in_django_admin_audited(
    login, platform_admin, tenant_owner, ci, globex_ci
):
    change = f"/admin/tenants/serviceaccount/{ci.pk}/change/"
    client = login(platform_admin)

    listed = client.get("/admin/tenants/serviceaccount/")
    assert listed.status_code == 200
    assert "globex-ci" in listed.content.decode()
    taken = client.post(change, {"keycloak_client_id": "globex-ci"})
    assert taken.status_code == 200  # the form again, with its field error
    saved = client.post(change, {"keycloak_client_id": "acme-ci"})
    assert saved.status_code == 302, saved.content.decode()[:2000]

    ci.refresh_from_db()
    assert ci.keycloak_client_id == "acme-ci"
    event = AuditEvent.objects.get(action="service_account.update")
    assert event.actor == platform_admin
    assert event.changes == {"keycloak_client_id": [None, "acme-ci"]}
    # A tenant owner has no Django admin.
    owner = login(tenant_owner)
    assert owner.post(change, {"keycloak_client_id": "globex-ci"}).status_code in (302, 403)
    ci.refresh_from_db()
    assert ci.keycloak_client_id == "acme-ci"


def test_the_service_refuses_an_owners_link_whatever_the_interface(tenant_owner, ci, tenant):
    with pytest.raises(ValidationError) as refused:
        services.service_account_update(actor=tenant_owner, account=ci,
                                        keycloak_client_id="acme-ci", change_client_id=True)
    assert refused.value.message_dict == {"keycloak_client_id": [services.LINK_REFUSED]}
    with pytest.raises(ValidationError):
        services.service_account_create(actor=tenant_owner, tenant=tenant, name="other",
                                        keycloak_client_id="acme-ci")
    assert list(ServiceAccount.objects.values_list("name", "keycloak_client_id")) == [
        ("ci", None)]
