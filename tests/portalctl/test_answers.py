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


def test_a_later_page_that_is_not_json_is_an_error(portal, portalctl):
    portal.answer("GET", "/api/v1/workloads/",
                  {"count": 2, "next": f"{portal.url}/api/v1/workloads/?page=2",
                   "results": [WORKLOAD]},
                  (200, b"<html>proxy error</html>", {"Content-Type": "text/html"}))

    out = portalctl("workloads", "list", "-t", "acme", token="afp_x", server=portal.url)

    assert out.code == 1 and "not JSON" in out.stderr


def test_a_page_without_results_is_an_error(portal, portalctl):
    portal.answer("GET", "/api/v1/workloads/", {"detail": "something else"})

    out = portalctl("workloads", "list", "-t", "acme", token="afp_x", server=portal.url)

    assert out.code == 1 and "not a page of results" in out.stderr


def test_the_next_page_is_asked_of_the_portal_itself(portal, portalctl):
    # Behind a proxy the portal may name another host: the token is sent to the portal only.
    portal.answer("GET", "/api/v1/workloads/",
                  {"count": 2, "next": "http://inner-host.invalid:8000/api/v1/workloads/?page=2",
                   "results": [WORKLOAD]},
                  {"count": 2, "next": None, "results": [{**WORKLOAD, "id": 6, "name": "b"}]})

    out = portalctl("workloads", "list", "-t", "acme", "-o", "json", token="afp_x",
                    server=portal.url)

    assert out.code == 0, out.stderr
    assert [w["name"] for w in out.json()] == ["dev", "b"]
