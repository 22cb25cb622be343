#!/bin/sh
# The install steps of the portal's image, in one place: deploy/Containerfile runs them, and so
# does `make image-check` in CI (into a clean temporary venv), so what CI checks is what the
# image holds. Run from the root of a checkout (or of the image's build context).
#
#   install.sh deps VENV_DIR            the locked dependencies, every file hash-checked
#   install.sh app VENV_DIR APP_DIR     the project (--no-deps), its production tree copied into
#                                       APP_DIR, byte-compiled, static files collected
#
# PYTHON names the interpreter that creates VENV_DIR when it does not exist (python3 by default).
set -eu

usage() {
  echo "usage: $0 deps VENV_DIR | app VENV_DIR APP_DIR" >&2
  exit 2
}

# What production runs: the wiring, the domains, their templates and static files. The demo, the
# benchmark, the tests and the docs stay out of the image.
APP_PATHS="manage.py pyproject.toml portal core inventory tenants billing templates static"
LOCK=requirements/runtime.txt

deps() {
  venv=$1
  [ -x "$venv/bin/python" ] || "${PYTHON:-python3}" -m venv "$venv"
  # Wheels only: nothing is compiled, and a package without a wheel for this platform fails here.
  "$venv/bin/python" -m pip install --quiet --no-input --disable-pip-version-check \
    --require-hashes --only-binary=:all: --no-deps -r "$LOCK"
}

app() {
  venv=$1
  app_dir=$2
  # The project's own distribution: its dependencies are the lock's, its build backend too.
  "$venv/bin/python" -m pip install --quiet --no-input --disable-pip-version-check \
    --no-deps --no-build-isolation .
  mkdir -p "$app_dir"
  # shellcheck disable=SC2086 # APP_PATHS is a list of words
  cp -R $APP_PATHS "$app_dir/"
  find "$app_dir" -name __pycache__ -type d -prune -exec rm -rf {} +
  # Compiled once here: the image's root filesystem is read-only when it runs.
  "$venv/bin/python" -m compileall -q "$app_dir" "$venv/lib"
  # The production posture's static files (hashed names and manifest), collected with a key made
  # for this step only: nothing signed now outlives it, and it is never written to the image.
  (
    cd "$app_dir"
    PORTAL_ENV=production ALLOWED_HOSTS=build.invalid \
      SECRET_KEY="$("$venv/bin/python" -c 'import secrets; print(secrets.token_urlsafe(50))')" \
      "$venv/bin/python" manage.py collectstatic --no-input --verbosity 0
  )
}

[ $# -ge 2 ] || usage
step=$1
shift
case $step in
  deps) [ $# -eq 1 ] || usage; deps "$1" ;;
  app) [ $# -eq 2 ] || usage; app "$1" "$2" ;;
  *) usage ;;
esac
