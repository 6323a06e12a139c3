"""Elasticsearch / OpenSearch sink connector, compatible with Confluent's
``io.confluent.connect.elasticsearch.ElasticsearchSinkConnector`` configs.

Modules, one concept each:

* ``config``: the declared keys (Confluent's names and defaults) and the parsed settings
* ``naming``: index / data stream names, document ids and external versions (pure)
* ``mapping``: Connect schema → Elasticsearch mapping, and mapping conflicts (pure)
* ``documents``: a ``SinkRecord`` → one bulk action (pure)
* ``client``: the ``elasticsearch`` client, header style per server, index creation
* ``bulk``: batching by count and bytes, requests in flight, retries, per-item errors
* ``offsets``: which offsets are safe to commit (only records whose items completed)
* ``task`` and ``connector``: the Connect plugin
"""
