"""The results as tables: results.md (and the benchmark page's generated section, written by
`bench.publish`), every target met or missed, and query counts compared across scales.

Pure: it reads the results (as results.json holds them), never the database or settings.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from .pages import FLOOR

if TYPE_CHECKING:
    from .options import Options

PROVISIONING = "provisioning throughput"  # the batch row bench.provisioning writes
TWO_CLUSTERS = "provisioning throughput, two clusters"  # bench.provisioning_clusters's row


def query_counts_by_scale(options: Options, rows: list[dict[str, Any]],
                          groups: list[dict[str, Any]] = ()) -> dict[str, Any]:
    """This run's SQL query count per page (and the most of any URL of each varied group),
    kept per scale next to the results, and set beside the counts of every other scale run
    here: a page whose count grows with the data shows."""
    counts = {row["name"]: row["queries"] for row in rows if "queries" in row}
    counts |= {f"varied: {group['name']}": group["queries"]["max"] for group in groups
               if group.get("queries")}
    (options.out / f"queries-s{options.scale:g}.json").write_text(
        json.dumps(counts, indent=2) + "\n")
    by_scale = {f"{options.scale:g}": counts}
    for path in sorted(options.out.glob("queries-s*.json")):
        scale = path.stem.removeprefix("queries-s")
        if scale not in by_scale:
            by_scale[scale] = json.loads(path.read_text())
    return {"scales": by_scale, "differ": counts_differ(by_scale)}


def counts_differ(by_scale: dict[str, dict[str, int]]) -> list[str]:
    """The pages whose query count is not the same at every scale that counted them."""
    names = {name for counts in by_scale.values() for name in counts}
    return sorted(name for name in names
                  if len({counts[name] for counts in by_scale.values() if name in counts}) > 1)


def _target(name: str, measured: str, met: bool | None) -> dict[str, Any]:
    return {"target": name, "measured": measured, "met": met}


def _worst(rows: list[tuple[str, float]]) -> str:
    if not rows:
        return "nothing measured"
    name, ratio = max(rows, key=lambda item: item[1])
    return f"highest {ratio:g} ({name})"


def evaluate_targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Every target of the run, each with what was measured and whether it was met (None: not
    measured in this run)."""
    meta, memory = results["meta"], results["memory"]
    clients = meta["concurrency"]
    targets = []
    fixed = [row for row in results["pages"] if row.get("targeted") and "concurrent" in row]
    fixed_ratios = [(row["name"], row["concurrent"]["p95_ratio"]) for row in fixed
                    if "p95_ratio" in row["concurrent"]]
    fixed_errors = [row["name"] for row in fixed if row.get("errors")]
    targets.append(_target(
        f"fixed mode: every page's p95 ≤ {meta['target_p95_ratio']:g} times the floor "
        f"({clients} clients)",
        _worst(fixed_ratios) + (f"; errors on {', '.join(fixed_errors)}" if fixed_errors
                                else ""),
        bool(fixed_ratios) and not fixed_errors
        and all(ratio <= meta["target_p95_ratio"] for _, ratio in fixed_ratios)))
    varied = results.get("varied") or {}
    groups = [row for row in varied.get("groups", []) if row["name"] != FLOOR]
    limit = meta.get("varied_target_p95_ratio", 6.0)
    varied_ratios = [(row["name"], row["p95_ratio"]) for row in groups if "p95_ratio" in row]
    unmeasured = [row["name"] for row in groups if "p95_ratio" in row] != [
        row["name"] for row in groups]
    varied_errors = [row["name"] for row in groups if row.get("errors")]
    targets.append(_target(
        f"varied mode: every page's p95 ≤ {limit:g} times the floor ({clients} clients, beat "
        "running)",
        _worst(varied_ratios) + (f"; errors on {', '.join(varied_errors)}" if varied_errors
                                 else "") + ("; some groups not measured" if unmeasured else ""),
        (bool(varied_ratios) and not varied_errors and not unmeasured
         and all(ratio <= limit for _, ratio in varied_ratios)) if groups else None))
    by_scale = results.get("query_counts_by_scale") or {"scales": {}, "differ": []}
    scales = sorted(by_scale["scales"])
    targets.append(_target(
        "queries per request constant in data size",
        (f"scales {', '.join(scales)}: " + ("the same on every page" if not by_scale["differ"]
                                            else "differ on " + ", ".join(by_scale["differ"])))
        if len(scales) > 1 else "one scale run here (run another to compare)",
        not by_scale["differ"] if len(scales) > 1 else None))
    rss, rss_limit = memory.get("web_worker_peak_rss_mib"), meta.get("web_rss_target_mib", 250)
    targets.append(_target(
        f"web worker peak RSS after the varied mode < {rss_limit:g} MiB",
        f"{rss} MiB" if rss is not None else "not read",
        rss < rss_limit if rss is not None else None))
    for row in results.get("batch", []):
        if "skipped" in row:
            targets.append(_target(row["name"], f"not measured: {row['skipped']}", None))
            continue
        targets.append(_target(f"{row['name']}: {row['target']}",
                               f"{row['ratio']} ({row['portal_value']} {row['unit']} against "
                               f"{row['floor_value']} {row['unit']})", row["meets_target"]))
    return targets


def _verdict(row: dict[str, Any]) -> str:
    if row.get("beyond_default"):
        return f"not targeted: {row['beyond_default']}"
    if row["name"] == FLOOR or "meets_target" not in row:
        return ""
    return "met" if row["meets_target"] else "missed"


def _met(met: bool | None) -> str:
    return {True: "met", False: "**missed**", None: "not measured"}[met]


def render_markdown(results: dict[str, Any], *, level: int = 1) -> str:
    """The results as Markdown, its title at heading `level` and its parts one below."""
    meta, memory = results["meta"], results["memory"]
    top, sub = "#" * level, "#" * (level + 1)
    lines = [
        f"{top} Fleet-scale benchmark: scale {meta['scale']:g}",
        "",
        f"{meta['when']}, commit {meta['commit'] or '?'}; gunicorn with "
        f"{meta['gunicorn_workers']} sync workers (PORTAL_ENV=production) on {meta['cpus']} "
        f"CPUs; {meta['concurrency']} concurrent clients.",
        "",
        f"{sub} Targets",
        "",
        "| target | measured | verdict |",
        "|---|---|---|",
        *(f"| {t['target']} | {t['measured']} | {_met(t['met'])} |"
          for t in results.get("targets") or evaluate_targets(results)),
    ]
    lines += _varied_lines(results, sub)
    lines += _fixed_lines(results, sub)
    lines += _batch_lines(results.get("batch", []))
    lines += [
        "",
        f"Peak RSS of a web worker: {memory['web_worker_peak_rss_mib']} MiB after the varied "
        f"mode ({memory.get('web_worker_peak_rss_after_fixed_mib')} MiB after the fixed mode; "
        f"master {memory['gunicorn_master_peak_rss_mib']} MiB).",
        "",
    ]
    if results["not_measured_yet"]:
        lines += ["Not measured yet: " + "; ".join(results["not_measured_yet"]) + ".", ""]
    return "\n".join(lines)


def _queries(group: dict[str, Any]) -> str:
    counted = group.get("queries")
    if not counted:
        return ""
    low, high = counted["min"], counted["max"]
    return f"{high}" if low == high else f"{low} to {high}"


def _every(seconds: float) -> str:
    return f"every {seconds:g} s" if seconds > 0 else "never (turned off)"


def _varied_lines(results: dict[str, Any], sub: str) -> list[str]:
    varied = results.get("varied")
    if not varied:
        return []
    clients = results["meta"]["concurrency"]
    fixed = {row["name"]: row for row in results["pages"]}
    beat = varied["beat"]
    tasks = "; ".join(
        f"{name} {t['sent']} sent, {t['done_in_mode']} done during the mode"
        + (f" (the longest {t['most_seconds']} s from sent to done)"
           if t["most_seconds"] is not None else "")
        + (f", {t['failed']} failed" if t["failed"] else "")
        for name, t in beat["tasks"].items()) or "none sent"
    lines = [
        "",
        f"{sub} Varied mode",
        "",
        f"{varied['requests']:,} requests of {varied['scheduled']:,} scheduled in "
        f"{varied['seconds']} s ({varied['requests_per_second']} a second) from {clients} "
        "clients, each a URL picked at random from its group's pool, while a Celery worker ran "
        f"beat's tasks (the observe sweep {_every(beat['sweep_seconds'])}, a metering "
        f"window {_every(beat['meter_seconds'])}: {tasks}; its peak RSS "
        f"{beat['worker_peak_rss_mib']} MiB). Ratios are p95 ÷ the floor's p95 in this mode, "
        "whose requests are mixed in with the others'; queries are the fewest to the most of "
        "any URL of the group first asked, counted in-process.",
        "",
        "| page group | URLs | accounts | queries | requests | median ms | p95 ms | "
        f"p95 ÷ floor | fixed mode p95 ÷ floor ({clients}) | target |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    limit = varied["target_p95_ratio"]
    for row in varied["groups"]:
        if "p95_ms" not in row:
            lines.append(f"| {row['name']} | {row['urls']} | {row['users']} | {_queries(row)} "
                         "| 0 | | | | | not measured |")
            continue
        counterpart = fixed.get(row["fixed"], {}).get("concurrent", {})
        verdict = "" if row["name"] == FLOOR else (
            "met" if row.get("p95_ratio", limit + 1) <= limit and not row["errors"]
            else "missed")
        errors = f" ⚠{row['errors']} {row['error_statuses']}" if row["errors"] else ""
        lines.append(
            f"| {row['name']} | {row['urls']} | {row['users']} | {_queries(row)} | "
            f"{row['count']}{errors} | {row['median_ms']} | {row['p95_ms']} | "
            f"{row.get('p95_ratio', '')} | {counterpart.get('p95_ratio', '')} | {verdict} |")
    return lines


def _fixed_lines(results: dict[str, Any], sub: str) -> list[str]:
    meta = results["meta"]
    lines = [
        "",
        f"{sub} Fixed mode",
        "",
        f"Each page's one URL, nothing else running: {meta['requests_per_page']} sequential "
        f"requests per page, then as many from {meta['concurrency']} concurrent clients. "
        "Ratios are p95 ÷ the floor's p95 (`/bench/floor/`: session, user and one query) in "
        f"the same mode. {_floor_sentence(results)}",
        "",
        "| page | status | queries | KiB | rows | median ms | p95 ms | p95 ÷ floor | "
        f"median ms ({meta['concurrency']}) | p95 ms ({meta['concurrency']}) | "
        f"p95 ÷ floor ({meta['concurrency']}) | target |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in results["pages"]:
        if "sequential" not in row:
            lines.append(f"| {row['name']} | {row.get('skipped', '')} | "
                         f"{row.get('queries', '')} | | | | | | | | | |")
            continue
        seq, conc = row["sequential"], row["concurrent"]
        lines.append(
            f"| {row['name']} | {row['status']}{' ⚠' + str(row['errors']) if row['errors'] else ''}"
            f" | {row['queries']} | {row['bytes'] / 1024:.1f} | {row['rows'] or ''} | "
            f"{seq['median_ms']} | {seq['p95_ms']} | {seq.get('p95_ratio', '')} | "
            f"{conc['median_ms']} | {conc['p95_ms']} | {conc.get('p95_ratio', '')} | "
            f"{_verdict(row)} |"
        )
    by_scale = results["query_counts_by_scale"]
    if len(by_scale["scales"]) > 1:
        lines += ["", "SQL queries per page at the scales run here ("
                  + ", ".join(sorted(by_scale["scales"])) + "): "
                  + ("the same on every page." if not by_scale["differ"] else
                     "they differ on " + ", ".join(by_scale["differ"]) + ".")]
    return lines


def _batch_lines(batch: list[dict[str, Any]]) -> list[str]:
    """Billing's batch work, the Celery worker and provisioning, each beside its floor (its
    target, for provisioning) of the same run."""
    if not batch:
        return []
    lines = [
        "",
        "Billing's batch work, a Celery worker and provisioning, each against its floor in the "
        "same run (`bench/billing_runs.py`, `bench/worker.py`, "
        "`bench/provisioning.py`, `bench/provisioning_clusters.py`; ratios are value ÷ floor):",
        "",
        "| measurement | portal | value | floor | floor value | ratio | target | verdict |",
        "|---|---|---:|---|---:|---:|---|---|",
    ]
    for row in batch:
        if "skipped" in row:
            lines.append(f"| {row['name']} | {row['skipped']} | | | | | | |")
            continue
        unit = row["unit"]
        lines.append(
            f"| {row['name']} | {row['portal']} | {row['portal_value']} {unit} | "
            f"{row['floor']} | {row['floor_value']} {unit} | {row['ratio']} | "
            f"{row['target']} | {'met' if row['meets_target'] else 'missed'} |"
        )
    lines += _provisioning_lines(next((row for row in batch if row["name"] == PROVISIONING
                                       and "skipped" not in row), None))
    lines += _two_clusters_lines(next((row for row in batch if row["name"] == TWO_CLUSTERS
                                       and "skipped" not in row), None))
    return lines


def _two_clusters_lines(row: dict[str, Any] | None) -> list[str]:
    """The fast cluster's pace alone and while the slow one is busy, and how far the slow one
    got meanwhile."""
    if row is None:
        return []
    details = row["details"]
    alone, busy = details["alone"], details["busy"]
    return [
        "",
        f"Two clusters: the fast cluster alone made {alone['ready']} of {alone['workloads']} "
        f"workloads ready in {alone['seconds']} s (**{alone['workloads_per_second']} "
        f"workloads/s**); with {details['slow_workloads']} launched first on the slow one "
        f"(every request held {details['slow_seconds_per_request']:g} s), {busy['ready']} of "
        f"{busy['workloads']} in {busy['seconds']} s (**{busy['workloads_per_second']} "
        f"workloads/s**, {row['ratio']} of alone), while the slow cluster had "
        f"{details['slow_ready_when_fast_done']} ready and had answered "
        f"{details['slow_kube_requests_when_fast_done']} requests; one Celery worker per "
        "cluster queue.",
    ]


def _provisioning_lines(row: dict[str, Any] | None) -> list[str]:
    """Provisioning's figures besides requests per workload: its pace, what it asked of the
    cluster by verb and resource, what it owns, and its workers' memory."""
    if row is None:
        return []
    details = row["details"]
    by_kind = ", ".join(f"{kind} {n / details['workloads']:.2f}"
                        for kind, n in details["kube_requests_by_kind"].items())
    owned = ", ".join(f"{kind} {n / details['workloads']:.2f}"
                      for kind, n in details["objects_owned_by_kind"].items())
    ready_after = details["ready_after_seconds"]
    return [
        "",
        f"Provisioning: {details['ready']:,} of {details['workloads']:,} workloads ready in "
        f"{details['seconds']} s, **{details['workloads_per_second']} workloads/s** (launched "
        f"through the API in {details['launch_seconds']} s; launch to ready median "
        f"{ready_after['median']} s, p95 {ready_after['p95']} s; observe sweep every "
        f"{details['sweep_seconds']:g} s). Kubernetes requests per workload: "
        f"{details['kube_requests_per_workload']} ({by_kind}); objects owned per workload: "
        f"{details['objects_owned_per_workload']} ({owned}). Peak RSS of its "
        f"{details['workers']} Celery workers: {details['worker_peak_rss_mib']} MiB "
        f"({'met' if details['worker_rss_meets_target'] else 'missed'}: "
        f"{details['worker_rss_target']}).",
    ]


def _floor_sentence(results: dict) -> str:
    """How the floor was timed: before every page, its figures over all those requests."""
    floor = next((row for row in results["pages"] if row.get("name") == "floor"), {})
    spread = floor.get("floor_windows")
    if not spread:
        return ""
    seq, conc = spread["sequential"], spread["concurrent"]
    return (
        f"The floor was timed before every page ({spread['windows']} times); its figures are "
        "those of all these requests (one window's p95 ranged from "
        f"{seq['lowest_p95_ms']} to {seq['highest_p95_ms']} ms alone and from "
        f"{conc['lowest_p95_ms']} to {conc['highest_p95_ms']} ms with "
        f"{results['meta']['concurrency']} clients)."
    )

