"""An example Ferry Connect plugin: the ``CounterSource`` connector and the
``UppercaseValue`` transform, registered through entry points."""

from ferry_example_plugin.counter import CounterSourceConnector, CounterSourceTask
from ferry_example_plugin.uppercase import UppercaseValue

__all__ = ["CounterSourceConnector", "CounterSourceTask", "UppercaseValue"]

#: Reported as the plugins' version.
__version__ = "0.1.0"
