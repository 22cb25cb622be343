"""The API's throttles apply: per signed-in user and per anonymous address, as a JSON 429."""

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from tests.factories import UserFactory


def _rates(user: str = "1000/minute", anon: str = "1000/minute"):
    from django.conf import settings

    config = settings.REST_FRAMEWORK | {"DEFAULT_THROTTLE_RATES": {"user": user, "anon": anon}}
    return override_settings(REST_FRAMEWORK=config)


def _assert_throttled(response) -> None:
    assert response.status_code == 429
    assert response["Content-Type"] == "application/json"
    error = response.json()["error"]
    assert error["status"] == 429
    assert error["code"] == "throttled"
    assert "throttled" in error["message"].lower()
    assert int(response["Retry-After"]) > 0


@pytest.mark.django_db
def test_a_signed_in_user_is_throttled_on_their_own_count():
    busy, calm = UserFactory(username="busy"), UserFactory(username="calm")
    busy_client, calm_client = APIClient(), APIClient()
    busy_client.force_authenticate(busy)
    calm_client.force_authenticate(calm)
    with _rates(user="3/minute"):
        answers = [busy_client.get("/api/v1/me/").status_code for _ in range(3)]
        over = busy_client.get("/api/v1/me/")
        other = calm_client.get("/api/v1/me/")
    assert answers == [200, 200, 200]
    _assert_throttled(over)
    assert other.status_code == 200


@pytest.mark.django_db
def test_anonymous_callers_are_throttled_per_address():
    client = APIClient()
    with _rates(anon="2/minute"):
        first = [client.get("/api/schema/", REMOTE_ADDR="198.51.100.7") for _ in range(2)]
        over = client.get("/api/schema/", REMOTE_ADDR="198.51.100.7")
        elsewhere = client.get("/api/schema/", REMOTE_ADDR="198.51.100.8")
    assert [r.status_code for r in first] == [200, 200]
    _assert_throttled(over)
    assert elsewhere.status_code == 200


@pytest.mark.django_db
def test_a_forged_forwarded_address_does_not_reset_the_anonymous_count():
    client = APIClient()
    with _rates(anon="1/minute"):
        client.get("/api/schema/", REMOTE_ADDR="198.51.100.7", HTTP_X_FORWARDED_FOR="10.0.0.1")
        again = client.get(
            "/api/schema/", REMOTE_ADDR="198.51.100.7", HTTP_X_FORWARDED_FOR="10.0.0.2"
        )
    _assert_throttled(again)


@pytest.mark.django_db
def test_behind_one_trusted_proxy_the_forwarded_client_address_counts():
    from django.conf import settings

    client = APIClient()
    config = settings.REST_FRAMEWORK | {
        "DEFAULT_THROTTLE_RATES": {"user": "1000/minute", "anon": "1/minute"},
        "NUM_PROXIES": 1,
    }
    with override_settings(REST_FRAMEWORK=config):
        def ask(client_address: str):
            return client.get(
                "/api/schema/", REMOTE_ADDR="10.0.0.9", HTTP_X_FORWARDED_FOR=client_address
            )

        one, two, again = ask("198.51.100.1"), ask("198.51.100.2"), ask("198.51.100.1")
    assert one.status_code == two.status_code == 200
    _assert_throttled(again)
