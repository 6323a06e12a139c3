"""Joda-Time ``DateTimeFormat`` patterns, as Confluent's ``path.format`` uses them
(``'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH``): quoted literals (``''`` is a quote),
letters repeated for width. Supported letters: ``Y``/``y``/``x`` year (``YY`` two
digits), ``M`` month (``MMM``/``MMMM`` English names), ``d`` day of month, ``D`` day of
year, ``H`` hour 0-23, ``k`` 1-24, ``h`` 1-12, ``K`` 0-11, ``m`` minute, ``s`` second,
``S`` fraction, ``E`` day name, ``e`` day of week (1 = Monday), ``a`` AM/PM, ``w`` week of
the ISO week-year, ``Z`` offset. Other pattern letters are refused at config time.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from connect.api import ConfigError

__all__ = ["JodaFormat"]

_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def _num(get: Callable[[dt.datetime], int]) -> Callable[[dt.datetime, int], str]:
    return lambda d, width: str(get(d)).zfill(width)


def _year(d: dt.datetime, width: int) -> str:
    return f"{d.year % 100:02d}" if width == 2 else str(d.year).zfill(width)


def _month(d: dt.datetime, width: int) -> str:
    if width >= 4:
        return _MONTHS[d.month - 1]
    if width == 3:
        return _MONTHS[d.month - 1][:3]
    return str(d.month).zfill(width)


def _day_name(d: dt.datetime, width: int) -> str:
    name = _DAYS[d.weekday()]
    return name if width >= 4 else name[:3]


def _fraction(d: dt.datetime, width: int) -> str:
    return f"{d.microsecond:06d}"[:width].ljust(width, "0")


def _offset(d: dt.datetime, width: int) -> str:
    off = d.utcoffset() or dt.timedelta()
    minutes = int(off.total_seconds()) // 60
    sign = "-" if minutes < 0 else "+"
    h, m = divmod(abs(minutes), 60)
    return f"{sign}{h:02d}:{m:02d}" if width >= 2 else f"{sign}{h:02d}{m:02d}"


_FIELDS: dict[str, Callable[[dt.datetime, int], str]] = {
    "Y": _year, "y": _year, "x": lambda d, w: _year(dt.datetime(d.isocalendar().year, 1, 1), w),
    "M": _month,
    "d": _num(lambda d: d.day),
    "D": _num(lambda d: d.timetuple().tm_yday),
    "H": _num(lambda d: d.hour),
    "k": _num(lambda d: d.hour or 24),
    "h": _num(lambda d: (d.hour % 12) or 12),
    "K": _num(lambda d: d.hour % 12),
    "m": _num(lambda d: d.minute),
    "s": _num(lambda d: d.second),
    "S": _fraction,
    "E": _day_name,
    "e": _num(lambda d: d.isoweekday()),
    "a": lambda d, w: "AM" if d.hour < 12 else "PM",
    "w": _num(lambda d: d.isocalendar().week),
    "Z": _offset,
}


class JodaFormat:
    """A compiled pattern; ``format(datetime)`` renders it."""

    def __init__(self, pattern: str, *, key: str = "path.format") -> None:
        self.pattern = pattern
        self._parts: list[tuple[str, int] | str] = []
        i, n = 0, len(pattern)
        while i < n:
            c = pattern[i]
            if c == "'":
                j = i + 1
                text = []
                while True:
                    if j >= n:
                        raise ConfigError(key, f"unterminated quote in {pattern!r}")
                    if pattern[j] == "'":
                        if j + 1 < n and pattern[j + 1] == "'":
                            text.append("'")
                            j += 2
                            continue
                        break
                    text.append(pattern[j])
                    j += 1
                self._parts.append("'" if j == i + 1 else "".join(text))
                i = j + 1
            elif c.isascii() and c.isalpha():
                if c not in _FIELDS:
                    raise ConfigError(key, f"pattern letter {c!r} of {pattern!r} is not "
                                      f"supported (supported: {''.join(sorted(_FIELDS))})")
                j = i
                while j < n and pattern[j] == c:
                    j += 1
                self._parts.append((c, j - i))
                i = j
            else:
                self._parts.append(c)
                i += 1

    def format(self, when: dt.datetime) -> str:
        return "".join(p if isinstance(p, str) else _FIELDS[p[0]](when, p[1])
                       for p in self._parts)
