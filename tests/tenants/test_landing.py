"""Which tenant a user's dashboard opens on when they have not picked one."""

from tenants.access.selectors import tenant_for_dashboard
from tenants.models import Membership
from tests.factories import MembershipFactory, TenantFactory, UserFactory


def test_dashboard_opens_where_the_user_works_before_where_they_only_watch(db):
    user = UserFactory(username="mike")
    watched = TenantFactory(slug="atlas", name="Atlas Evaluation")
    worked_in = TenantFactory(slug="nova", name="Nova Inference")
    MembershipFactory(user=user, tenant=watched, role=Membership.Role.VIEWER)
    MembershipFactory(user=user, tenant=worked_in, role=Membership.Role.MEMBER)

    assert tenant_for_dashboard(user=user, slug=None) == worked_in
    assert tenant_for_dashboard(user=user, slug="atlas") == watched


def test_dashboard_of_an_admin_without_memberships_opens_on_the_first_tenant(platform_admin):
    TenantFactory(slug="zeta", name="Zeta")
    first = TenantFactory(slug="alpha", name="Alpha")

    assert tenant_for_dashboard(user=platform_admin, slug=None) == first
