# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000
# Links in the demo's e-mails point where the demo is served.
PORTAL_URL ?= http://$(HOST):$(PORT)
# The suite runs on PostgreSQL and Redis (see README); override to point elsewhere.
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/portal
TEST_REDIS_URL ?= redis://127.0.0.1:6379/0
# The suite runs in parallel (pytest-xdist), one process more than the cores: its tests spend
# much of their time waiting on the servers, workers and browsers they start, which leaves a core
# idle with one process per core. TEST_WORKERS=0 runs it in one.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
TEST_DEBIAN_PACKAGES := chromium prometheus poppler-utils

.PHONY: demo serve install install-test debian-packages test test-smoke lint docs bench clean \
  lock lock-upgrade image-check prod-local

# Dependencies come from the lock files (requirements/, every file hash-checked; `make lock`
# writes them), then the project itself without dependencies and without build isolation (its
# build backend is in the lock too).
RUNTIME_LOCK := requirements/runtime.txt
TEST_LOCK := requirements/test.txt
PIP_LOCKED := -m pip install --quiet --require-hashes --no-deps

$(VENV)/.installed: $(RUNTIME_LOCK)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) $(PIP_LOCKED) -r $(RUNTIME_LOCK)
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed $(TEST_LOCK)
	$(PY) $(PIP_LOCKED) -r $(TEST_LOCK)
	touch $@

# A development checkout keeps its own secret key in .env, written once.
.env:
	@umask 077 && printf 'SECRET_KEY=%s\n' "$$($(PYTHON) -c 'import secrets; print(secrets.token_urlsafe(50))')" > $@
	@echo "Wrote .env with a fresh SECRET_KEY."

install: $(VENV)/.installed .env

demo: install
	$(PY) manage.py migrate --no-input -v 0
	PORTAL_URL=$(PORTAL_URL) $(PY) manage.py load_demo
	@echo "Serving the demo on http://$(HOST):$(PORT)/ (Ctrl-C stops it)."
	PORTAL_URL=$(PORTAL_URL) $(PY) manage.py runserver $(HOST):$(PORT)

serve: install
	PORTAL_URL=$(PORTAL_URL) $(PY) manage.py runserver $(HOST):$(PORT)

# The production posture on this machine, without containers (docs/prod-local.md): PostgreSQL
# and Redis started if absent, then gunicorn, a Celery worker and beat under honcho on
# 127.0.0.1:$(PORT). Ctrl-C stops all three.
prod-local: $(VENV)/.installed
	$(PY) -m pip install --quiet -e '.[local]'
	PROD_LOCAL_PORT=$(PORT) deploy/local/prod-local.sh

# Debian packages the browser and Prometheus tests need, installed only when missing.
debian-packages:
	@missing=""; for p in $(TEST_DEBIAN_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing Debian packages:$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

# The test OpenID Connect provider's npm packages, reinstalled only when its lock file changes.
OIDC_PROVIDER := tests/oidc_provider
$(OIDC_PROVIDER)/node_modules/.installed: $(OIDC_PROVIDER)/package.json $(OIDC_PROVIDER)/package-lock.json
	cd $(OIDC_PROVIDER) && npm ci --silent --no-audit --no-fund
	touch $@

# axe-core, injected into pages by the browser tests' accessibility check.
BROWSER_TESTS := tests/browser
$(BROWSER_TESTS)/node_modules/.installed: $(BROWSER_TESTS)/package.json $(BROWSER_TESTS)/package-lock.json
	cd $(BROWSER_TESTS) && npm ci --silent --no-audit --no-fund
	touch $@

install-test: $(VENV)/.installed-test .env debian-packages $(OIDC_PROVIDER)/node_modules/.installed \
  $(BROWSER_TESTS)/node_modules/.installed

lint: install-test
	$(VENV)/bin/ruff check .

# The portal's modules are compiled once, before the suite, instead of by every process it
# starts (each test process, and each Celery worker, beat, gunicorn and manage.py a test runs);
# the suite keeps its compiled test modules for the next run even where the environment sets
# PYTHONDONTWRITEBYTECODE (everything it writes is under the gitignored __pycache__/). It ends
# with its 25 slowest steps, where the suite's time goes.
PORTAL_PACKAGES := core portal tenants inventory billing demo bench portalctl
test: install-test
	$(VENV)/bin/ruff check .
	$(PY) -m compileall -q -j 0 $(PORTAL_PACKAGES)
	DATABASE_URL=$(TEST_DATABASE_URL) TEST_REDIS_URL=$(TEST_REDIS_URL) DJANGO_ALLOW_ASYNC_UNSAFE=true \
	  PYTHONDONTWRITEBYTECODE= $(VENV)/bin/pytest -n $(TEST_WORKERS) --dist worksteal --durations=25 $(PYTEST_ARGS)

# A few fast, meaningful test files (settings, an API, a workload kind's manifests, billing's
# calculations) on another Python, in its own venv (.venv-3.12, ...) installed from the test lock
# with uv: `make test-smoke SMOKE_PYTHON=python3.13`. `make test` runs the whole suite on $(PYTHON).
SMOKE_PYTHON ?= python3.12
SMOKE_TESTS := tests/portal/test_configuration.py \
  tests/portal/test_settings.py::test_check_deploy_is_clean_in_production tests/tenants/test_api.py \
  tests/tenants/workloads/test_kind_inference.py tests/billing/test_properties.py
test-smoke: install-test
	@set -euo pipefail; \
	interpreter=$$(.ci/find-python $(SMOKE_PYTHON)); \
	version=$$($$interpreter -c 'import sys; print("%d.%d" % sys.version_info[:2])'); \
	venv=.venv-$$version; \
	echo "Smoke tests on Python $$version ($$interpreter) in $$venv"; \
	test -x $$venv/bin/python || $(VENV)/bin/uv venv --quiet --python "$$interpreter" $$venv; \
	VIRTUAL_ENV=$$venv $(VENV)/bin/uv pip sync --quiet --require-hashes --only-binary :all: $(TEST_LOCK); \
	VIRTUAL_ENV=$$venv $(VENV)/bin/uv pip install --quiet --no-deps --no-build-isolation -e .; \
	DATABASE_URL=$(TEST_DATABASE_URL) TEST_REDIS_URL=$(TEST_REDIS_URL) DJANGO_ALLOW_ASYNC_UNSAFE=true \
	  $$venv/bin/python -m pytest -n 0 $(SMOKE_TESTS) $(PYTEST_ARGS)

# The lock files, resolved together for every supported Python (--universal) so that the image's
# runtime lock and the suite's test lock agree: `make lock` after changing a pin in pyproject.toml
# (it keeps every other version), `make lock-upgrade` to move everything to the newest allowed.
UV_COMPILE = $(VENV)/bin/uv pip compile --quiet --universal --generate-hashes $(LOCK_ARGS)
lock: $(VENV)/.installed-test
	$(UV_COMPILE) --python-version 3.11.5 --extra test --extra docs pyproject.toml \
	  requirements/build.in -o $(TEST_LOCK)
	$(UV_COMPILE) --python-version 3.11 --constraint $(TEST_LOCK) pyproject.toml \
	  requirements/build.in -o $(RUNTIME_LOCK)
lock-upgrade:
	$(MAKE) lock LOCK_ARGS=--upgrade

# What deploy/Containerfile does, without a container: deploy/image/install.sh into a clean
# temporary venv and app folder, then Django's deployment checks from there in the production
# posture (a throwaway key; the suite's services), and the static files' manifest.
IMAGE_CHECK_DIR ?= $(or $(TMPDIR),/tmp)/portal-image-check
IMAGE_CHECK_ENV := PORTAL_ENV=production ALLOWED_HOSTS=portal.example.com \
  DATABASE_URL=$(TEST_DATABASE_URL) CELERY_BROKER_URL=$(TEST_REDIS_URL) \
  CACHE_URL=$(subst redis://,rediscache://,$(TEST_REDIS_URL))
image-check:
	rm -rf $(IMAGE_CHECK_DIR)
	PYTHON=$(PYTHON) deploy/image/install.sh deps $(IMAGE_CHECK_DIR)/venv
	deploy/image/install.sh app $(IMAGE_CHECK_DIR)/venv $(IMAGE_CHECK_DIR)/app
	cd $(IMAGE_CHECK_DIR)/app && env -i PATH=/usr/bin:/bin $(IMAGE_CHECK_ENV) \
	  SECRET_KEY=$$($(PYTHON) -c 'import secrets; print(secrets.token_urlsafe(50))') \
	  SEALING_KEYS=$$($(PYTHON) -c 'import base64, os; print(base64.urlsafe_b64encode(os.urandom(32)).decode())') \
	  $(IMAGE_CHECK_DIR)/venv/bin/python manage.py check --deploy --fail-level WARNING
	test -f $(IMAGE_CHECK_DIR)/app/staticfiles/staticfiles.json
	rm -rf $(IMAGE_CHECK_DIR)

# The documentation site (MkDocs, Material theme) from docs/ into site/; the suite builds it with
# --strict too (tests/test_docs.py), so a broken link or a page left out of the nav fails it.
docs: $(VENV)/.installed-test
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

# The fleet-scale benchmark: builds the data set once per scale (cached as a template database),
# serves it with gunicorn in the production posture, times every page in the fixed and the
# varied mode, writes artifacts/bench/results.json and results.md, and rewrites the results
# section of docs/benchmark.md from them. BENCH_SCALE=0.1 make bench for a quicker, smaller run.
BENCH_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/portal_bench
BENCH_SCALE ?= 1
BENCH_OUT ?= artifacts/bench
BENCH_RESULTS_PAGE ?= docs/benchmark.md
bench: $(VENV)/.installed-test .env  # the provisioning run uses the tests' Kubernetes emulator (kmock)
	BENCH_DATABASE_URL=$(BENCH_DATABASE_URL) BENCH_SCALE=$(BENCH_SCALE) BENCH_OUT=$(BENCH_OUT) \
	  $(PY) -m bench
	$(PY) -m bench.publish $(BENCH_OUT)/results.json $(BENCH_RESULTS_PAGE)

clean:
	rm -rf $(VENV) .venv-3.* staticfiles artifacts site
