"""SimpleDateFormat patterns: formatting and lenient parsing as Java does, in UTC."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from connect.transforms.java_date_format import SimpleDateFormat

# 2017-01-03T06:30:01.864Z, a Tuesday; and 2024-01-01T00:00:00Z, a Monday.
INSTANT = 1_483_425_001_864
NEW_YEAR = 1_704_067_200_000


def millis(*args: int) -> int:
    return int(dt.datetime(*args, tzinfo=dt.UTC).timestamp() * 1000)


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        ("yyyyMMdd", "20170103"),
        ("yyyy-MM-dd HH:mm:ss.SSS", "2017-01-03 06:30:01.864"),
        ("yy/M/d H:m:s.S", "17/1/3 6:30:1.864"),
        ("yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "2017-01-03T06:30:01.864Z"),
        ("EEE, d MMM yyyy hh:mm a Z", "Tue, 3 Jan 2017 06:30 AM +0000"),
        ("EEEE MMMM", "Tuesday January"),
        ("D w W F u k K h", "3 1 1 1 2 6 6 6"),
        ("'week' ww 'of' YYYY, '''quoted'''", "week 01 of 2017, 'quoted'"),
        ("yyyy MM dd HH mm ss SSS z", "2017 01 03 06 30 01 864 UTC"),
        ("G yyyyyy zzzz", "AD 002017 Coordinated Universal Time"),
    ],
)
def test_format(pattern, text):
    assert SimpleDateFormat(pattern).format(INSTANT) == text


def test_week_fields_at_the_year_boundary():
    # Sunday 2017-12-31 starts the week holding 2018-01-01: week 1 of week-year 2018.
    assert SimpleDateFormat("YYYY-ww yyyy").format(millis(2017, 12, 31)) == "2018-01 2017"
    assert SimpleDateFormat("YYYY-ww").format(millis(2017, 12, 30)) == "2017-52"
    # 2016 began on a Friday, so its week 1 started in 2015 and it has 53 weeks.
    assert SimpleDateFormat("YYYY-ww").format(millis(2016, 12, 31)) == "2016-53"
    assert SimpleDateFormat("k h a").format(NEW_YEAR) == "24 12 AM"


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        ("yyyyMMdd", "20170103", millis(2017, 1, 3)),
        ("yyyyMMddHHmmssSSS", "20170103063001864", INSTANT),
        ("yyyy-MM-dd HH:mm:ss.SSS", "2017-01-03 06:30:01.864", INSTANT),
        ("yyyy-MM-dd", "2017-01-03T06:30:01 is ignored", millis(2017, 1, 3)),
        ("yyyy-MM-dd", "2017-02-30", millis(2017, 3, 2)),
        ("yyyy-MM-dd HH:mm", "2017-01-03 24:30", millis(2017, 1, 4, 0, 30)),
        ("dd MMM yyyy", "03 jan 2017", millis(2017, 1, 3)),
        ("dd MMMM yyyy", "03 January 2017", millis(2017, 1, 3)),
        ("EEE, d MMM yyyy hh:mm a", "Tue, 3 Jan 2017 06:30 PM", millis(2017, 1, 3, 18, 30)),
        ("yyyy-MM-dd'T'HH:mmXXX", "2017-01-03T06:30+01:00", millis(2017, 1, 3, 5, 30)),
        ("yyyy-MM-dd'T'HH:mmZ", "2017-01-03T06:30-0800", millis(2017, 1, 3, 14, 30)),
        ("yyyy-MM-dd HH:mm z", "2017-01-03 06:30 GMT+02:00", millis(2017, 1, 3, 4, 30)),
        ("yyyy-MM-dd HH:mm z", "2017-01-03 06:30 UTC", millis(2017, 1, 3, 6, 30)),
        ("yyyy D", "2017 34", millis(2017, 2, 3)),
        ("yyyy-M-d", "2017- 1- 3", millis(2017, 1, 3)),
        ("HH:mm", "06:30", millis(1970, 1, 1, 6, 30)),
    ],
)
def test_parse(pattern, text, expected):
    assert SimpleDateFormat(pattern).parse(text) == expected


def test_two_digit_years_use_javas_sliding_century():
    this_year = dt.datetime.now(dt.UTC).year
    parsed = SimpleDateFormat("yy").parse(f"{(this_year + 1) % 100:02d}")
    assert dt.datetime.fromtimestamp(parsed / 1000, dt.UTC).year == this_year + 1
    parsed = SimpleDateFormat("yy").parse(f"{(this_year - 30) % 100:02d}")
    assert dt.datetime.fromtimestamp(parsed / 1000, dt.UTC).year == this_year - 30


@pytest.mark.parametrize(
    ("pattern", "text"),
    [("yyyy-MM-dd", "2017/01/03"), ("yyyy", "abcd"), ("MMM", "Foo"), ("HH:mm Z", "06:30 +1")],
)
def test_parse_failures(pattern, text):
    with pytest.raises(ValueError):
        SimpleDateFormat(pattern).parse(text)


@pytest.mark.parametrize(
    ("pattern", "resolution"),
    [
        ("yyyyMMdd", 86_400_000),
        ("'static'", 86_400_000),
        ("yyyy-MM-dd HH", 3_600_000),
        ("h a", 3_600_000),
        ("mm", 60_000),
        ("ss.SSS", 1),
    ],
)
def test_resolution(pattern, resolution):
    assert SimpleDateFormat(pattern).resolution_ms == resolution


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("yyyy-qq", "Illegal pattern character 'q'"),
        ("'open", "Unterminated quote"),
        ("XXXX", "length=4"),
    ],
)
def test_invalid_patterns(pattern, message):
    with pytest.raises(ValueError, match=message):
        SimpleDateFormat(pattern)


@given(st.integers(min_value=millis(1000, 1, 1), max_value=millis(9999, 12, 31)))
def test_round_trip(instant):
    pattern = SimpleDateFormat("yyyy-MM-dd'T'HH:mm:ss.SSSZ")
    assert pattern.parse(pattern.format(instant)) == instant
