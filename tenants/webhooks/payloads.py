"""What a delivery's body says: the Standard Webhooks shape `{"type", "timestamp", "data"}`,
or for Slack-compatible hooks `{"text": ...}`, a sentence and a link (pure functions)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

# One sentence per event type, filled from the event's data (missing keys read as "?").
SENTENCES = {
    "workload.ready": "{workload[kind]} *{workload[name]}* of {tenant[name]} is ready.",
    "workload.failed": "{workload[kind]} *{workload[name]}* of {tenant[name]} failed: {reason}.",
    "workload.preempted": "{workload[kind]} *{workload[name]}* of {tenant[name]} was "
                          "preempted: {message}",
    "workload.idle_warned": "{workload[kind]} *{workload[name]}* of {tenant[name]} has left "
                            "{idle_gpus} GPU(s) idle.",
    "quota_request.decided": "Quota request #{quota_request[id]} of {tenant[name]} was "
                             "{quota_request[status]}.",
    "budget.alert": "{tenant[name]} has used {threshold} % of its {month} budget ({spent} of "
                    "{budget} {currency}).",
    "invoice.issued": "Invoice {invoice[number]} for {tenant[name]} was issued: "
                      "{invoice[total]} {invoice[currency]}, due {invoice[due_date]}.",
    "webhook.test": "A test event for the webhook *{webhook[name]}*: {message}",
}


class _Lenient(dict):
    def __missing__(self, key: str) -> Any:
        return _Lenient()

    def __format__(self, spec: str) -> str:
        return "?" if not self else dict.__format__(self, spec)


def _lenient(value: Any) -> Any:
    if isinstance(value, dict):
        return _Lenient({key: _lenient(item) for key, item in value.items()})
    return value


def sentence(event_type: str, data: dict[str, Any]) -> str:
    template = SENTENCES.get(event_type, "{type}")
    return template.format_map(_lenient({**data, "type": event_type}))


def standard_payload(*, event_type: str, at: datetime, data: dict[str, Any]) -> dict[str, Any]:
    return {"type": event_type, "timestamp": at.isoformat().replace("+00:00", "Z"), "data": data}


def slack_payload(*, event_type: str, data: dict[str, Any]) -> dict[str, str]:
    text = sentence(event_type, data)
    url = data.get("url")
    return {"text": f"{text} <{url}|Open in the portal>" if url else text}
