"""The results as a table: results.md, and query counts compared across scales."""

from __future__ import annotations

import json
from typing import Any

from .options import Options
from .pages import FLOOR
from .provisioning import NAME as PROVISIONING


def query_counts_by_scale(options: Options, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """This run's SQL query count per page, kept per scale next to the results, and set beside
    the counts of every other scale run here: a page whose count grows with the data shows."""
    counts = {row["name"]: row["queries"] for row in rows if "queries" in row}
    (options.out / f"queries-s{options.scale:g}.json").write_text(
        json.dumps(counts, indent=2) + "\n")
    by_scale = {f"{options.scale:g}": counts}
    for path in sorted(options.out.glob("queries-s*.json")):
        scale = path.stem.removeprefix("queries-s")
        if scale not in by_scale:
            by_scale[scale] = json.loads(path.read_text())
    differ = sorted(
        name for name in counts
        if len({scale_counts.get(name, counts[name]) for scale_counts in by_scale.values()}) > 1
    )
    return {"scales": by_scale, "differ": differ}


def _verdict(row: dict[str, Any]) -> str:
    if row.get("beyond_default"):
        return f"not targeted: {row['beyond_default']}"
    if row["name"] == FLOOR or "meets_target" not in row:
        return ""
    return "met" if row["meets_target"] else "missed"


def render_markdown(results: dict[str, Any]) -> str:
    meta, memory = results["meta"], results["memory"]
    lines = [
        f"# Fleet-scale benchmark: scale {meta['scale']:g}",
        "",
        f"{meta['when']}, commit {meta['commit'] or '?'}; gunicorn with "
        f"{meta['gunicorn_workers']} sync workers (PORTAL_ENV=production) on {meta['cpus']} "
        f"CPUs; {meta['requests_per_page']} sequential requests per page, then as many from "
        f"{meta['concurrency']} concurrent clients. Ratios are p95 ÷ the floor's p95 "
        "(`/bench/floor/`: session, user and one query) in the same mode; the target is "
        f"{meta['target_p95_ratio']:g} times with {meta['concurrency']} clients. "
        f"{_floor_sentence(results)}",
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
    lines += _batch_lines(results.get("batch", []))
    lines += [
        "",
        f"Peak RSS of a web worker: {memory['web_worker_peak_rss_mib']} MiB "
        f"(master {memory['gunicorn_master_peak_rss_mib']} MiB).",
        "",
    ]
    if results["not_measured_yet"]:
        lines += ["Not measured yet: " + "; ".join(results["not_measured_yet"]) + ".", ""]
    return "\n".join(lines)


def _batch_lines(batch: list[dict[str, Any]]) -> list[str]:
    """Billing's batch work, the Celery worker and provisioning, each beside its floor (its
    target, for provisioning) of the same run."""
    if not batch:
        return []
    lines = [
        "",
        "Billing's batch work, a Celery worker and provisioning, each against its floor in the "
        "same run (`portal/bench/billing_runs.py`, `portal/bench/worker.py`, "
        "`portal/bench/provisioning.py`; ratios are value ÷ floor):",
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
    return lines


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

