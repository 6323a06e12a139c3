"""ResponseCache in front of a small WSGI app that counts its calls (the middleware is
generic WSGI; the registry-level behaviour is covered by the REST integration tests)."""

from __future__ import annotations

import io
import json

from schema_registry.rest.response_cache import ResponseCache


class App:
    def __init__(self) -> None:
        self.calls = 0
        self.status = "200 OK"

    def __call__(self, environ, start_response):
        self.calls += 1
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        data = json.dumps({"n": self.calls, "body": body.decode()}).encode()
        start_response(self.status, [("Content-Type", "application/json"),
                                     ("Content-Length", str(len(data)))])
        return [data]


def call(cache, method="GET", uri="/schemas/ids/1", body=b"", accept=""):
    environ = {"REQUEST_METHOD": method, "REQUEST_URI": uri, "HTTP_ACCEPT": accept,
               "CONTENT_TYPE": "application/json", "CONTENT_LENGTH": str(len(body)),
               "wsgi.input": io.BytesIO(body)}
    seen = []
    data = b"".join(cache(environ, lambda status, headers: seen.append((status, headers))))
    return seen[0][0], json.loads(data)


def make(position=0, ready=True):
    app, state = App(), {"position": position, "ready": ready}
    return app, state, ResponseCache(app, lambda: state["position"], lambda: state["ready"])


def test_reads_are_replayed_until_the_position_moves():
    _, state, cache = make()
    assert call(cache) == call(cache) == ("200 OK", {"n": 1, "body": ""})
    assert call(cache, accept="application/json")[1]["n"] == 2  # Accept is in the key
    state["position"] = 5
    assert call(cache)[1]["n"] == 3


def test_lookups_are_cached_with_their_body_and_registrations_never():
    app, _, cache = make()
    lookup = b'{"schema":"\\"string\\""}'
    assert call(cache, "POST", "/subjects/s", lookup) == ("200 OK",
                                                          {"n": 1, "body": lookup.decode()})
    assert call(cache, "POST", "/subjects/s", lookup)[1]["n"] == 1
    assert call(cache, "POST", "/subjects/s", b'{"schema":"1"}')[1]["n"] == 2
    call(cache, "POST", "/subjects/s/versions", lookup)
    call(cache, "POST", "/subjects/s/versions", lookup)
    call(cache, "DELETE", "/subjects/s")
    assert app.calls == 5


def test_errors_and_answers_while_not_ready_are_not_kept():
    app, state, cache = make()
    app.status = "404 Not Found"
    call(cache)
    call(cache)
    assert app.calls == 2
    app.status, state["ready"] = "200 OK", False
    call(cache)
    call(cache)
    assert app.calls == 4
