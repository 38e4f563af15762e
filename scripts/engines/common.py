"""Shared by the engine jobs of scripts/compare-engines.sh: the event time of a reference tuple.

A tuple's event time is its `date` (MM/DD/YYYY) and `time` (HH:MM:SS.fff) read as UTC, the way
saams reads them (docs/api.md, "Tuples"); windows are aligned to the epoch, as in saams and in
Flink's and Pathway's tumbling windows.
"""

import calendar


def event_ms(date: str, time: str) -> int:
    """Milliseconds since the epoch of a tuple's `date` and `time` (UTC)."""
    month, day, year = (int(p) for p in date.split("/"))
    hms, _, frac = time.partition(".")
    hours, minutes, seconds = (int(p) for p in hms.split(":"))
    millis = int((frac + "000")[:3]) if frac else 0
    days = calendar.timegm((year, month, day, 0, 0, 0)) // 86400
    return ((days * 24 + hours) * 60 + minutes) * 60_000 + seconds * 1000 + millis
