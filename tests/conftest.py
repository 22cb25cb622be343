"""Shared fixtures: role fixtures, API clients, and the real services the suite uses."""

import os
import threading
import weakref

import pytest
from django.db.backends.signals import connection_created
from rest_framework.test import APIClient

from tenants.models import Membership, RoleAssignment

from .factories import MembershipFactory, RoleAssignmentFactory, TenantFactory, UserFactory
from .support.flush import delete_instead_of_truncate
from .support.scheduling import slowest_modules_first

# Each real part the suite starts has its own fixture module.
pytest_plugins = [
    "tests.support.fixtures_kube",
    "tests.support.fixtures_browser",
    "tests.support.fixtures_oidc",
    "tests.support.fixtures_prometheus",
    "tests.support.fixtures_celery",
    "tests.support.fixtures_redis",  # redis_url, own_redis; the suite's Redis flushed at the end
]


def pytest_collection_modifyitems(config, items) -> None:
    slowest_modules_first(items)


@pytest.fixture(scope="session", autouse=True)
def _suite_runs_on_postgresql(django_db_blocker):
    """The suite is meant for PostgreSQL (`make test`); say so instead of passing on SQLite."""
    from django.db import connection

    if connection.vendor != "postgresql" and not os.environ.get("ALLOW_SQLITE_TESTS"):
        pytest.exit(
            "Tests run on PostgreSQL: use `make test`, or set DATABASE_URL=postgres://…",
            returncode=2,
        )


@pytest.fixture(scope="session", autouse=True)
def _test_database_commits_without_waiting_for_the_disk(django_db_setup, django_db_blocker):
    """The processes a test starts (Celery workers, beat, gunicorn) commit to the test database
    as the test process does (portal/settings/test.py): without waiting for the disk."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        name = connection.ops.quote_name(connection.settings_dict["NAME"])
        cursor.execute(f"ALTER DATABASE {name} SET synchronous_commit TO off")


@pytest.fixture(scope="session", autouse=True)
def _test_database_emptied_with_delete(django_db_setup, django_db_blocker):
    """Between the tests that commit, the tables are emptied with DELETE (support/flush.py)."""
    from django.db import connection

    if connection.vendor == "postgresql":
        with django_db_blocker.unblock():
            delete_instead_of_truncate(connection)


# Every database connection the test process opens. asgiref's context-local `connections` gives
# code running in another context (Playwright's greenlet, subtests) a connection of its own on
# the main thread, which nothing closes: the test database could not be dropped at the end.
_opened_connections: weakref.WeakSet = weakref.WeakSet()


def _track_connection(sender, connection, **kwargs) -> None:
    _opened_connections.add(connection)


connection_created.connect(_track_connection, dispatch_uid="tests_track_connections")


@pytest.fixture(scope="session", autouse=True)
def _close_every_connection_before_the_test_database_goes(django_db_setup):
    yield
    for wrapper in list(_opened_connections):
        if wrapper._thread_ident == threading.get_ident():  # other threads close their own
            wrapper.close()


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Each test starts with an empty cache: the API's throttle counters are kept there."""
    from django.core.cache import cache

    cache.clear()
    yield


@pytest.fixture
def tenant(db):
    return TenantFactory(slug="acme", name="Acme Labs")


@pytest.fixture
def other_tenant(db):
    return TenantFactory(slug="globex", name="Globex Corp")


def _member(tenant, role: str, username: str):
    return MembershipFactory(tenant=tenant, role=role, user=UserFactory(username=username)).user


@pytest.fixture
def tenant_owner(tenant):
    return _member(tenant, Membership.Role.OWNER, "owner")


@pytest.fixture
def tenant_member(tenant):
    return _member(tenant, Membership.Role.MEMBER, "member")


@pytest.fixture
def tenant_viewer(tenant):
    return _member(tenant, Membership.Role.VIEWER, "viewer")


@pytest.fixture
def other_tenant_member(other_tenant):
    return _member(other_tenant, Membership.Role.MEMBER, "outsider")


@pytest.fixture
def finance(db):
    return RoleAssignmentFactory(
        user=UserFactory(username="finance"), role=RoleAssignment.Role.FINANCE
    ).user


@pytest.fixture
def platform_admin(db):
    return RoleAssignmentFactory(
        user=UserFactory(username="platform-admin"), role=RoleAssignment.Role.PLATFORM_ADMIN
    ).user


@pytest.fixture
def no_role_user(db):
    return UserFactory(username="newcomer")


@pytest.fixture
def api_client() -> APIClient:
    return APIClient()


@pytest.fixture
def login(client):
    """Sign `user` in on the Django test client and return the client."""

    def _login(user):
        client.force_login(user, backend="django.contrib.auth.backends.ModelBackend")
        return client

    return _login
