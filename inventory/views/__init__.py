"""Fleet pages: overview, nodes, racks, capacity, import/export (thin: parse, authorize, call)."""
