"""The fleet-scale benchmark, a development package production never installs: a deterministic
data set (`dataset`, `manage.py bench_data`), and the harness that serves it with gunicorn in
the production posture and measures every page against a floor (`harness`, run as
`python -m bench`, i.e. `make bench`).

It runs on its own settings (`bench.settings`: the portal's, with this app installed and its
floor page routed) and may import every app; nothing imports it.
"""
