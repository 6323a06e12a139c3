"""``Accept`` negotiation as lenient as Jersey's, which Confluent's registry runs on.

Clients send headers that strict parsers drop: the JDK's ``HttpURLConnection`` default is
``text/html, image/gif, image/jpeg, *; q=.2, */*; q=.2`` (a bare ``*`` and q-values without
a leading digit). Jersey reads ``*`` as ``*/*`` and such q-values as numbers, so those
clients get JSON from Confluent; here they must too, not 406.

Each offered type has a server quality (Confluent's ``@Produces``: the v1 type 1.0, the
vendor type 0.9, ``application/json`` 0.5). As in Jersey's ``CombinedMediaType``
ordering, the client's q decides first (the highest q of any range matching the type),
the server quality breaks ties; q=0 excludes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["MediaRange", "negotiate", "parse_accept"]


@dataclass(frozen=True, slots=True)
class MediaRange:
    """One entry of an ``Accept`` header: ``type/subtype`` (either may be ``*``) and q."""

    type: str
    subtype: str
    q: float

    def matches(self, offered: str) -> bool:
        kind, _, sub = offered.partition("/")
        return self.type == "*" or (self.type == kind and self.subtype in ("*", sub))


def _quality(text: str) -> float | None:
    """A q-value: ``1``, ``0.5``, ``.2``, ``1.`` are all read; out of [0, 1] or not a
    number is None (the entry is then ignored)."""
    try:
        value = float(text.strip().strip('"'))
    except ValueError:
        return None
    return value if 0.0 <= value <= 1.0 else None


def parse_accept(header: str) -> list[MediaRange]:
    """The media ranges of an ``Accept`` header; malformed entries are left out."""
    ranges = []
    for entry in header.split(","):
        media, *params = (part.strip() for part in entry.split(";"))
        if not media:
            continue
        kind, slash, sub = media.lower().partition("/")
        if not slash:
            if kind != "*":
                continue
            sub = "*"  # the JDK's bare "*", read as "*/*" as Jersey does
        if not kind or not sub or (kind == "*" and sub != "*"):
            continue
        q: float | None = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                q = _quality(value)
        if q is not None:
            ranges.append(MediaRange(kind, sub, q))
    return ranges


def negotiate(header: str, offers: Sequence[tuple[str, float]]) -> str | None:
    """The offered type to answer with, or None when the header accepts none of them.
    ``offers`` are ``(content type, server quality)`` in order of preference."""
    ranges = parse_accept(header)
    best: tuple[float, float] | None = None
    chosen = None
    for offered, server_q in offers:
        client_q = max((r.q for r in ranges if r.matches(offered)), default=0.0)
        if client_q > 0 and (best is None or (client_q, server_q) > best):
            best, chosen = (client_q, server_q), offered
    return chosen
