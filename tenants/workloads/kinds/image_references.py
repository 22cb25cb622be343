"""OCI image references, checked with the grammar of the distribution spec
(`github.com/distribution/reference`), so a typo is a field error on the form and not an
importer pod stuck in ImagePullBackOff.

    reference := registry "/" path [":" tag] ["@" digest]
    registry  := host [":" port]      host: DNS name, IPv4 or [IPv6]; `localhost` too
    path      := component ("/" component)*   component: [a-z0-9]+ ([._]|__|-+ [a-z0-9]+)*
    tag       := [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}
    digest    := "sha256:" 64 lowercase hex digits

Unlike `docker pull`, the registry is required: a bare `ubuntu:24.04` would be resolved by
whichever default each runtime has (Docker Hub, or a mirror), and a VM's disk should come from
a registry somebody chose.
"""

from __future__ import annotations

import re
from typing import Any

from .base import SpecError

MAX_NAME_LENGTH = 255  # registry + path, as the distribution spec limits it
# Name, ":" and the longest tag, "@sha256:" and 64 hex digits: longer is no reference (and is
# not worth running the pattern over).
MAX_REFERENCE_LENGTH = MAX_NAME_LENGTH + 1 + 128 + 8 + 64

_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_HOST = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[0-9A-Fa-f:.]+\])"
_REGISTRY = rf"(?P<registry>{_HOST}(?::[0-9]{{1,5}})?)"
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_PATH = rf"(?P<path>{_COMPONENT}(?:/{_COMPONENT})*)"
_TAG = r"(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})"
_DIGEST = r"(?P<digest>sha256:[0-9a-f]{64})"
REFERENCE = re.compile(rf"^{_REGISTRY}/{_PATH}(?::{_TAG})?(?:@{_DIGEST})?$")

MESSAGE = (
    "Not a valid OCI image reference: registry/path[:tag][@sha256:digest], "
    "e.g. quay.io/containerdisks/ubuntu:24.04."
)


def _names_a_registry(registry: str) -> bool:
    # `library/ubuntu` parses too, but its first part is a path: a registry has a dot, a port,
    # or is localhost or an IPv6 literal.
    return "." in registry or ":" in registry or registry == "localhost" or registry[0] == "["


def oci_reference(value: Any, *, field_name: str) -> str:
    """`value` when it is a valid OCI image reference with an explicit registry, else
    SpecError naming `field_name`."""
    if not isinstance(value, str):
        raise SpecError({field_name: [MESSAGE]})
    reference = value.strip()
    if len(reference) > MAX_REFERENCE_LENGTH:
        raise SpecError({field_name: [MESSAGE]})
    match = REFERENCE.match(reference)
    if match is None or not _names_a_registry(match["registry"]):
        raise SpecError({field_name: [MESSAGE]})
    port = match["registry"].rpartition("]")[2].partition(":")[2]
    if port and not 0 < int(port) < 65536:
        raise SpecError({field_name: [MESSAGE]})
    if len(match["registry"]) + 1 + len(match["path"]) > MAX_NAME_LENGTH:
        raise SpecError({field_name: [f"An image name is at most {MAX_NAME_LENGTH} characters."]})
    return reference
