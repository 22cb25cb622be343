"""One module per workload kind: pure functions that validate a spec, build its manifests,
compute its demand and read its status back (see `base.WorkloadKind`)."""
