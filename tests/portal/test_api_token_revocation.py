"""A revoked personal API token is refused at once, on every HTTP method, over real HTTP.

Probed for issue 8: the token is looked up (digest, revoked_at, expiry, user active) on every
request, with no cache and no shortcut for safe methods or OPTIONS; this pins that down for
every method and several kinds of endpoint, including the revoking request's own token.
"""

import pytest
import requests

from core.models import ApiToken
from core.tokens import api_token_create

pytestmark = pytest.mark.django_db(transaction=True)

METHODS = ["GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE"]
PATHS = [
    "/api/v1/me/",
    "/api/v1/tokens/",
    "/api/v1/tenants/",
    "/api/v1/tenants/acme/",
    "/api/v1/nodes/",
]


def test_a_token_revoked_through_the_api_is_refused_on_every_method(
    live_server, platform_admin, tenant
):
    issued = api_token_create(user=platform_admin, name="ci")
    auth = {"Authorization": f"Bearer {issued.raw}"}
    with requests.Session() as http:
        assert http.get(f"{live_server.url}/api/v1/me/", headers=auth, timeout=10).ok
        assert http.options(f"{live_server.url}/api/v1/tenants/", headers=auth, timeout=10).ok

        # The token revokes itself; the very next request with it is refused.
        revoke = http.delete(
            f"{live_server.url}/api/v1/tokens/{issued.token.pk}/", headers=auth, timeout=10
        )
        assert revoke.status_code == 204

        answers = {
            (method, path): http.request(
                method, f"{live_server.url}{path}", headers=auth, json={}, timeout=10
            )
            for path in PATHS
            for method in METHODS
        }
    assert {key: r.status_code for key, r in answers.items() if r.status_code != 401} == {}
    for (method, _), response in answers.items():
        assert response.headers["WWW-Authenticate"] == "Bearer"
        if method != "HEAD":
            assert response.json()["error"]["code"] == "authentication_failed"
    assert ApiToken.objects.get(pk=issued.token.pk).revoked_at is not None
