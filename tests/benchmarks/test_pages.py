"""Benchmarks of the busiest pages and endpoints on the demo data (`make bench`).

Excluded from `make test` (marker `bench`); they measure speed, they do not gate it.
"""

from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from tenants.models import Tenant

pytestmark = [pytest.mark.bench, pytest.mark.django_db]


@pytest.fixture
def demo(django_user_model):
    call_command("load_demo", stdout=StringIO())
    return {u.username: u for u in django_user_model.objects.filter(
        username__in=["olivia", "fiona", "adam"])}


def _signed_in(user) -> Client:
    client = Client()
    client.force_login(user, backend="django.contrib.auth.backends.ModelBackend")
    return client


def test_bench_tenant_dashboard(benchmark, demo):
    client = _signed_in(demo["olivia"])
    url = f"/t/{Tenant.objects.get(slug='helix').slug}/"
    response = benchmark(client.get, url)
    assert response.status_code == 200


def test_bench_fleet_overview(benchmark, demo):
    client = _signed_in(demo["adam"])
    response = benchmark(client.get, "/fleet/")
    assert response.status_code == 200


def test_bench_api_me(benchmark, demo):
    client = _signed_in(demo["olivia"])
    response = benchmark(client.get, "/api/v1/me/")
    assert response.status_code == 200
