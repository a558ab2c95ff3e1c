"""Playing a tournament: the coordinator, its executors (local processes, a Dask cluster),
the workers and their reaper, the preflight of the bot pool, remote bots, head-to-head
runs."""
