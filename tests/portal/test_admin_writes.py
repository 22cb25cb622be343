"""Every write made through Django admin goes through a service: its audit event and its
cluster follow-up are never skipped.

The walk covers every registered ModelAdmin, the libraries' too: one that lets a platform admin
add, change or delete must override the hooks Django would otherwise use to write through the
ORM directly (save_model, delete_model, delete_queryset, save_formset for editable inlines).
"""

import pytest
from django.contrib import admin
from django.contrib.admin import ModelAdmin
from django.test import RequestFactory

from core.models import AuditEvent
from inventory.models import NodeState
from tenants.models import Membership, RoleAssignment
from tests.factories import NodeFactory, UserFactory

HOOKS_FOR = {
    "write": ("save_model",),
    "delete": ("delete_model", "delete_queryset"),
}


def _overrides(model_admin: ModelAdmin, hook: str) -> bool:
    return getattr(type(model_admin), hook) is not getattr(ModelAdmin, hook)


@pytest.mark.django_db
def test_every_editable_model_admin_writes_through_a_service(platform_admin):
    request = RequestFactory().get("/admin/")
    request.user = platform_admin
    missing = []
    for model, model_admin in admin.site._registry.items():
        label = model._meta.label
        writes = model_admin.has_add_permission(request) or model_admin.has_change_permission(
            request
        )
        if writes and not _overrides(model_admin, "save_model"):
            missing.append(f"{label}: save_model")
        if model_admin.has_delete_permission(request):
            missing += [
                f"{label}: {hook}" for hook in HOOKS_FOR["delete"]
                if not _overrides(model_admin, hook)
            ]
        for inline_class in model_admin.inlines:
            inline = inline_class(model, admin.site)
            editable = (
                inline.has_add_permission(request, None)
                or inline.has_change_permission(request, None)
                or inline.has_delete_permission(request, None)
            )
            if editable and not _overrides(model_admin, "save_formset"):
                missing.append(f"{label}: save_formset ({inline_class.__name__})")
    assert missing == []


@pytest.mark.django_db
def test_making_someone_a_platform_admin_in_django_admin_is_audited(login, platform_admin):
    someone = UserFactory(username="hana")
    client = login(platform_admin)

    response = client.post(
        "/admin/tenants/roleassignment/add/", {"user": someone.pk, "role": "platform_admin"}
    )

    assert response.status_code == 302, response.content.decode()[:2000]
    assert RoleAssignment.objects.filter(user=someone, role="platform_admin").exists()
    event = AuditEvent.objects.get(action="role.grant")
    assert event.actor == platform_admin
    assert event.changes["user"] == "hana"


@pytest.mark.django_db
def test_a_superuser_flag_set_in_django_admin_is_audited(login, platform_admin):
    someone = UserFactory(username="hana")
    client = login(platform_admin)

    response = client.post(
        f"/admin/auth/user/{someone.pk}/change/",
        {
            "username": "hana", "first_name": "", "last_name": "", "email": "",
            "is_active": "on", "is_superuser": "on",
            "last_login_0": "", "last_login_1": "", "date_joined_0": "2026-01-01",
            "date_joined_1": "00:00:00",
        },
    )

    assert response.status_code == 302, response.content.decode()[:3000]
    event = AuditEvent.objects.get(action="user.update")
    assert event.actor == platform_admin
    assert event.changes["is_superuser"] == [False, True]


@pytest.mark.django_db
def test_a_membership_added_and_removed_in_django_admin_is_audited(
    login, platform_admin, tenant
):
    someone = UserFactory(username="hana")
    client = login(platform_admin)

    client.post("/admin/tenants/membership/add/",
                {"user": someone.pk, "tenant": tenant.pk, "role": "member"})
    membership = Membership.objects.get(user=someone, tenant=tenant)
    client.post(f"/admin/tenants/membership/{membership.pk}/delete/", {"post": "yes"})

    assert not Membership.objects.filter(pk=membership.pk).exists()
    actions = list(
        AuditEvent.objects.filter(object_type="tenants.membership")
        .order_by("id").values_list("action", "actor_repr")
    )
    who = "platform-admin"
    assert actions == [("membership.set", who), ("membership.remove", who)]


@pytest.mark.django_db(transaction=True)
def test_changing_a_nodes_reserved_tenant_in_django_admin_reaches_the_cluster_at_once(
    login, platform_admin, simulated_gateway
):
    node = NodeFactory(state=NodeState.AVAILABLE, reserved_for="")
    simulated_gateway.apply(
        manifests=[{"apiVersion": "v1", "kind": "Node", "metadata": {"name": node.k8s_name}}]
    )
    client = login(platform_admin)
    form = client.get(f"/admin/inventory/node/{node.pk}/change/").context["adminform"].form
    data = {
        name: ("" if value is None else value)
        for name, value in form.initial.items()
        if name in form.fields
    }
    data |= {"reserved_for": "helix", "rack": node.rack_id or ""}
    for prefix in ("gpus", "nics", "health_events"):
        data |= {f"{prefix}-TOTAL_FORMS": 0, f"{prefix}-INITIAL_FORMS": 0}

    response = client.post(f"/admin/inventory/node/{node.pk}/change/", data)

    assert response.status_code == 302, response.content.decode()[:3000]
    node.refresh_from_db()
    assert node.reserved_for == "helix"
    assert node.state == NodeState.AVAILABLE
    event = AuditEvent.objects.get(action="node.update")
    assert event.changes["reserved_for"] == ["", "helix"]
    live = simulated_gateway.get(api_version="v1", kind="Node", name=node.k8s_name)
    assert live["metadata"]["labels"]["portal.ai-factory.io/reserved-for"] == "helix"
    assert {"key": "portal.ai-factory.io/reserved-for", "value": "helix",
            "effect": "NoSchedule"} in live["spec"]["taints"]
