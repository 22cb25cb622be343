"""People and tenants: users, tenants, memberships, platform roles, quotas, billing accounts
and the VM boot images."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from decimal import Decimal

from django.contrib.auth import get_user_model

from billing.models import (
    BillingAccount,
)
from tenants.models import (
    Membership,
    Quota,
    RoleAssignment,
    Tenant,
)
from tenants.workloads.models import VmImage
from tenants.workloads.registry import KINDS

from .copying import TableWriter
from .plan import (
    BENCH_ADMIN,
    BENCH_FINANCE,
    BENCH_OWNER,
    FIELDS,
    FIRST,
    LAST,
    NODE_PLAN,
    VM_IMAGES,
    WORDS,
)


class PeopleTables(TableWriter):

    def users(self) -> int:
        def rows() -> Iterator[dict]:
            for u in range(self.sizes.users):
                username = ((BENCH_OWNER, BENCH_ADMIN, BENCH_FINANCE)[u] if u < 3
                            else f"user{u:05d}")
                yield {
                    "id": u + 1, "username": username,
                    # Unusable: the bench signs in through the session engine, never a password.
                    "password": f"!bench-{u}",
                    "first_name": FIRST[u % len(FIRST)], "last_name": LAST[u * 7 % len(LAST)],
                    "email": f"{username}@example.com", "is_superuser": False,
                    "is_staff": False, "is_active": True,
                    "date_joined": self.anchor - datetime.timedelta(days=500 - u % 400),
                }
        return self._copy(get_user_model(), rows())

    def tenants(self) -> int:
        rng = self.rng
        self.tenant_slugs: dict[int, str] = {}
        self.tenant_isolation: dict[int, str] = {}
        self.tenant_model: dict[int, str] = {}
        self.tenant_names: dict[int, str] = {}
        rows = []
        for t in range(self.sizes.tenants):
            tenant_id = t + 1
            slug = f"team-{tenant_id:04d}"
            isolation = "dedicated" if t % 5 == 1 else "shared"
            self.tenant_slugs[tenant_id] = slug
            self.tenant_isolation[tenant_id] = isolation
            self.tenant_model[tenant_id] = NODE_PLAN[t % 4][0]
            self.tenant_names[tenant_id] = (
                f"{WORDS[t % len(WORDS)]} {FIELDS[t // len(WORDS) % len(FIELDS)]} {tenant_id}")
            rows.append({
                "id": tenant_id, "slug": slug, "name": self.tenant_names[tenant_id],
                "cost_center": f"CC-{1000 + tenant_id}", "isolation": isolation,
                "status": "suspended" if t % 97 == 96 else "active",
                "cohort": f"pool-{t % 20}" if isolation == "shared" and t % 3 == 0 else "",
                "created_at": self.anchor - datetime.timedelta(days=rng.randint(30, 700)),
                "desired_version": 3, "applied_version": 3,
                "applied_at": self.anchor - datetime.timedelta(days=1),
            })
        return self._copy(Tenant, rows)

    def memberships(self) -> int:
        tenants = self.sizes.tenants
        self.tenant_owner: dict[int, int] = {}
        self.tenant_members: dict[int, list[int]] = {t: [] for t in self.tenant_slugs}
        rows = []
        roles = ("member", "member", "viewer")

        def add(user_id: int, tenant_id: int, role: str) -> None:
            rows.append({"id": len(rows) + 1, "user_id": user_id, "tenant_id": tenant_id,
                         "role": role, "source": "keycloak",
                         "created_at": self.anchor - datetime.timedelta(days=30)})
            self.tenant_members[tenant_id].append(user_id)
            if role == "owner":
                self.tenant_owner[tenant_id] = user_id

        add(1, 1, "owner")  # the bench owner owns the first tenant
        for u in range(3, self.sizes.users):
            user_id = u + 1
            tenant_id = (u - 2) % tenants + 1
            first = tenant_id not in self.tenant_owner
            add(user_id, tenant_id, "owner" if first else roles[u % 3])
            if u % 3 == 0 and tenants > 1:
                other = (tenant_id + 7) % tenants + 1
                if other != tenant_id and user_id not in self.tenant_members[other]:
                    add(user_id, other, "member")
        return self._copy(Membership, rows)

    def roles(self) -> int:
        rows = [{"id": 1, "user_id": 2, "role": "platform_admin", "source": "keycloak"},
                {"id": 2, "user_id": 3, "role": "finance", "source": "keycloak"}]
        return self._copy(RoleAssignment, rows)

    def _tenant_quota(self, tenant_id: int) -> dict[str, int]:
        model = self.tenant_model[tenant_id]
        quota = {f"gpu:{model}": 16 + 8 * (tenant_id % 4), "cpu": 512, "memory-gib": 4096,
                 "storage-gib": 20000}
        quota |= {f"count:{kind}": 10 for kind in KINDS}
        if self.tenant_isolation[tenant_id] == "shared" and model == "nvidia-a100-80gb":
            quota["mig:nvidia-a100-80gb:1g.10gb"] = 14
        return quota

    def quotas(self) -> int:
        rows = []
        for tenant_id in self.tenant_slugs:
            for resource, limit in self._tenant_quota(tenant_id).items():
                rows.append({"id": len(rows) + 1, "tenant_id": tenant_id, "resource": resource,
                             "limit": limit, "in_use": limit // 3,
                             "updated_at": self.anchor - datetime.timedelta(days=10)})
        return self._copy(Quota, rows)

    def billing_accounts(self) -> int:
        return self._copy(BillingAccount, (
            {"id": t, "tenant_id": t, "monthly_budget": Decimal(10000 * (1 + t % 25)),
             "discount_percent": Decimal("5.00") if t % 10 == 0 else Decimal("0"),
             "updated_at": self.anchor}
            for t in self.tenant_slugs
        ))

    def vm_images(self) -> int:
        return self._copy(VmImage, (
            {"id": i + 1, "key": key, "label": label, "container_disk": disk,
             "min_disk_gib": min_disk, "default_user": user, "active": True}
            for i, (key, label, disk, min_disk, user) in enumerate(VM_IMAGES)
        ))

