"""A real PostgreSQL server from ``initdb`` in a temporary directory, for connector tests.

Shared by every suite that needs PostgreSQL (the CDC source, the JDBC source and sink).
The server itself lives in ``demo.processes`` (``ferry demo`` runs the same one); see there
for how it runs as root.
"""

from __future__ import annotations

from core.cli.demo.processes import PASSWORD, PostgresServer, PostgresUnavailable, server_bindir

__all__ = ["PASSWORD", "PostgresProcess", "PostgresUnavailable", "server_bindir"]

#: The tests' name for it.
PostgresProcess = PostgresServer
