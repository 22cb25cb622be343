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
# The suite runs in parallel (pytest-xdist), one process per core; TEST_WORKERS=0 runs it in one.
TEST_WORKERS ?= auto
TEST_DEBIAN_PACKAGES := chromium prometheus poppler-utils

.PHONY: demo serve install install-test debian-packages test lint docs bench clean prod-local

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed pyproject.toml
	$(PY) -m pip install --quiet -e '.[test,docs]'
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

test: install-test
	$(VENV)/bin/ruff check .
	DATABASE_URL=$(TEST_DATABASE_URL) TEST_REDIS_URL=$(TEST_REDIS_URL) DJANGO_ALLOW_ASYNC_UNSAFE=true \
	  $(VENV)/bin/pytest -n $(TEST_WORKERS) --dist worksteal $(PYTEST_ARGS)

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
	rm -rf $(VENV) staticfiles artifacts site
