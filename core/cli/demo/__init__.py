"""``ferry demo``: the whole platform on one machine, no Docker: brokers, Connect workers,
the Schema Registry, PostgreSQL with a shop schema and a load generator, an S3 API
(``moto_server``), an OpenSearch-compatible server (``osmem-server``) and the Spark CDC
pipeline, wired by the connector files of ``docker/connectors/`` (the compose stack's).

``demo.processes`` is also the home of the throwaway servers the test suite starts.
"""
