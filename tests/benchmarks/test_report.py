"""The bench's report: every target met or missed from the results, the tables, and the
benchmark page's generated section rewritten between its markers (and nothing else)."""

import copy
import json

import pytest

from bench.publish import END, START, publish, replace_section
from bench.report import counts_differ, evaluate_targets, render_markdown


def _timed(p95: float) -> dict:
    return {"median_ms": p95 / 2, "p95_ms": p95, "count": 10}


def _page(name: str, ratio: float, **extra) -> dict:
    return {"name": name, "status": 200, "queries": 5, "bytes": 2048, "rows": None,
            "errors": 0, "targeted": name != "floor",
            "sequential": _timed(10 * ratio) | {"p95_ratio": ratio},
            "concurrent": _timed(20 * ratio) | {"p95_ratio": ratio, "clients": 4}} | extra


def _group(name: str, ratio: float, **extra) -> dict:
    return {"name": name, "fixed": name, "urls": 40, "users": 40,
            "queries": {"max": 9, "min": 8, "most_at": f"/{name}/"}, "errors": 0,
            "error_statuses": [], "dropped": 0, **_timed(30 * ratio), "p95_ratio": ratio} | extra


RESULTS = {
    "meta": {"when": "2026-12-06T03:00:00+00:00", "commit": "abc1234", "scale": 1,
             "requests_per_page": 200, "concurrency": 4, "gunicorn_workers": 4, "cpus": 2,
             "floor": "floor", "target_p95_ratio": 4.0, "varied_target_p95_ratio": 6.0,
             "web_rss_target_mib": 250},
    "pages": [_page("floor", 1.0), _page("tenant dashboard", 3.1),
              _page("node list", 3.9),
              _page("portal review queue, 400", 7.5, targeted=False,
                    beyond_default="400 rows, 8 times the default")],
    "varied": {"groups": [_group("floor", 1.0), _group("tenant dashboard", 4.2),
                          _group("node list", 5.5)],
               "target_p95_ratio": 6.0, "requests": 600, "scheduled": 600, "seconds": 60.0,
               "requests_per_second": 10.0,
               "beat": {"tasks": {"workloads_observe_sweep_task": {
                   "sent": 4, "done": 4, "done_in_mode": 3, "failed": 0, "most_seconds": 12.5}},
                        "sweep_seconds": 15.0, "meter_seconds": 60.0,
                        "worker_peak_rss_mib": 180.0}},
    "batch": [{"name": "usage ingestion", "unit": "rows/s", "portal": "usage_meter_span",
               "floor": "COPY", "portal_value": 60000, "floor_value": 65000, "ratio": 0.92,
               "target": "≥ 0.5 times COPY", "meets_target": True},
              {"name": "month-end invoicing", "skipped": "no usage records in the data set"}],
    "memory": {"web_worker_peak_rss_mib": 190.5, "web_worker_peak_rss_after_fixed_mib": 170.0,
               "gunicorn_master_peak_rss_mib": 150.0},
    "query_counts_by_scale": {"scales": {"1": {"node list": 6}}, "differ": []},
    "not_measured_yet": [],
}


def _verdicts(results: dict) -> dict[str, bool | None]:
    return {target["target"].split(":")[0]: target["met"] for target in evaluate_targets(results)}


def test_every_target_is_met_missed_or_not_measured():
    assert _verdicts(RESULTS) == {
        "fixed mode": True,  # the 400-row page is over 4 but not targeted
        "varied mode": True,
        "queries per request constant in data size": None,  # one scale run
        "web worker peak RSS after the varied mode < 250 MiB": True,
        "usage ingestion": True,
        "month-end invoicing": None,
    }
    targets = evaluate_targets(RESULTS)
    assert targets[0]["measured"] == "highest 3.9 (node list)"
    assert targets[1]["measured"] == "highest 5.5 (node list)"


@pytest.mark.parametrize(("change", "missed"), [
    (lambda r: r["pages"][2]["concurrent"].update(p95_ratio=4.01), "fixed mode"),
    (lambda r: r["pages"][1].update(errors=3), "fixed mode"),
    (lambda r: r["varied"]["groups"][2].update(p95_ratio=6.2), "varied mode"),
    (lambda r: r["varied"]["groups"][1].update(errors=1), "varied mode"),
    (lambda r: r["memory"].update(web_worker_peak_rss_mib=250.0),
     "web worker peak RSS after the varied mode < 250 MiB"),
    (lambda r: r["batch"][0].update(meets_target=False), "usage ingestion"),
    (lambda r: r["query_counts_by_scale"].update(
        scales={"1": {"node list": 6}, "0.1": {"node list": 7}}, differ=["node list"]),
     "queries per request constant in data size"),
])
def test_a_target_over_its_limit_is_missed(change, missed):
    results = copy.deepcopy(RESULTS)
    change(results)
    verdicts = _verdicts(results)
    assert verdicts.pop(missed) is False
    assert False not in verdicts.values()


def test_a_varied_group_that_was_never_timed_is_not_a_pass():
    results = copy.deepcopy(RESULTS)
    del results["varied"]["groups"][2]["p95_ratio"]
    assert _verdicts(results)["varied mode"] is False


def test_query_counts_differ_only_where_a_page_counted_at_two_scales_differs():
    assert counts_differ({"1": {"a": 5, "b": 6, "c": 4}, "0.1": {"a": 5, "b": 7}}) == ["b"]
    assert counts_differ({"1": {"a": 5}}) == []


def test_the_tables_show_both_modes_side_by_side_and_the_targets():
    markdown = render_markdown(RESULTS, level=3)
    assert markdown.startswith("### Fleet-scale benchmark: scale 1\n")
    assert "#### Targets" in markdown and "#### Varied mode" in markdown
    assert "#### Fixed mode" in markdown
    assert "| varied mode: every page's p95 ≤ 6 times the floor (4 clients, beat running) | " \
           "highest 5.5 (node list) | met |" in markdown
    # The varied row sits beside the same page's fixed-mode ratio.
    assert "| node list | 40 | 40 | 8 to 9 | 10 | 82.5 | 165.0 | 5.5 | 3.9 | met |" in markdown
    assert "| month-end invoicing: not measured" not in markdown
    assert "| month-end invoicing | not measured: no usage records in the data set | " \
           "not measured |" in markdown
    assert "workloads_observe_sweep_task 4 sent, 3 done during the mode (the longest 12.5 s " \
           "from sent to done)" in markdown
    assert "190.5 MiB after the varied mode (170.0 MiB after the fixed mode" in markdown


PAGE = f"""# Benchmark

How to run it.

## Results

{START}
old table
{END}

The end.
"""


def test_the_page_s_section_is_replaced_and_the_rest_kept(tmp_path):
    replaced = replace_section(PAGE, "new table\n")
    assert "old table" not in replaced
    assert replaced.startswith("# Benchmark\n\nHow to run it.\n\n## Results\n\n" + START)
    assert replaced.endswith(f"new table\n\n{END}\n\nThe end.\n")
    # Again: the same page, so a run rewrites it in place.
    assert replace_section(replaced, "new table\n") == replaced

    results, page = tmp_path / "results.json", tmp_path / "benchmark.md"
    results.write_text(json.dumps(RESULTS))
    page.write_text(PAGE)
    publish(results, page)
    written = page.read_text()
    assert "### Fleet-scale benchmark: scale 1" in written and written.endswith("The end.\n")


@pytest.mark.parametrize("page", ["no markers", f"{START} only", f"{END} {START}",
                                  f"{START}{END}{START}{END}"])
def test_a_page_without_one_section_is_refused(page):
    with pytest.raises(ValueError, match="needs one"):
        replace_section(page, "table")


def test_a_run_with_beat_turned_off_says_so():
    results = copy.deepcopy(RESULTS)
    results["varied"]["beat"] |= {"tasks": {}, "sweep_seconds": 0.0, "meter_seconds": 0.0}
    markdown = render_markdown(results)
    assert "(the observe sweep never (turned off), a metering window never (turned off): " \
           "none sent;" in markdown
