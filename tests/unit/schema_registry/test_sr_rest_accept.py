"""``Accept`` parsing and negotiation (``schema_registry.rest.accept``), Jersey-lenient."""

from __future__ import annotations

import pytest

from schema_registry.rest.accept import MediaRange, negotiate, parse_accept

V1 = "application/vnd.schemaregistry.v1+json"
VND = "application/vnd.schemaregistry+json"
JSON = "application/json"
OFFERS = ((V1, 1.0), (VND, 0.9), (JSON, 0.5))
JDK_DEFAULT = "text/html, image/gif, image/jpeg, *; q=.2, */*; q=.2"


def test_the_jdk_default_header_parses_every_entry():
    assert parse_accept(JDK_DEFAULT) == [
        MediaRange("text", "html", 1.0), MediaRange("image", "gif", 1.0),
        MediaRange("image", "jpeg", 1.0), MediaRange("*", "*", 0.2),
        MediaRange("*", "*", 0.2)]


@pytest.mark.parametrize(("header", "expected"), [
    (JDK_DEFAULT, V1),
    ("*/*", V1),
    (JSON, JSON),
    (f"{JSON}, {VND};q=0.9", JSON),         # the client's q decides first
    (f"{JSON};q=.8, {VND};q=.8", VND),      # then the server's quality
    ("application/*;q=.5", V1),
    (f"{V1};q=0, {JSON}", JSON),            # q=0 excludes
    (f"{VND}; q=1.", VND),
    ("text/html", None),
    ("image/*, text/plain;q=0.3", None),
    (f"{JSON};q=abc", None),                # an unreadable q drops that entry only
    (f"{JSON};q=abc, */*;q=.1", V1),
    (f"{JSON};q=2", None),
    ("*/json, ,;", None),
])
def test_negotiation(header, expected):
    assert negotiate(header, OFFERS) == expected
