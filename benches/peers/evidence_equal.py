#!/usr/bin/env python3
"""Whether two workspaces hold the same evidence, table by table.

Used to check that an optimization changed no row: import one trace with
two builds into two fresh workspaces, then

    python3 benches/peers/evidence_equal.py WS_A WS_B

For every evidence table it compares each column's md5 over the rows in
file order (DuckDB: `md5(string_agg(value order by file, row))`),
skipping `run_id` and `generation`, which differ by construction. Prints
one line per table and `ALL EQUAL` or `DIFFERENT`; exits 1 on a
difference. Needs `pip install duckdb`.
"""

import glob
import os
import sys

import duckdb

SKIPPED = ("run_id", "generation")


def parquet_files(workspace, table):
    return sorted(glob.glob(f"{workspace}/.flameox/evidence/{table}/*/*.parquet"))


def column_digest(con, files, column):
    return con.execute(
        f"""select count(*), md5(string_agg(coalesce(cast("{column}" as varchar), '<null>'),
                                  '|' order by filename, file_row_number))
            from read_parquet({files!r}, filename=true, file_row_number=true)"""
    ).fetchone()


def main(a, b):
    con = duckdb.connect()
    equal = True
    for table_dir in sorted(glob.glob(f"{a}/.flameox/evidence/*")):
        table = os.path.basename(table_dir)
        fa, fb = parquet_files(a, table), parquet_files(b, table)
        if not fb:
            print(table, "missing in", b)
            equal = False
            continue
        columns = [r[0] for r in con.execute(f"describe select * from read_parquet({fa!r})").fetchall()]
        diffs = [c for c in columns if c not in SKIPPED and column_digest(con, fa, c) != column_digest(con, fb, c)]
        rows = con.execute(f"select count(*) from read_parquet({fa!r})").fetchone()[0]
        print(table, rows, "rows", "EQUAL" if not diffs else f"DIFF {diffs}")
        equal = equal and not diffs
    print("ALL EQUAL" if equal else "DIFFERENT")
    return 0 if equal else 1


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
