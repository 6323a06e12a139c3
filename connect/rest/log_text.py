"""``printable(text)``: request-derived text made safe for one log line.

A path, a logger name or a query parameter comes from the client. Logged raw, a line
break in it (``PUT /admin/loggers/a%0AFORGED...``) would start a forged log line, and
an escape sequence could repaint a terminal. Every log call in this package that formats
request text passes it through ``printable``, which escapes control, line and paragraph
separator and format characters the way Python string literals spell them (``\\n``,
``\\x1b``, ``\\u2028``) and bounds the length.
"""

from __future__ import annotations

import unicodedata

__all__ = ["printable"]

#: Control, format, line and paragraph separators: what can break or disguise a line.
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})
MAX_CHARS = 512


def printable(text: object, limit: int = MAX_CHARS) -> str:
    """``text`` with unsafe characters escaped, cut to ``limit`` characters (marked)."""
    raw = str(text)
    cut = len(raw) > limit
    out = [_escape(c) if unicodedata.category(c) in _UNSAFE_CATEGORIES or c == "\\"
           else c for c in raw[:limit]]
    return "".join(out) + ("...[truncated]" if cut else "")


def _escape(char: str) -> str:
    if char == "\\":
        return "\\\\"
    return char.encode("unicode_escape").decode("ascii")
