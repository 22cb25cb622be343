"""OpenTelemetry tracing, off unless OTEL_EXPORTER_OTLP_ENDPOINT names a collector (OTLP over
HTTP): then each request (Django), its SQL (psycopg), each Celery task (linked to the request
that queued it), and the calls out (requests; urllib3, which the kubernetes client speaks
through) become spans sent in batches to `<endpoint>/v1/traces`. Probes and the scraper's
requests are not traced: they would outnumber everything else.

Nothing is imported or patched when the endpoint is unset.
"""

from __future__ import annotations

from django.conf import settings

UNTRACED_URLS = "healthz,readyz,metrics"


def configure_tracing() -> bool:
    """Set up the tracer provider and the instrumentations; False when tracing is off."""
    endpoint = settings.OTEL_EXPORTER_OTLP_ENDPOINT
    if not endpoint:
        return False
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
    from opentelemetry.instrumentation.requests import RequestsInstrumentor
    from opentelemetry.instrumentation.urllib3 import URLLib3Instrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    if isinstance(trace.get_tracer_provider(), TracerProvider):
        return True  # set up already in this process
    provider = TracerProvider(
        resource=Resource.create({"service.name": settings.OTEL_SERVICE_NAME})
    )
    provider.add_span_processor(
        BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{endpoint.rstrip('/')}/v1/traces"))
    )
    trace.set_tracer_provider(provider)
    DjangoInstrumentor().instrument(excluded_urls=UNTRACED_URLS)
    PsycopgInstrumentor().instrument()
    CeleryInstrumentor().instrument()
    RequestsInstrumentor().instrument()
    URLLib3Instrumentor().instrument()
    return True
