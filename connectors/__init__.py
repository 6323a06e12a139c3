"""Source and sink connectors, written against ``connect.api`` only (later issues)."""
