"""Fixtures for the tenants tests: quota requests in each state, the simulated fleet."""

import pytest

from tenants.quota import services as quota_requests
from tests.factories import QuotaFactory


@pytest.fixture
def submit(tenant, tenant_member):
    """`submit(lines={"gpu:nvidia-h200": 8}, ...)` files a quota request through the service."""

    def _submit(
        lines=None, *, by=None, target=None, justification="Fine-tune a 70B model.", ends_on=None
    ):
        lines = lines or {"gpu:nvidia-h100-80gb": 8}
        return quota_requests.quota_request_create(
            tenant=target or tenant,
            requested_by=by or tenant_member,
            lines=[{"resource": r, "amount": a} for r, a in lines.items()],
            justification=justification,
            ends_on=ends_on,
        )

    return _submit


@pytest.fixture
def granted(tenant):
    """The tenant already holds 8 H100 GPUs and 64 vCPUs."""
    return [
        QuotaFactory(tenant=tenant, resource="gpu:nvidia-h100-80gb", limit=8),
        QuotaFactory(tenant=tenant, resource="cpu", limit=64),
    ]
