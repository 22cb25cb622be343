"""What a portal says is printed as it is (brackets are not Rich markup), and answers that are
not what the API promises become error messages, not tracebacks (a stand-in portal on
127.0.0.1)."""

import pytest

WORKLOAD = {"id": 5, "name": "dev", "tenant": "acme", "kind": "vcluster",
            "kind_label": "vCluster", "status": "provisioning", "status_label": "Provisioning",
            "status_message": "[vcluster syncer] waiting for [/x] pods", "label": ""}


@pytest.fixture
def portal(scripted):
    return scripted()


def test_the_apis_words_with_brackets_are_printed_as_they_are(portal, portalctl):
    run = {"token": "afp_x", "server": portal.url}
    portal.answer("GET", "/api/v1/workloads/", {"count": 1, "next": None,
                                                "results": [WORKLOAD]})
    portal.answer("GET", "/api/v1/workloads/7/",
                  (400, {"error": {"message": "Spec [/x] is [bold]wrong", "fields": {}}}))
    portal.answer("GET", "/api/v1/tenants/acme/", {"slug": "acme", "name": "[/x] Labs"})

    listed = portalctl("workloads", "list", "-t", "acme", **run)
    assert listed.code == 0, listed.stderr
    assert "[vcluster syncer]" in listed.stdout and "[/x]" in listed.stdout

    refused = portalctl("workloads", "show", "7", **run)
    assert refused.code == 6 and "Spec [/x] is [bold]wrong" in refused.stderr

    used = portalctl("tenants", "use", "acme", **run)
    assert used.code == 0 and "Current tenant: acme ([/x] Labs)." in used.stderr


def test_waiting_shows_a_status_message_with_brackets(portal, portalctl):
    portal.answer("GET", "/api/v1/workloads/5/", WORKLOAD)

    waited = portalctl("workloads", "wait", "5", "--interval", "0.05", "--timeout", "0.3",
                       token="afp_x", server=portal.url)

    assert waited.code == 5 and "still provisioning" in waited.stderr
