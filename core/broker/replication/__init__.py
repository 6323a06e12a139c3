"""Partition replication, Kafka's ISR model, for the cluster (in progress): the leader's
view of its followers and the high watermark, and the leader-epoch cache that lets a
follower find where its log diverged. Sans-I/O; the fetcher and the Produce/Fetch hooks
that use them come next."""
