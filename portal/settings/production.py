"""The production posture (PORTAL_ENV=production): cookies over HTTPS only, HSTS, and the
redirect to HTTPS that probes and the metrics scraper are exempt from."""

from .base import env

SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=True)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=True)
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=True)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=True)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Probes and an in-cluster scraper speak plain HTTP to the pod. /metrics answers only a
# peer in METRICS_ALLOWED_NETWORKS over it; its bearer token is taken over HTTPS only.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
