"""The test suite's settings: the portal's, with a fast password hasher (the suite creates
thousands of accounts; how passwords are hashed is Django's and not under test)."""

from portal.settings import *  # noqa: F403
from portal.settings import DATABASES, INSTALLED_APPS

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# The benchmark's own app: its data set's command and harness are tested too.
INSTALLED_APPS = [*INSTALLED_APPS, "bench"]
# Inference endpoints stay in the cluster unless a test publishes them through the gateway (the
# tests of endpoint keys): the rest of the suite counts and checks the objects of the kinds alone.
INFERENCE_DOMAIN = ""
# Notebooks too: the tests of their gateway set a domain themselves.
NOTEBOOK_DOMAIN = ""
# The test database is thrown away at the end: its commits need not wait for the disk (a commit
# is seen by every other connection at once all the same; only a crash could lose it). The
# live server, migrations and flushes between tests commit thousands of times.
if DATABASES["default"]["ENGINE"] == "core.db.postgresql":
    _default = DATABASES["default"]
    DATABASES = {**DATABASES, "default": {**_default, "OPTIONS": {
        **_default.get("OPTIONS", {}), "options": "-c synchronous_commit=off"}}}
