"""The portal's WSGI application loaded as production loads it, answering one question: how
many objects its worker's garbage collector has frozen (tests of portal.gunicorn_conf)."""

import gc

from portal.wsgi import application as portal_application  # noqa: F401  (the start-up heap)

# What requests build to keep, as a lazily filled cache does: a thousand objects a request.
KEPT: list[list] = []


def application(environ, start_response):
    KEPT.extend([n] for n in range(1000))  # lists: the collector tracks every one
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [str(gc.get_freeze_count()).encode()]
