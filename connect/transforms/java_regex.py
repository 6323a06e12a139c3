"""Java regular expressions and ``Matcher`` replacement strings, in Python.

Configs copied from Kafka hold Java patterns (``RegexRouter.regex``,
``TopicNameMatches.pattern``) and Java replacements (``$1``, ``${name}``). Most Java
syntax means the same in Python's ``re``; this module rewrites the constructs that are
spelled differently (named groups, ``\\k<name>``, ``\\Q...\\E``, ``\\z``/``\\Z``, the
POSIX ``\\p{...}`` classes) and rejects the few that ``re`` cannot express (class
intersections ``&&``), so a pattern either means what it meant on a Java worker or fails
at configure time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["JavaReplacement", "compile_java_regex"]

# Java's POSIX classes (US-ASCII, as Java matches them without UNICODE_CHARACTER_CLASS).
_POSIX = {
    "Lower": "a-z",
    "Upper": "A-Z",
    "ASCII": "\\x00-\\x7f",
    "Alpha": "a-zA-Z",
    "Digit": "0-9",
    "Alnum": "a-zA-Z0-9",
    "Punct": "!-/:-@\\[-`{-~",
    "Graph": "!-~",
    "Print": " -~",
    "Blank": " \\t",
    "Cntrl": "\\x00-\\x1f\\x7f",
    "XDigit": "0-9a-fA-F",
    "Space": " \\t\\n\\x0b\\f\\r",
}
_NAMED_GROUP = re.compile(r"\(\?<([A-Za-z][A-Za-z0-9]*)>")


def _is_digit(c: str) -> bool:
    return "0" <= c <= "9"


def compile_java_regex(pattern: str) -> re.Pattern[str]:
    """Compile a Java regular expression; ``ValueError`` says why it is not valid."""
    try:
        return re.compile(_translate(pattern))
    except re.error as exc:
        raise ValueError(f"{exc} in {pattern!r}") from None


def _translate(pattern: str) -> str:
    out: list[str] = []
    i = 0
    end = len(pattern)
    in_class = 0
    while i < end:
        c = pattern[i]
        if c == "\\" and i + 1 < end:
            escape = pattern[i + 1]
            if escape == "Q":
                close = pattern.find("\\E", i + 2)
                literal = pattern[i + 2 :] if close < 0 else pattern[i + 2 : close]
                out.append(re.escape(literal))
                i = end if close < 0 else close + 2
                continue
            if escape in "pP" and i + 2 < end and pattern[i + 2] == "{":
                close = pattern.find("}", i + 3)
                name = pattern[i + 3 : close] if close > 0 else ""
                ranges = _POSIX.get(name.removeprefix("Is"))
                if ranges is None:
                    raise ValueError(f"unsupported character class \\{escape}{{{name}}}")
                negate = "^" if escape == "P" else ""
                out.append(f"[{negate}{ranges}]" if not in_class else ranges)
                i = close + 1
                continue
            if escape == "k" and i + 2 < end and pattern[i + 2] == "<":
                close = pattern.find(">", i + 3)
                if close < 0:
                    raise ValueError("named back reference is missing its closing '>'")
                out.append(f"(?P={pattern[i + 3 : close]})")
                i = close + 1
                continue
            if escape == "z" and not in_class:
                out.append("\\Z")
            elif escape == "Z" and not in_class:
                out.append("(?=\\n?\\Z)")
            else:
                out.append(pattern[i : i + 2])
            i += 2
            continue
        if c == "[":
            in_class += 1
        elif c == "]" and in_class:
            in_class -= 1
        elif c == "&" and in_class and pattern.startswith("&&", i):
            raise ValueError("character class intersection (&&) is not supported")
        elif c == "(" and not in_class:
            named = _NAMED_GROUP.match(pattern, i)
            if named is not None:
                out.append(f"(?P<{named.group(1)}>")
                i = named.end()
                continue
        out.append(c)
        i += 1
    return "".join(out)


@dataclass(frozen=True, slots=True)
class JavaReplacement:
    """A ``Matcher.replaceFirst`` replacement string, checked against its pattern.

    ``$n`` is group n: the first digit always belongs to the reference, later digits
    only while the number stays a valid group, as in Java. ``${name}`` is a named group;
    a backslash makes the next character literal. Groups that did not take part in the
    match insert nothing.
    """

    parts: tuple[str | int, ...]

    @staticmethod
    def parse(replacement: str, pattern: re.Pattern[str]) -> JavaReplacement:
        """Raises ``ValueError`` with Java's wording for a malformed replacement."""
        parts: list[str | int] = []
        literal: list[str] = []
        i = 0
        end = len(replacement)
        while i < end:
            c = replacement[i]
            if c == "\\":
                if i + 1 >= end:
                    raise ValueError("character to be escaped is missing")
                literal.append(replacement[i + 1])
                i += 2
                continue
            if c != "$":
                literal.append(c)
                i += 1
                continue
            i += 1
            if i >= end:
                raise ValueError("Illegal group reference: group index is missing")
            if literal:
                parts.append("".join(literal))
                literal = []
            if replacement[i] == "{":
                close = replacement.find("}", i + 1)
                if close < 0:
                    raise ValueError("named capturing group is missing trailing '}'")
                name = replacement[i + 1 : close]
                if not name:
                    raise ValueError("named capturing group has 0 length name")
                if name not in pattern.groupindex:
                    raise ValueError(f"No group with name {{{name}}}")
                parts.append(pattern.groupindex[name])
                i = close + 1
                continue
            if not _is_digit(replacement[i]):
                raise ValueError("Illegal group reference")
            group = int(replacement[i])
            if group > pattern.groups:
                raise ValueError(f"No group {group}")
            i += 1
            while i < end and _is_digit(replacement[i]):
                longer = group * 10 + int(replacement[i])
                if longer > pattern.groups:
                    break
                group = longer
                i += 1
            parts.append(group)
        if literal:
            parts.append("".join(literal))
        return JavaReplacement(tuple(parts))

    def expand(self, match: re.Match[str]) -> str:
        """The replacement text for one match."""
        return "".join(
            part if isinstance(part, str) else (match.group(part) or "") for part in self.parts
        )
