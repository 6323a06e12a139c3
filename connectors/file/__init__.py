"""FileStream connectors: lines of a file (or stdin) to a topic, and records to a file.

Ferry's counterparts of Kafka's ``connect-file`` plugin, with the same config keys and the
same source partitions and offsets, so offsets Kafka Connect stored for
``FileStreamSourceConnector`` resume here unchanged.
"""

from connectors.file.sink_connector import FileStreamSinkConnector
from connectors.file.sink_task import FileStreamSinkTask
from connectors.file.source_connector import FileStreamSourceConnector
from connectors.file.source_task import FileStreamSourceTask

__all__ = [
    "FileStreamSinkConnector",
    "FileStreamSinkTask",
    "FileStreamSourceConnector",
    "FileStreamSourceTask",
]
