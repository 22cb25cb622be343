"""Fixtures shared by the billing API's tests."""

import pytest


@pytest.fixture
def as_user(api_client):
    """`as_user(user)`: the API client, authenticated as `user` (no session, no CSRF)."""

    def _as(user):
        api_client.force_authenticate(user)
        return api_client

    return _as
