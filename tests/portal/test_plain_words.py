"""Every page of the demo speaks plainly: signed in as each demo account, the test follows the
portal's links (and Django admin's change pages) and reads each page's visible text for raw
Python values, other systems' field names, literal backticks, 6-decimal quantities and kind
names in another casing."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from urllib.parse import urldefrag, urlsplit

import pytest
from django.contrib.auth import get_user_model

from tests.support.demo_data import demo_loaded

# What a person should never read on a page.
RAW = [
    (re.compile(r"\bNone\b(?! available)"), "None"),  # Django admin's "None available"
    (re.compile(r"\b(True|False)\b"), "a Python boolean"),
    (re.compile(r"Decimal\("), "Decimal(…)"),
    (re.compile(r"\{'[^']*': "), "a dict's repr"),
    (re.compile(r"\[\{|\['[^']*', '"), "a list's repr"),
    (re.compile(r"`"), "a backtick"),
    (re.compile(r"\b\d+\.\d{5,}\b"), "a quantity with 5 or more decimals"),
    (re.compile(r"nvidia\.com/|spec\.\w+|\bmetadata\.\w+"), "another system's field name"),
    # (the resource classes' keys, count:vcluster, are the portal's own vocabulary)
    (re.compile(r"(?<!count:)\b(vcluster|Vcluster|VCluster|vclusters)\b(?!@| connect)"),
     "vCluster in another casing"),
    (re.compile(r"\b(slurm cluster|Slurm Cluster)\b|(?<![-\w])SLURM(?![-\w])"),
     "Slurm cluster in another casing"),
    (re.compile(r"\bInference Endpoints?\b"), "Inference endpoint in another casing"),
    (re.compile(r"\bVirtual [Mm]achines?\b|(?<!count:)\bvms?\b(?!/)|\bVms?\b"),
     "VM in another casing"),
]
# Text inside these elements is for machines or is a command to copy: not read here.
SKIPPED = {"script", "style", "code", "pre", "textarea", "kbd", "samp", "template"}


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.links: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag, attrs):
        if tag in SKIPPED:
            self._skipping += 1
        values = dict(attrs)
        if tag == "a" and values.get("href"):
            self.links.append(values["href"])
        for name in ("title", "aria-label", "placeholder"):
            if values.get(name) and not self._skipping:
                self.text.append(values[name])

    def handle_endtag(self, tag):
        if tag in SKIPPED and self._skipping:
            self._skipping -= 1

    def handle_data(self, data):
        text = data.strip()
        if self._skipping or not text or _is_json_document(text):
            return
        self.text.append(text)


def _is_json_document(text: str) -> bool:
    """A JSON object or array shown whole (Django admin's JSON fields: a manifest, the labels
    the cluster reported): a document of another system, shown as such to admins."""
    if text[0] not in "[{":
        return False
    try:
        return isinstance(json.loads(text), dict | list)
    except ValueError:
        return False


def _problems(text: str) -> list[str]:
    return [f"{what}: …{text[max(0, m.start() - 50):m.end() + 50]}…".replace("\n", " | ")
            for pattern, what in RAW for m in pattern.finditer(text)]


NOT_FOLLOWED = re.compile(
    r"logout|/delete/|\.csv|\.xlsx|\.pdf|/kubeconfig/|/export|/download|/api/|/metrics|"
    r"/static/|/accounts/|/oidc/|/admin/logout|/history/|/r/\d+/|/jsi18n/|/password/|"
    r"/admin/.*/add/|/admin/auth/|/admin/axes/|/readyz|/healthz"
)


def _crawl(client, start: list[str], limit: int) -> dict[str, list[str]]:
    seen, queue, found = set(), list(start), {}
    per_pattern: dict[str, int] = {}
    while queue and len(seen) < limit:
        url = urldefrag(queue.pop(0))[0]
        if url in seen:
            continue
        seen.add(url)
        response = client.get(url)
        if response.status_code in (301, 302) and response["Location"].startswith("/"):
            queue.append(response["Location"])
            continue
        if response.status_code != 200 or "text/html" not in response.get("Content-Type", ""):
            continue
        page = _Page()
        page.feed(response.content.decode())
        problems = _problems("\n".join(page.text))
        if problems:
            found[url] = problems
        for link in page.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or not parts.path.startswith("/"):
                continue
            if NOT_FOLLOWED.search(parts.path):
                continue
            # A few pages of each shape: ids and page numbers vary, the template does not.
            shape = re.sub(r"\d+", "N", parts.path) + ("?" if parts.query else "")
            if per_pattern.get(shape, 0) >= 3:
                continue
            per_pattern[shape] = per_pattern.get(shape, 0) + 1
            queue.append(link)
    return found


@pytest.fixture
def demo(db, settings):
    demo_loaded()


@pytest.mark.django_db
@pytest.mark.parametrize("username", ["olivia", "mike", "fiona", "adam"])
def test_no_page_shows_raw_values_or_other_systems_words(demo, client, username):
    client.force_login(get_user_model().objects.get(username=username),
                       backend="django.contrib.auth.backends.ModelBackend")
    found = _crawl(client, ["/", "/admin/"] if username == "adam" else ["/"], limit=140)
    assert not found, "\n".join(f"{url}\n  " + "\n  ".join(p[:6]) for url, p in found.items())
