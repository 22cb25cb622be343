"""The HTTP client: one `requests` session, the declared operations, the API's error format.

Every answer that is not 2xx becomes a CliError carrying the API's own message (its one error
format: {"error": {"status", "code", "message", "fields"}}) and the exit code for its status.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote, urlsplit

import requests

from . import __version__
from .exits import CliError, Exit, exit_for_status
from .operations import OPERATIONS, Operation

TIMEOUT = 30.0
MAX_PAGES = 200


def api_error(response: requests.Response) -> CliError:
    """The API's error as a CliError: its message and field errors, the status's exit code."""
    code = exit_for_status(response.status_code)
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        error = None
    if isinstance(error, dict) and error.get("message"):
        fields = error.get("fields")
        return CliError(str(error["message"]), code,
                        fields=fields if isinstance(fields, dict) else {})
    if response.is_redirect:  # never followed (the token would go along): say where it leads
        location = response.headers.get("Location", "")
        return CliError(f"The portal answered {response.status_code} {response.reason}, a "
                        f"redirect to {location or 'nowhere named'}: is the server URL right?",
                        code)
    return CliError(f"The portal answered {response.status_code} {response.reason}.", code)


class Client:
    def __init__(self, server: str, token: Callable[[], str] | str | None = None,
                 *, timeout: float = TIMEOUT) -> None:
        self.server = server.rstrip("/")
        self._token = token
        self.timeout = timeout
        self.http = requests.Session()
        self.http.headers["User-Agent"] = f"portalctl/{__version__}"

    def _headers(self, operation: Operation) -> dict[str, str]:
        headers = {"Accept": operation.media}
        token = self._token() if callable(self._token) else self._token
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return headers

    def request(self, name: str, *, params: dict[str, Any] | None = None,
                body: dict[str, Any] | None = None, url: str = "",
                **path: Any) -> requests.Response:
        """Call operation `name`; `path` fills its {placeholders}; `url` (a page's `next`)
        replaces its URL. Raises CliError for anything but a 2xx."""
        operation = OPERATIONS[name]
        unknown = set(params or {}) - set(operation.query) | set(body or {}) - set(operation.body)
        if unknown:  # a programming error: declare it in operations.py first
            raise ValueError(f"{name} does not declare {sorted(unknown)}")
        filled = {key: quote(str(value), safe="") for key, value in path.items()}
        target = url or self.server + operation.path.format(**filled)
        query = {k: v for k, v in (params or {}).items() if v not in (None, "")}
        try:
            response = self.http.request(
                operation.method, target, params=None if url else query, json=body,
                headers=self._headers(operation), timeout=self.timeout, allow_redirects=False,
            )
        except requests.RequestException as exc:
            raise CliError(f"Cannot reach the portal at {self.server}: {exc}",
                           Exit.UNREACHABLE) from exc
        if not 200 <= response.status_code < 300:
            raise api_error(response)
        return response

    def call(self, name: str, *, params: dict[str, Any] | None = None,
             body: dict[str, Any] | None = None, **path: Any) -> Any:
        """The answer's JSON (None for an empty one)."""
        return self._json(self.request(name, params=params, body=body, **path))

    @staticmethod
    def _json(response: requests.Response) -> Any:
        if not response.content:
            return None
        try:
            return response.json()
        except ValueError as exc:
            raise CliError("The portal's answer is not JSON: is the server URL right?",
                           Exit.ERROR) from exc

    def _page(self, answer: Any) -> dict[str, Any]:
        results = answer.get("results") if isinstance(answer, dict) else None
        if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
            raise CliError("The portal's answer is not a page of results: is the server URL "
                           "right?", Exit.ERROR)
        following = answer.get("next")
        if following and not isinstance(following, str):
            raise CliError("The portal's answer is not a page of results (its next is not a "
                           "URL).", Exit.ERROR)
        return answer

    def _on_server(self, url: str) -> str:
        """A page's `next` on the portal's own scheme and host: the token goes along with it
        (a proxy may make the portal name itself http:// or by an inner host name)."""
        server, page = urlsplit(self.server), urlsplit(url)
        return page._replace(scheme=server.scheme, netloc=server.netloc).geturl()

    def pages(self, name: str, *, params: dict[str, Any] | None = None,
              **path: Any) -> Iterator[dict[str, Any]]:
        """Every item of a paginated list, page after page."""
        page = self._page(self.call(name, params={**(params or {}), "page_size": 500}, **path))
        for _ in range(MAX_PAGES):
            yield from page["results"]
            if not page.get("next"):
                return
            page = self._page(self._json(self.request(name, url=self._on_server(page["next"]))))
