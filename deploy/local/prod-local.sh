#!/usr/bin/env bash
# `make prod-local`: the portal in its production posture on this machine, without containers.
#
# PostgreSQL and Redis are started when absent (deploy/local/services.sh); then gunicorn, a
# Celery worker and Celery beat run under one supervisor (honcho, deploy/local/Procfile) until
# it gets SIGTERM or Ctrl-C, which stops all three. Settings are the manifests' own
# (deploy/base/settings.env) with only the overrides a local, plain-HTTP run needs, each listed
# below and in docs/prod-local.md. Everything binds to 127.0.0.1.
#
# Knobs (environment): PROD_LOCAL_PORT (8000), PROD_LOCAL_DATABASE_URL (its own database,
# created and migrated on start), PROD_LOCAL_REDIS_URL (broker and cache), PROD_LOCAL_STATE
# (where the generated SECRET_KEY is kept), PROD_LOCAL_SEED (`demo`: load the demo's accounts
# and fleet into a new database once; `none`), KUBECONFIG (a real cluster instead of the
# simulated fleet), OIDC_ISSUER_URL + OIDC_RP_CLIENT_ID + OIDC_RP_CLIENT_SECRET (sign in with
# Keycloak instead of local accounts).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
PY="$ROOT/.venv/bin/python"

if [[ "${PROD_LOCAL_SKIP_SERVICES:-}" != 1 ]]; then
  deploy/local/services.sh
fi

# The manifests' settings first: what production runs is what runs here.
set -a
# shellcheck source=../base/settings.env
. deploy/base/settings.env
set +a

export PROD_LOCAL_PORT=${PROD_LOCAL_PORT:-8000}
export PROD_LOCAL_WEB_WORKERS=${PROD_LOCAL_WEB_WORKERS:-2}
export PROD_LOCAL_WORKER_CONCURRENCY=${PROD_LOCAL_WORKER_CONCURRENCY:-2}
STATE=${PROD_LOCAL_STATE:-$ROOT/.prod-local}
mkdir -p "$STATE"
chmod 700 "$STATE"

# A SECRET_KEY of this run's own, generated once and kept (sessions survive restarts).
if [[ ! -s "$STATE/secret_key" ]]; then
  (umask 077 && "$PY" -c 'import secrets; print(secrets.token_urlsafe(50))' >"$STATE/secret_key")
fi
SECRET_KEY=$(<"$STATE/secret_key")
export SECRET_KEY
# Likewise the key that seals secrets at rest (core/sealed.py): what it sealed stays readable.
if [[ ! -s "$STATE/sealing_key" ]]; then
  (umask 077 && "$PY" -c 'import base64, os; print(base64.urlsafe_b64encode(os.urandom(32)).decode())' \
    >"$STATE/sealing_key")
fi
SEALING_KEYS=$(<"$STATE/sealing_key")
export SEALING_KEYS

# Overrides of settings.env, each because this is one machine over plain HTTP:
export DATABASE_URL=${PROD_LOCAL_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/portal_prodlocal}
export CELERY_BROKER_URL=${PROD_LOCAL_REDIS_URL:-redis://127.0.0.1:6379/15}
export CACHE_URL=${CELERY_BROKER_URL/#redis:/rediscache:}
export CELERY_TASK_ALWAYS_EAGER=false
export ALLOWED_HOSTS=127.0.0.1
export PORTAL_URL=http://127.0.0.1:$PROD_LOCAL_PORT
export CSRF_TRUSTED_ORIGINS=$PORTAL_URL
# No TLS here: cookies must travel over http, and nothing redirects to https.
export SESSION_COOKIE_SECURE=false CSRF_COOKIE_SECURE=false SECURE_SSL_REDIRECT=false
export SECURE_HSTS_SECONDS=0 SECURE_HSTS_PRELOAD=false
if [[ -n "${KUBECONFIG:-}" ]]; then
  export FLEET_BACKEND=kubernetes
else
  export FLEET_BACKEND=simulated
fi
# Local accounts unless a Keycloak realm is given.
if [[ -n "${OIDC_ISSUER_URL:-}" ]]; then
  export LOCAL_LOGIN_ENABLED=${LOCAL_LOGIN_ENABLED:-false}
else
  export LOCAL_LOGIN_ENABLED=true
fi

database=${DATABASE_URL##*/}
server=${DATABASE_URL%/*}
if ! psql "$server/postgres" -tAc "SELECT 1 FROM pg_database WHERE datname = '$database'" | grep -q 1; then
  echo "Creating database $database"
  psql "$server/postgres" -q -c "CREATE DATABASE \"$database\""
fi
"$PY" manage.py migrate --no-input -v 0
# Static files are collected (hashed names, as the image does at build time) when the project's
# files or dependencies changed since the last collection.
manifest=staticfiles/staticfiles.json
if [[ ! -f $manifest || -n $(find static templates pyproject.toml -newer "$manifest" -print -quit) ]]; then
  "$PY" manage.py collectstatic --no-input -v 0
fi

# The demo's accounts and fleet, once per database: its loader is development code, so it runs
# outside the production posture (PORTAL_ENV=development), against the same database.
if [[ "${PROD_LOCAL_SEED:-demo}" == demo && ! -e "$STATE/seeded-$database" ]]; then
  echo "Loading the demo's accounts and fleet into $database (once)"
  PORTAL_ENV=development "$PY" manage.py load_demo
  touch "$STATE/seeded-$database"
fi

echo "The portal (production posture): $PORTAL_URL/  (Ctrl-C stops web, worker and beat)"
# honcho reads no .env (-e /dev/null): the environment above is the whole configuration.
exec "$ROOT/.venv/bin/honcho" -e /dev/null -d "$ROOT" -f deploy/local/Procfile start
