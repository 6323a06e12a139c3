"""A replicated Ferry cluster: KRaft-named configuration, the Raft metadata quorum and the
metadata it replicates. The package does no network I/O of its own; the broker wires it."""
