"""The fleet-scale benchmark (issue 13): a deterministic data set (`dataset`), and the harness
that serves it with gunicorn in the production posture and measures every page against a floor
(`harness`, run as `python -m portal.bench`, i.e. `make bench`).

Wiring, like the demo: it may import every app. Nothing here runs in a served portal.
"""
