"""One filter that hides secrets in every log line: ``key=value`` and ``"key": "value"``
pairs whose key names a password, secret, token, ``sasl.jaas.config`` or
``basic.auth.user.info``, and the password of a ``user:password@`` URL. Installed on the
log handler, so it covers every logger, the exception text included."""

from __future__ import annotations

import logging
import re

__all__ = ["HIDDEN", "RedactionFilter", "redact"]

HIDDEN = "[hidden]"

_KEY = r"[\w.\-]*(?:password|passwd|secret|token|sasl\.jaas\.config|basic\.auth\.user\.info" \
       r"|api[._-]?key|credentials?)[\w.\-]*"
# key=value up to a separator; a JAAS config's value runs to its closing ';'.
_ASSIGNED = re.compile(rf"(?i)\b({_KEY})(\s*[=:]\s*)(?!\s*[\"'{{\[])([^\s,;&\"'}}\]]+;?)")
_QUOTED = re.compile(rf"(?i)([\"']{_KEY}[\"']\s*:\s*)([\"'])(.*?)(?<!\\)\2")
_JAAS = re.compile(r"(?i)(\bpassword\s*=\s*)([\"'])(.*?)\2")
_URL = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://[^\s:/@]+:)([^\s@/]+)(@)")


def redact(text: str) -> str:
    """``text`` with every secret value replaced by ``[hidden]``."""
    if not text:
        return text
    text = _QUOTED.sub(lambda m: f"{m.group(1)}{m.group(2)}{HIDDEN}{m.group(2)}", text)
    text = _JAAS.sub(lambda m: f"{m.group(1)}{m.group(2)}{HIDDEN}{m.group(2)}", text)
    text = _ASSIGNED.sub(lambda m: f"{m.group(1)}{m.group(2)}{HIDDEN}", text)
    return _URL.sub(lambda m: f"{m.group(1)}{HIDDEN}{m.group(3)}", text)


class RedactionFilter(logging.Filter):
    """Rewrites each record's message (arguments merged in) and exception text redacted."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True
