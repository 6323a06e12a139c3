"""One HTTP layer for every Ferry service: hosting a WSGI app (waitress on a thread) and the
observability endpoints every service mounts (``/metrics``, ``/health``)."""
