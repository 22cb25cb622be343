"""The tenant filter of finance's lists (invoice list, usage explorer): a tenant's slug typed in
a text box rather than picked from a select of every tenant (a fleet has thousands: the select
alone was ~100 KiB of each page). The lists filter on the exact slug, as links, exports and the
API always have; this only explains an unknown slug and offers the tenants it may have meant."""

from dataclasses import dataclass, field

from django.db.models import Case, Q, QuerySet, Value, When

from tenants.models import Tenant

SUGGESTIONS = 8


@dataclass(frozen=True)
class TenantChoice:
    """What the filter typed matched: the tenant of that slug, else a few close ones."""

    text: str
    tenant: dict | None = None  # {"slug", "name"} of the tenant with exactly that slug
    suggestions: list[dict] = field(default_factory=list)

    @property
    def unknown(self) -> bool:
        return bool(self.text) and self.tenant is None


def tenant_choice(text: str | None) -> TenantChoice:
    """The tenant whose slug is `text`, or up to SUGGESTIONS whose slug or name contains it, in
    one query (none without text)."""
    text = (text or "").strip()
    if not text:
        return TenantChoice(text="")
    rows = list(
        Tenant.objects.filter(Q(slug=text) | Q(slug__icontains=text) | Q(name__icontains=text))
        # The exact slug first, so it is never cut off by the limit.
        .annotate(rank=Case(When(slug=text, then=Value(0)), default=Value(1)))
        .order_by("rank", "name")
        .values("slug", "name")[: SUGGESTIONS + 1]
    )
    if rows and rows[0]["slug"] == text:
        return TenantChoice(text=text, tenant=rows[0])
    return TenantChoice(text=text, suggestions=rows[:SUGGESTIONS])


MAX_OPTIONS = 50


def few_choices(values: QuerySet) -> list[str] | None:
    """`values` (a flat, ordered values_list) when they are few enough for a select, else None:
    the page then offers a text box. One query, of at most MAX_OPTIONS + 1 rows. (Cost centers
    are usually few, but a fleet may give each of its thousands of tenants its own.)"""
    rows = list(values[: MAX_OPTIONS + 1])
    return None if len(rows) > MAX_OPTIONS else rows


PICKER_OPTIONS = 20


def tenant_options(*, text: str) -> list[dict]:
    """What the tenant picker offers for `text`: up to PICKER_OPTIONS tenants whose slug or name
    contains it, the exact slug first, then slugs starting with it, then by name (the first by
    name without text). One query, however many tenants there are."""
    text = (text or "").strip()[:100]
    tenants = Tenant.objects.all()
    if text:
        tenants = tenants.filter(Q(slug__icontains=text) | Q(name__icontains=text)).annotate(
            rank=Case(When(slug=text, then=Value(0)), When(slug__istartswith=text, then=Value(1)),
                      default=Value(2))
        ).order_by("rank", "name", "slug")
    else:
        tenants = tenants.order_by("name", "slug")
    return list(tenants.values("slug", "name")[:PICKER_OPTIONS])


def cost_center_options(*, text: str) -> list[str]:
    """What the cost-center picker offers for `text` (when too many for a select): up to
    PICKER_OPTIONS of the tenants' cost centers containing it, in order. One query."""
    text = (text or "").strip()[:50]
    centers = Tenant.objects.exclude(cost_center="")
    if text:
        centers = centers.filter(cost_center__icontains=text)
    return list(centers.order_by("cost_center").values_list("cost_center", flat=True)
                .distinct()[:PICKER_OPTIONS])
