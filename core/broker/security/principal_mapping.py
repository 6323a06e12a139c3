"""``ssl.principal.mapping.rules``: from a client certificate's subject to a principal name.

Kafka's syntax (``SslPrincipalMapper``): a comma-separated list of ``RULE:pattern/
replacement/`` entries, optionally followed by ``L`` or ``U`` (lower- or upper-case the
result), and ``DEFAULT`` (the whole distinguished name). The first rule whose pattern
matches the whole RFC 2253 name wins; ``$1`` in a replacement is the pattern's first group.
When no rule matches, the connection cannot be given a principal and is refused.

Example: ``RULE:^CN=(.*?),OU=(.*?),.*$/$1@$2/L,DEFAULT``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["NoMatchingRule", "PrincipalMapper"]

_RULE = re.compile(
    r"\s*(?:(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?))\s*(?:,|$)")


class NoMatchingRule(ValueError):
    """No rule of ssl.principal.mapping.rules matched the certificate's subject."""


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: str = ""
    case: str = ""

    def apply(self, name: str) -> str | None:
        if self.pattern is None:
            return name
        match = self.pattern.fullmatch(name)
        if match is None:
            return None
        result = match.expand(self.replacement)
        return result.lower() if self.case == "L" else result.upper() if self.case == "U" \
            else result


class PrincipalMapper:
    """Compiled rules; ``PrincipalMapper.parse("DEFAULT")`` keeps the name as it is."""

    def __init__(self, rules: list[_Rule]) -> None:
        self._rules = rules

    @classmethod
    def parse(cls, text: str) -> PrincipalMapper:
        """Raises ValueError with the offending part when ``text`` is not a rule list."""
        text = text.strip() or "DEFAULT"
        rules: list[_Rule] = []
        pos = 0
        while pos < len(text):
            match = _RULE.match(text, pos)
            if match is None or match.end() == pos:
                raise ValueError(f"invalid rule at {text[pos:pos + 40]!r}: expected "
                                 "RULE:pattern/replacement/[LU] or DEFAULT")
            pos = match.end()
            if match.group(1):
                rules.append(_Rule(None))
                continue
            try:
                pattern = re.compile(match.group(2).replace("\\/", "/"))
            except re.error as exc:
                raise ValueError(f"invalid pattern {match.group(2)!r}: {exc}") from None
            # Java's $1 and \/ become Python's \g<1> and /
            raw = match.group(3).replace("\\/", "/")
            wanted = [int(n) for n in re.findall(r"\$(\d+)", raw)]
            if any(n > pattern.groups for n in wanted):
                raise ValueError(f"replacement {raw!r} names a group that {pattern.pattern!r}"
                                 " does not have")
            # Java's $1 becomes Python's \g<1>; other backslashes are literal
            replacement = re.sub(r"\$(\d+)", r"\\g<\1>", raw.replace("\\", "\\\\"))
            rules.append(_Rule(pattern, replacement, match.group(4)))
        return cls(rules)

    def map(self, distinguished_name: str) -> str:
        for rule in self._rules:
            result = rule.apply(distinguished_name)
            if result is not None:
                return result
        raise NoMatchingRule(f"no rule of ssl.principal.mapping.rules matches "
                             f"{distinguished_name!r}")
