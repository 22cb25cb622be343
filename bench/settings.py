"""The portal's settings as the benchmark serves and measures it: this app installed (its
`bench_data` command) and its floor page routed (bench.urls)."""

from portal.settings import *  # noqa: F403
from portal.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "bench"]
ROOT_URLCONF = "bench.urls"
