"""The demo, a development package production never installs: its data (`manage.py load_demo`)
and the simulated fleet (FLEET_BACKEND=simulated), whose controllers play the cluster's
operators (scheduler, KServe, KubeVirt, Slinky, Flux) over rows of the database."""
