"""The simulated fleet's time: what a controller knows of an object when it writes its status
(and the few helpers every status writer uses).

Nothing runs in the background: a controller is played when its object is read, from when the
object was created, when its spec last changed, how long the controller takes and now. So an
object nobody read for an hour is as far along as it would be on a real cluster, and what a
controller would have made meanwhile is dated from when it would have made it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

Status = dict[str, Any]


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(text: Any) -> datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def generation(obj: dict[str, Any]) -> int:
    return int((obj.get("metadata") or {}).get("generation") or 1)


def digest(*parts: Any) -> str:
    """A stable hex digest of JSON-ready parts (revisions, hashes, made-up addresses)."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def condition(kind: str, ok: bool, reason: str, message: str, since: str, gen: int) -> Status:
    """A `metav1.Condition` as controllers write them."""
    return {
        "type": kind,
        "status": "True" if ok else "False",
        "reason": reason,
        "message": message,
        "lastTransitionTime": since,
        "observedGeneration": gen,
    }


@dataclass(frozen=True)
class Clock:
    """One object's timeline: created, spec last changed, how long its controller takes."""

    created_at: datetime
    changed_at: datetime
    ready_after: timedelta
    now: datetime
    # The cluster's DNS domain: in-cluster addresses (<svc>.<ns>.svc.<domain>).
    cluster_domain: str = "cluster.local"

    @property
    def ready_at(self) -> datetime:
        return self.changed_at + self.ready_after

    @property
    def ready(self) -> bool:
        return self.now >= self.ready_at

    @property
    def progress(self) -> float:
        """How far along the controller is, 0 (just changed) to 1 (done)."""
        if self.ready:
            return 1.0
        return max(0.0, (self.now - self.changed_at) / self.ready_after)

    @property
    def since(self) -> str:
        """When the current state began: the change, or the moment it became ready."""
        return iso(self.ready_at if self.ready else self.changed_at)

    @property
    def served_before_change(self) -> bool:
        """The object had become ready before its latest spec change (it was serving)."""
        return self.changed_at - self.created_at >= self.ready_after

    def at(self, fraction: float) -> datetime:
        """The moment the controller is `fraction` of the way through."""
        return self.changed_at + self.ready_after * fraction
