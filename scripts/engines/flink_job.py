"""Flink SQL (PyFlink, mini-cluster, parallelism 1): per stream, per 60 s event-time window, the
tuple count and the exact COUNT(DISTINCT price) — Flink SQL has no sketch aggregate, so its
distinct count is exact (its cost is a set of distinct prices per window).

    python flink_job.py INPUT.jsonl OUTPUT.csv tumbling|landmark

`tumbling` is `TUMBLE(60 s)`; `landmark` is `CUMULATE(step 60 s, size 1 day)`, the Flink window
whose answers equal a synopsis that accumulates from its construction on (saams' landmark windows).
The output is CSV rows `streamID,window_start_ms,window_end_ms,tuples,distinct`.
"""

import calendar
import csv
import sys

from pyflink.table import EnvironmentSettings, TableEnvironment


def main(path: str, out: str, window: str) -> None:
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    config = env.get_config()
    config.set("parallelism.default", "1")
    config.set("table.local-time-zone", "UTC")
    env.execute_sql(
        f"""
        CREATE TABLE ticks (
          streamID STRING, objectID STRING, dataSetKey STRING, `date` STRING, `time` STRING,
          price DOUBLE, volume BIGINT,
          ts AS TO_TIMESTAMP(
            CONCAT(`date`, ' ', `time`, CASE WHEN POSITION('.' IN `time`) = 0 THEN '.000' ELSE '' END),
            'MM/dd/yyyy HH:mm:ss.SSS'),
          WATERMARK FOR ts AS ts
        ) WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'json')
        """
    )
    if window == "tumbling":
        tvf = "TUMBLE(TABLE ticks, DESCRIPTOR(ts), INTERVAL '60' SECONDS)"
    elif window == "landmark":
        tvf = "CUMULATE(TABLE ticks, DESCRIPTOR(ts), INTERVAL '60' SECONDS, INTERVAL '1' DAY)"
    else:
        raise SystemExit(f"unknown window type {window!r}: tumbling or landmark")
    result = env.execute_sql(
        f"""
        SELECT streamID, window_start, window_end, COUNT(*) AS tuples,
               COUNT(DISTINCT price) AS distinct_prices
        FROM TABLE({tvf})
        GROUP BY streamID, window_start, window_end
        """
    )
    with open(out, "w", newline="") as f:
        writer = csv.writer(f)
        with result.collect() as rows:
            for row in rows:
                writer.writerow([row[0], to_ms(row[1]), to_ms(row[2]), row[3], row[4]])


def to_ms(value) -> int:
    """A window bound, a naive datetime in UTC, as epoch milliseconds."""
    return calendar.timegm(value.timetuple()) * 1000 + value.microsecond // 1000


if __name__ == "__main__":
    main(*sys.argv[1:4])
