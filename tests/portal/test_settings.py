"""Production mode: refuses to start without secrets, and `check --deploy` is clean."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION_ENV = {
    "PORTAL_ENV": "production",
    "SECRET_KEY": "k" * 10 + "Zq8!vR2#pL5@wN9$xT4%mB7^cF1&hJ3*dG6(sK0)",
    "ALLOWED_HOSTS": "portal.example.com",
    "SEALING_KEYS": "x" * 43 + "=",
    "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/portal",
    "CELERY_BROKER_URL": "redis://127.0.0.1:6379/0",
    "CACHE_URL": "rediscache://127.0.0.1:6379/2",
}


def _manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    # Test-only switches (async-unsafe for Playwright, DEBUG) are not part of production.
    test_only = {"DEBUG", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    clean = {
        k: v for k, v in os.environ.items() if k not in PRODUCTION_ENV and k not in test_only
    }
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=clean | env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_is_clean_in_production():
    result = _manage("check", "--deploy", "--fail-level", "WARNING", env=PRODUCTION_ENV)
    assert result.returncode == 0, result.stderr
    assert "System check identified no issues" in result.stdout


KEYCLOAK_ONLY = {
    "OIDC_ISSUER_URL": "https://sso.example.com/realms/ai-factory",
    "OIDC_RP_CLIENT_ID": "portal",
    "OIDC_RP_CLIENT_SECRET": "Zq8vR2pL5wN9xT4mB7cF1hJ3dG6sK0",
    "LOCAL_LOGIN_ENABLED": "false",
    "KEYCLOAK_DIRECTORY_CLIENT_ID": "portal-directory",
    "KEYCLOAK_DIRECTORY_CLIENT_SECRET": "Mv3xQ8rT1wY6zB9cD2fG5hJ7kL0nP4",
}


def test_check_deploy_is_clean_in_production_signing_in_with_keycloak_only():
    result = _manage("check", "--deploy", "--fail-level", "WARNING",
                     env=PRODUCTION_ENV | KEYCLOAK_ONLY)
    assert result.returncode == 0, result.stderr
    assert "System check identified no issues" in result.stdout


# The production settings themselves: the test settings (which the suite's environment names)
# publish no notebooks.
NOTEBOOKS = {"DJANGO_SETTINGS_MODULE": "portal.settings",
             "NOTEBOOK_DOMAIN": "notebooks.example.com"}


def test_check_deploy_warns_when_notebooks_sign_in_without_the_client_secret():
    notebooks = NOTEBOOKS | {"NOTEBOOK_OIDC_CLIENT_SECRET": ""}
    result = _manage("check", "--deploy", "--fail-level", "WARNING",
                     env=PRODUCTION_ENV | KEYCLOAK_ONLY | notebooks)
    assert result.returncode != 0
    assert "portal.W003" in result.stderr and "NOTEBOOK_OIDC_CLIENT_SECRET" in result.stderr


def test_check_deploy_is_clean_with_the_notebook_client_secret():
    secret = "Hk2mP9qR4tV7wX1yZ3aB5cD8eF0gJ6"
    notebooks = NOTEBOOKS | {"NOTEBOOK_OIDC_CLIENT_SECRET": secret}
    result = _manage("check", "--deploy", "--fail-level", "WARNING",
                     env=PRODUCTION_ENV | KEYCLOAK_ONLY | notebooks)
    assert result.returncode == 0, result.stderr
    assert secret not in result.stdout + result.stderr


def test_check_deploy_warns_when_keycloak_signs_in_but_the_directory_sync_is_off():
    keycloak = {
        "OIDC_ISSUER_URL": "https://sso.example.com/realms/ai-factory",
        "OIDC_RP_CLIENT_ID": "portal",
        "OIDC_RP_CLIENT_SECRET": "Zq8vR2pL5wN9xT4mB7cF1hJ3dG6sK0",
    }
    result = _manage("check", "--deploy", "--fail-level", "WARNING", env=PRODUCTION_ENV | keycloak)
    assert result.returncode != 0
    assert "portal.W002" in result.stderr and "KEYCLOAK_DIRECTORY_CLIENT_ID" in result.stderr


def test_check_deploy_fails_without_sealing_keys_and_names_the_variable():
    env = {k: v for k, v in PRODUCTION_ENV.items() if k != "SEALING_KEYS"}
    result = _manage("check", "--deploy", "--fail-level", "WARNING", env=env)
    assert result.returncode != 0
    assert "portal.E001" in result.stderr and "SEALING_KEYS" in result.stderr


def test_production_refuses_to_start_without_secret_key():
    env = {k: v for k, v in PRODUCTION_ENV.items() if k != "SECRET_KEY"}
    result = _manage("check", env=env)
    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr


def test_production_refuses_to_start_without_allowed_hosts():
    env = {k: v for k, v in PRODUCTION_ENV.items() if k != "ALLOWED_HOSTS"}
    result = _manage("check", env=env)
    assert result.returncode != 0
    assert "ALLOWED_HOSTS" in result.stderr


def test_production_forces_debug_off_and_secure_cookies():
    code = (
        "from django.conf import settings as s;"
        "print(s.DEBUG, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_HSTS_SECONDS)"
    )
    result = _manage("shell", "--no-imports", "-c", code, env=PRODUCTION_ENV | {"DEBUG": "true"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "True", "True", "31536000"]


_DATABASE_CONNECTION = (
    "from django.conf import settings as s; d = s.DATABASES['default'];"
    "print(d['CONN_MAX_AGE'], d['CONN_HEALTH_CHECKS'])"
)


def test_production_keeps_database_connections_open_and_checks_them_before_reuse():
    result = _manage("shell", "--no-imports", "-c", _DATABASE_CONNECTION, env=PRODUCTION_ENV)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["60", "True"]


def test_development_opens_a_database_connection_per_request():
    env = {"SECRET_KEY": PRODUCTION_ENV["SECRET_KEY"]}
    result = _manage("shell", "--no-imports", "-c", _DATABASE_CONNECTION, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0", "True"]


def test_database_conn_max_age_sets_how_long_connections_stay_open():
    env = PRODUCTION_ENV | {"DATABASE_CONN_MAX_AGE": "0"}
    result = _manage("shell", "--no-imports", "-c", _DATABASE_CONNECTION, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0", "True"]


def test_a_key_prefix_in_the_cache_url_prefixes_every_key_on_redis():
    # django-environ hands Django's Redis backend `key_prefix` in lower case, which it ignores.
    env = PRODUCTION_ENV | {"CACHE_URL": "rediscache://127.0.0.1:6379/2?key_prefix=staging"}
    code = "from django.core.cache import cache; print(cache.make_key('quota'))"
    result = _manage("shell", "--no-imports", "-c", code, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["staging:1:quota"]
