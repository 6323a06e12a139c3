"""Java ``SimpleDateFormat`` patterns, formatting and parsing in UTC.

``TimestampRouter.timestamp.format`` and ``TimestampConverter.format`` are Java patterns
in configs copied from Kafka, so Ferry reads them as Java does rather than as
``strftime``: letters are fields (``yyyy`` year, ``MM`` month, ``dd`` day, ``HH`` hour,
``mm`` minute, ``ss`` second, ``SSS`` millisecond, ...), text in single quotes is
literal, ``''`` is a quote, and any other ASCII letter is an error. Names are English
(Java's ``en_US``); weeks start on Sunday and week 1 holds January 1, as in ``en_US``.

Parsing is lenient like Java's default: out-of-range values roll over (day 32 of January
is February 1), spaces before a field are skipped, and text after the pattern is ignored.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

__all__ = ["SimpleDateFormat"]

_LETTERS = frozenset("GyYMLwWDdFEuaHkKhmsSzZX")
_NUMERIC = frozenset("yYwWDdFuHkKhmsS")
_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_DAY_MS = 86_400_000
# Fields finer than a day; the rest (dates, weeks, era, zone) change at most daily in UTC.
_RESOLUTION_MS = {
    "a": 3_600_000,
    "H": 3_600_000,
    "k": 3_600_000,
    "K": 3_600_000,
    "h": 3_600_000,
    "m": 60_000,
    "s": 1000,
    "S": 1,
}
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MS = dt.timedelta(milliseconds=1)


@dataclass(frozen=True, slots=True)
class _Field:
    letter: str
    count: int


_Token = _Field | str


class SimpleDateFormat:
    """A compiled pattern; immutable, so one instance may serve many threads."""

    __slots__ = ("_resolution_ms", "_tokens", "pattern")

    def __init__(self, pattern: str) -> None:
        """``ValueError`` with Java's message for an illegal pattern letter, an unterminated
        quote or an ISO zone (``X``) longer than three letters."""
        self.pattern = pattern
        self._tokens = _tokenize(pattern)
        self._resolution_ms = min(
            (_RESOLUTION_MS.get(t.letter, _DAY_MS) for t in self._tokens if isinstance(t, _Field)),
            default=_DAY_MS,
        )

    # -- formatting ---------------------------------------------------------------------

    def format(self, millis: int) -> str:
        """The UTC instant ``millis`` ms after the epoch, formatted; ``ValueError`` if it is
        outside the years 1-9999."""
        try:
            moment = _EPOCH + millis * _MS
        except OverflowError:
            raise ValueError(f"{millis} ms is outside the years 1-9999") from None
        return "".join(
            token if isinstance(token, str) else _format_field(token, moment)
            for token in self._tokens
        )

    @property
    def resolution_ms(self) -> int:
        """The span (in ms, aligned to the epoch in UTC) within which every instant
        formats the same: a day for ``yyyyMMdd``, a millisecond if ``S`` is used."""
        return self._resolution_ms

    # -- parsing ------------------------------------------------------------------------

    def parse(self, text: str) -> int:
        """Epoch milliseconds of ``text`` read with the pattern (UTC unless the text has
        a zone); ``ValueError`` if it does not match."""
        fields: dict[str, int] = {}
        position = 0
        tokens = self._tokens
        for index, token in enumerate(tokens):
            if isinstance(token, str):
                if not text.startswith(token, position):
                    raise ValueError(f"expected {token!r} at position {position}")
                position += len(token)
                continue
            while position < len(text) and text[position] in " \t":
                position += 1
            following = tokens[index + 1] if index + 1 < len(tokens) else None
            abutting = isinstance(following, _Field) and _is_numeric(following)
            position = _parse_field(token, text, position, abutting, fields)
        return _resolve(fields)

    def __repr__(self) -> str:
        return f"SimpleDateFormat({self.pattern!r})"


def _is_numeric(field: _Field) -> bool:
    return field.letter in _NUMERIC or (field.letter in "ML" and field.count <= 2)


def _tokenize(pattern: str) -> tuple[_Token, ...]:
    tokens: list[_Token] = []
    literal: list[str] = []
    i = 0
    end = len(pattern)
    while i < end:
        c = pattern[i]
        if c == "'":
            if pattern.startswith("''", i):
                literal.append("'")
                i += 2
                continue
            i += 1
            while True:
                if i >= end:
                    raise ValueError("Unterminated quote")
                if pattern[i] == "'":
                    if not pattern.startswith("''", i):
                        break
                    literal.append("'")
                    i += 2
                    continue
                literal.append(pattern[i])
                i += 1
            i += 1
            continue
        if not ("a" <= c <= "z" or "A" <= c <= "Z"):
            literal.append(c)
            i += 1
            continue
        if c not in _LETTERS:
            raise ValueError(f"Illegal pattern character '{c}'")
        start = i
        while i < end and pattern[i] == c:
            i += 1
        if c == "X" and i - start > 3:
            raise ValueError(f"invalid ISO 8601 format: length={i - start}")
        if literal:
            tokens.append("".join(literal))
            literal = []
        tokens.append(_Field(c, i - start))
    if literal:
        tokens.append("".join(literal))
    return tuple(tokens)


def _week_fields(day: dt.date) -> tuple[int, int]:
    """(week year, week of year) with Sunday-first weeks and week 1 holding January 1."""

    def first_sunday(year: int) -> dt.date:
        january_first = dt.date(year, 1, 1)
        return january_first - dt.timedelta(days=(january_first.weekday() + 1) % 7)

    if day.year < 9999 and day >= first_sunday(day.year + 1):
        return day.year + 1, 1
    return day.year, (day - first_sunday(day.year)).days // 7 + 1


def _format_field(field: _Field, moment: dt.datetime) -> str:
    letter, count = field.letter, field.count
    if letter in "yY":
        year = moment.year if letter == "y" else _week_fields(moment.date())[0]
        return f"{year % 100:02d}" if count == 2 else f"{year:0{count}d}"
    if letter in "ML":
        if count >= 4:
            return _MONTHS[moment.month - 1]
        if count == 3:
            return _MONTHS[moment.month - 1][:3]
        return f"{moment.month:0{count}d}"
    if letter == "E":
        name = _DAYS[moment.weekday()]
        return name if count >= 4 else name[:3]
    if letter == "a":
        return "AM" if moment.hour < 12 else "PM"
    if letter == "G":
        return "AD"
    if letter == "z":
        return "Coordinated Universal Time" if count >= 4 else "UTC"
    if letter == "Z":
        return "+0000"
    if letter == "X":
        return "Z"
    return f"{_number(letter, moment):0{count}d}"


def _number(letter: str, moment: dt.datetime) -> int:
    hour = moment.hour
    match letter:
        case "d":
            return moment.day
        case "H":
            return hour
        case "m":
            return moment.minute
        case "s":
            return moment.second
        case "S":
            return moment.microsecond // 1000
        case "D":
            return moment.timetuple().tm_yday
        case "k":
            return hour or 24
        case "K":
            return hour % 12
        case "h":
            return hour % 12 or 12
        case "u":
            return moment.isoweekday()
        case "F":
            return (moment.day - 1) // 7 + 1
        case "w":
            return _week_fields(moment.date())[1]
        case "W":
            first = moment.replace(day=1)
            return (moment.day + (first.weekday() + 1) % 7 - 1) // 7 + 1
    raise AssertionError(f"unhandled pattern letter {letter}")


def _parse_field(
    field: _Field, text: str, position: int, abutting: bool, fields: dict[str, int]
) -> int:
    letter, count = field.letter, field.count
    if (letter in "ML" and count >= 3) or letter in "EGa":
        names = {
            "M": _MONTHS,
            "L": _MONTHS,
            "E": _DAYS,
            "G": ("BC", "AD"),
            "a": ("AM", "PM"),
        }[letter]
        index, position = _match_name(names, text, position)
        if letter in "ML":
            fields["M"] = index + 1
        elif letter == "G":
            fields["G"] = index
        elif letter == "a":
            fields["a"] = index
        return position
    if letter in "zZX":
        return _parse_zone(text, position, fields)
    if letter in "ML" and not text[position : position + 1].isdigit():
        index, position = _match_name(_MONTHS, text, position)
        fields["M"] = index + 1
        return position
    start = position
    negative = letter == "y" and text.startswith("-", position)
    if negative:
        position += 1
    limit = position + count if abutting else len(text)
    digits_start = position
    while position < limit and position < len(text) and "0" <= text[position] <= "9":
        position += 1
    if position == digits_start:
        raise ValueError(f"expected a number at position {start}")
    value = int(text[digits_start:position])
    if letter == "y" and count <= 2 and position - digits_start == 2 and not negative:
        value = _two_digit_year(value)
    fields["M" if letter == "L" else letter] = -value if negative else value
    return position


def _match_name(names: tuple[str, ...], text: str, position: int) -> tuple[int, int]:
    """The index of the longest full or three-letter name at ``position`` (any case)."""
    best = (-1, position)
    folded = text[position:].casefold()
    for index, name in enumerate(names):
        for candidate in (name, name[:3]):
            if folded.startswith(candidate.casefold()) and position + len(candidate) > best[1]:
                best = (index, position + len(candidate))
    if best[0] < 0:
        raise ValueError(f"expected one of {', '.join(names)} at position {position}")
    return best


def _parse_zone(text: str, position: int, fields: dict[str, int]) -> int:
    rest = text[position:]
    for name in ("UTC", "GMT", "UT", "Z"):
        if rest.startswith(name):
            position += len(name)
            rest = text[position:]
            if name in ("UTC", "GMT") and rest[:1] in ("+", "-"):
                break
            fields["zone"] = 0
            return position
    if rest[:1] not in ("+", "-"):
        raise ValueError(f"expected a time zone at position {position}")
    sign = -1 if rest[0] == "-" else 1
    digits = rest[1:6].replace(":", "") if rest[3:4] == ":" else rest[1:5]
    hours_only = len(digits) < 4 or not digits.isdigit()
    if hours_only:
        digits = rest[1:3]
    if not (len(digits) in (2, 4) and digits.isascii() and digits.isdigit()):
        raise ValueError(f"expected a time zone offset at position {position}")
    minutes = int(digits[:2]) * 60 + (0 if hours_only else int(digits[2:]))
    fields["zone"] = sign * minutes
    consumed = 3 if hours_only else (6 if rest[3:4] == ":" else 5)
    return position + consumed


def _two_digit_year(value: int) -> int:
    # Java's default century: the 100 years starting 80 years before now.
    start = dt.datetime.now(dt.UTC).year - 80
    year = start // 100 * 100 + value
    return year + 100 if year < start else year


def _resolve(fields: dict[str, int]) -> int:
    year = fields.get("y", 1970)
    if fields.get("G") == 0:
        year = 1 - year
    hour = fields.get("H", 0)
    if "k" in fields:
        hour = fields["k"] % 24
    for letter in "hK":
        if letter in fields:
            hour = fields[letter] % 12 if letter == "h" else fields[letter]
            hour += 12 * fields.get("a", 0)
    if "d" not in fields and "M" not in fields and "D" in fields:
        month, day = 1, fields["D"]
    else:
        month, day = fields.get("M", 1), fields.get("d", 1)
    # Lenient like Java: each field may overflow into the next larger one.
    carry_years, month_index = divmod(month - 1, 12)
    try:
        moment = dt.datetime(year + carry_years, month_index + 1, 1, tzinfo=dt.UTC) + dt.timedelta(
            days=day - 1,
            hours=hour,
            minutes=fields.get("m", 0) - fields.get("zone", 0),
            seconds=fields.get("s", 0),
            milliseconds=fields.get("S", 0),
        )
    except (OverflowError, ValueError):
        raise ValueError("the date is outside the years 1-9999") from None
    return (moment - _EPOCH) // _MS
