#!/usr/bin/env python3
"""DuckDB's side of the hotspots peer: top-100 slices by self time from a Chrome JSON trace.

Runs inside the venv that has `duckdb` (duckdb_peer.py starts it under
/usr/bin/time). It loads the trace's `traceEvents` into a table of complete
(`ph = "X"`) slices, then answers the same question as `flameox analyze
hotspots RUN --limit 100`: per (name, category), the sum of self time, where
a slice's self time is its duration minus the part of its direct children's
durations that lies inside it, children found by containment per (pid, tid).
The SQL and why it matches flameox's nesting are in docs/performance.md.

usage: duckdb_hotspots.py TRACE REPEATS   (prints one JSON document)
"""

import json
import os
import resource
import sys
import time

import duckdb

# µs text → integer ns: exact for up to three decimals (as flameox parses
# them), doubles only for exponent notation.
NS = "COALESCE(CAST(TRY_CAST({0} AS DECIMAL(38,3)) * 1000 AS BIGINT), CAST(round(CAST({0} AS DOUBLE) * 1000) AS BIGINT))"

LOAD_SQL = f"""
CREATE TABLE slices AS
WITH ev AS (
  SELECT unnest(traceEvents) AS e, unnest(range(len(traceEvents))) AS event_id
  FROM read_json(?, columns = {{traceEvents: 'STRUCT(ph VARCHAR, name VARCHAR, cat VARCHAR,
                   pid VARCHAR, tid VARCHAR, ts VARCHAR, dur VARCHAR)[]'}},
                 maximum_object_size = {{max_object}})
)
SELECT event_id, e.name AS name, e.cat AS cat, e.pid AS pid, e.tid AS tid,
       {NS.format("e.ts")} AS ts_ns,
       GREATEST(COALESCE({NS.format("e.dur")}, 0), 0) AS dur_ns
FROM ev
WHERE e.ph = 'X' AND e.ts IS NOT NULL
"""

# Nesting as flameox's stack walk does it, in set form:
# - pos: order on the track by (ts, dur desc, event_id);
# - depth: slices opened earlier on the track and not yet ended at this
#   slice's start (end <= start closes; zero-length slices never hold children);
# - parent: the latest earlier slice one level up (ASOF join on pos);
# - self: dur − Σ children's time clipped to the parent's end, ≥ 0.
# On properly nested tracks this is flameox's result exactly; where flameox
# reports `improper_nesting` its stack keeps ended slices under an open one
# and the two can differ (docs/performance.md).
HOTSPOTS_SQL = """
WITH s AS (
  SELECT name, cat, pid, tid, ts_ns, dur_ns, ts_ns + dur_ns AS end_ns,
         row_number() OVER (PARTITION BY pid, tid ORDER BY ts_ns, dur_ns DESC, event_id) AS pos
  FROM slices
), edges AS (
  SELECT pid, tid, ts_ns AS t, 1 AS kind, pos, CASE WHEN dur_ns > 0 THEN 1 ELSE 0 END AS delta FROM s
  UNION ALL
  SELECT pid, tid, end_ns, 0, 0, -1 FROM s WHERE dur_ns > 0
), opened AS (
  SELECT pid, tid, pos, kind,
         sum(delta) OVER (PARTITION BY pid, tid ORDER BY t, kind, pos ROWS UNBOUNDED PRECEDING) - delta AS depth
  FROM edges
), nested AS (
  SELECT s.*, o.depth FROM s JOIN opened o ON o.kind = 1 AND o.pid = s.pid AND o.tid = s.tid AND o.pos = s.pos
), holders AS (
  SELECT pid, tid, pos, depth + 1 AS child_depth, end_ns FROM nested WHERE dur_ns > 0
), covered AS (
  SELECT p.pid, p.tid, p.pos, sum(GREATEST(LEAST(c.end_ns, p.end_ns) - c.ts_ns, 0)) AS child_ns
  FROM nested c ASOF JOIN holders p
    ON c.pid = p.pid AND c.tid = p.tid AND c.depth = p.child_depth AND c.pos > p.pos
  GROUP BY ALL
)
SELECT n.name, n.cat, sum(GREATEST(n.dur_ns - COALESCE(v.child_ns, 0), 0)) AS self_ns, count(*) AS slices
FROM nested n LEFT JOIN covered v ON v.pid = n.pid AND v.tid = n.tid AND v.pos = n.pos
GROUP BY n.name, n.cat
ORDER BY self_ns DESC, n.name
LIMIT 100
"""


def uncompressed_size(path):
    """Bytes of JSON DuckDB will parse as one object (gzip's ISIZE trailer, mod 4 GiB)."""
    if path.endswith(".gz"):
        with open(path, "rb") as f:
            f.seek(-4, os.SEEK_END)
            return int.from_bytes(f.read(4), "little")
    return os.path.getsize(path)


def peak_rss_kib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    trace, repeats = sys.argv[1], int(sys.argv[2])
    # The whole document is one JSON object to DuckDB: the limit must hold it.
    max_object = uncompressed_size(trace) + (1 << 20)
    con = duckdb.connect()
    start = time.perf_counter()
    con.execute(LOAD_SQL.replace("{max_object}", str(max_object)), [trace])
    load_s = time.perf_counter() - start
    rss_after_load = peak_rss_kib()
    start = time.perf_counter()
    rows = con.execute(HOTSPOTS_SQL).fetchall()
    first_s = time.perf_counter() - start
    repeat_s = []
    for _ in range(repeats):
        start = time.perf_counter()
        con.execute(HOTSPOTS_SQL).fetchall()
        repeat_s.append(time.perf_counter() - start)
    json.dump(
        {
            "duckdb": duckdb.__version__,
            "slices": con.execute("SELECT count(*) FROM slices").fetchall()[0][0],
            "load_s": load_s,
            "first_query_s": first_s,
            "repeat_s": repeat_s,
            "peak_rss_after_load_kib": rss_after_load,
            "rows": [list(r) for r in rows],
        },
        sys.stdout,
    )


if __name__ == "__main__":
    main()
