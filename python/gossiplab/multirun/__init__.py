"""Many runs at once: sweeps, campaigns, the executors that run their points, comparisons
and trends across their results."""
