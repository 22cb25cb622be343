"""Fixtures of the inventory tests."""

import pytest

from portal.celery import app as celery_app


@pytest.fixture
def eager_retries(monkeypatch):
    """Eager tasks that retry at once (no backoff) and return their failure instead of raising
    it, as a worker would record it: lets a test count the attempts of a retried task."""
    monkeypatch.setitem(celery_app.conf, "task_eager_propagates", False)


@pytest.fixture(scope="session")
def dcgm_prometheus(prometheus_server):
    """A real Prometheus holding the real DCGM scrape and the faulty GPUs of `dcgm_series`."""
    from .dcgm_series import dcgm_series

    return prometheus_server(dcgm_series())
