"""The bearer-token tests' tenant to belong to, and an API client without a session."""

import pytest
from rest_framework.test import APIClient

from tests.factories import TenantFactory


@pytest.fixture
def acme(transactional_db):
    return TenantFactory(slug="acme", name="Acme Labs")


@pytest.fixture
def client():
    return APIClient()
