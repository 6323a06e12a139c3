"""DescribeLogDirs (key 35) v1-4: partition sizes on disk, as ``kafka-log-dirs --describe``.

This broker has one log directory, so the answer has one result: the directory, each
requested partition's size in bytes (every segment, as Kafka counts it) and its offset lag
(the log end minus the high watermark: zero on a single node), and from v4 the volume's
total and usable bytes. A null topic list means every topic; an unknown topic or partition
is left out, as Kafka leaves out replicas it does not host. An offline directory answers
KAFKA_STORAGE_ERROR for the directory with no partitions. It needs DESCRIBE on the cluster.
"""

from __future__ import annotations

import shutil

from kafka.protocol.admin import DescribeLogDirsRequest, DescribeLogDirsResponse

from core.broker.admin_common import in_thread
from core.broker.registry import handles
from core.broker.security.access import AclOperation, cluster_allowed
from core.broker.state import BrokerState, RequestContext
from core.log.errors import UnknownTopicError
from core.protocol.errors import ErrorCode

__all__ = ["handle_describe_log_dirs"]

_Result = DescribeLogDirsResponse.DescribeLogDirsResult
_Topic = _Result.DescribeLogDirsTopic
_Partition = _Topic.DescribeLogDirsPartition


@handles(DescribeLogDirsRequest, versions=(1, 4))
async def handle_describe_log_dirs(state: BrokerState, ctx: RequestContext
                                   ) -> DescribeLogDirsResponse:
    if not cluster_allowed(state, ctx, AclOperation.DESCRIBE):
        # Kafka answers CLUSTER_AUTHORIZATION_FAILED at the top level (v3+) with no dirs.
        return DescribeLogDirsResponse(version=ctx.api_version, throttle_time_ms=0,
                                       error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                       results=[])
    return await in_thread(state, lambda: _describe(state, ctx))


def _describe(state: BrokerState, ctx: RequestContext) -> DescribeLogDirsResponse:
    version = ctx.api_version
    manager = state.manager
    directory = str(manager.data_dir.resolve())
    total = usable = -1
    try:
        usage = shutil.disk_usage(directory)
        total, usable = usage.total, usage.free
    except OSError:
        pass
    if not manager.health.online:
        result = _Result(version=version, error_code=ErrorCode.KAFKA_STORAGE_ERROR,
                         log_dir=directory, topics=[], total_bytes=total, usable_bytes=usable)
        return DescribeLogDirsResponse(version=version, throttle_time_ms=0,
                                       error_code=ErrorCode.NONE, results=[result])
    topics = []
    for name, partitions in _wanted(state, ctx.request.topics):
        rows = []
        for index in partitions:
            try:
                plog = manager.log(name, index)
            except UnknownTopicError:
                continue
            rows.append(_Partition(version=version, partition_index=index,
                                   partition_size=plog.size_bytes,
                                   offset_lag=0,  # a single node's HW is its log end
                                   is_future_key=False))
        if rows:
            topics.append(_Topic(version=version, name=name, partitions=rows))
    result = _Result(version=version, error_code=ErrorCode.NONE, log_dir=directory,
                     topics=topics, total_bytes=total, usable_bytes=usable)
    return DescribeLogDirsResponse(version=version, throttle_time_ms=0,
                                   error_code=ErrorCode.NONE, results=[result])


def _wanted(state: BrokerState, requested: list | None) -> list[tuple[str, list[int]]]:
    """(topic, partitions) to describe: every partition of every topic for a null list."""
    manager = state.manager
    if requested is None:
        out = []
        for name in manager.topics():
            try:
                out.append((name, list(range(manager.topic(name).partitions))))
            except UnknownTopicError:
                continue  # deleted meanwhile
        return out
    return [(t.topic, list(t.partitions)) for t in requested]
