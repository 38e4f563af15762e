"""Pathway (differential dataflow underneath), one worker: per stream, per 60 s event-time
tumbling window, the tuple count and the distinct prices (`pw.reducers.count_distinct_approximate`,
Pathway's HyperLogLog, where this Pathway has it; otherwise the exact `count_distinct`).

    PATHWAY_THREADS=1 python pathway_job.py INPUT.jsonl OUTPUT.csv

The output is CSV rows `streamID,window_start_ms,window_end_ms,tuples,distinct`.
"""

import csv
import sys

import pathway as pw

from common import event_ms


class Tick(pw.Schema):
    streamID: str
    dataSetKey: str
    date: str
    time: str
    price: float
    volume: int


def distinct_reducer(column):
    approximate = getattr(pw.reducers, "count_distinct_approximate", None)
    return approximate(column) if approximate else pw.reducers.count_distinct(column)


def main(path, out):
    ticks = pw.io.jsonlines.read(path, schema=Tick, mode="static")
    timed = ticks.select(
        pw.this.streamID, pw.this.price, ts=pw.apply_with_type(event_ms, int, pw.this.date, pw.this.time)
    )
    windows = timed.windowby(
        pw.this.ts, window=pw.temporal.tumbling(duration=60_000), instance=pw.this.streamID
    ).reduce(
        stream=pw.this._pw_instance,
        start=pw.this._pw_window_start,
        tuples=pw.reducers.count(),
        distinct=distinct_reducer(pw.this.price),
    )
    rows = {}

    def on_change(key, row, time, is_addition):
        # A window's row may be updated (retracted, then added anew); keep the latest.
        if is_addition:
            rows[key] = row
        elif rows.get(key) == row:
            del rows[key]

    pw.io.subscribe(windows, on_change=on_change)
    pw.run(monitoring_level=pw.MonitoringLevel.NONE)
    with open(out, "w", newline="") as f:
        writer = csv.writer(f)
        for row in rows.values():
            writer.writerow([row["stream"], row["start"], row["start"] + 60_000, row["tuples"], row["distinct"]])


if __name__ == "__main__":
    main(*sys.argv[1:3])
