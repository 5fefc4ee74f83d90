#!/usr/bin/env python3
"""Where an import's time goes, from a `perf record --call-graph dwarf` file.

Two views of the same samples (docs/performance.md, "Where the time goes"):

  timeline: CPU samples per time bucket, each labelled with the first
            `--phase` substring found on its stack (else its thread name);
            at F Hz one busy core gives F * bucket samples per bucket.
  callees:  for `--callees FUNC`, the share of all samples spent under FUNC
            and in each function it calls directly.

The release build has no frame pointers, so record with DWARF unwinding:

  perf record -F 199 --call-graph dwarf,16384 -o import.data flameox import TRACE
  python3 benches/peers/perf_phases.py import.data --bucket 0.5 \
      --phase Spill::finish --phase process_batches --phase scan_batches
  python3 benches/peers/perf_phases.py import.data --callees Decoder::packet
"""

import argparse
import collections
import re
import subprocess
import sys

HEADER = re.compile(r"^\s*(\S+)\s+(\d+)\s+([\d.]+):")


def samples(perf_data):
    """Yields (thread name, time in s, [frames, leaf first])."""
    out = subprocess.run(
        ["perf", "script", "-i", perf_data, "-F", "comm,tid,time,ip,sym"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    current = None
    for line in out.splitlines():
        if not line.strip():
            if current:
                yield current
            current = None
            continue
        header = HEADER.match(line)
        if header and not line.startswith("\t"):
            current = (header.group(1), float(header.group(3)), [])
        elif current:
            parts = line.strip().split(None, 1)
            current[2].append(re.sub(r"\+0x[0-9a-f]+$", "", parts[-1]))
    if current:
        yield current


def timeline(all_samples, bucket, phases):
    start = min(t for _, t, _ in all_samples)
    rows = collections.defaultdict(collections.Counter)
    for thread, t, frames in all_samples:
        stack = " ".join(frames)
        label = next((p for p in phases if p in stack), thread)
        rows[int((t - start) / bucket)][label] += 1
    for k in sorted(rows):
        parts = ", ".join(f"{name} {n}" for name, n in rows[k].most_common())
        print(f"{k * bucket:6.1f} s  {parts}")


def callees(all_samples, function):
    total = len(all_samples)
    under = collections.Counter()
    inside = 0
    for _, _, frames in all_samples:
        # The outermost frame of `function`, then what it called.
        hits = [i for i, f in enumerate(frames) if function in f]
        if not hits:
            continue
        inside += 1
        i = hits[-1]
        under[frames[i - 1][:100] if i > 0 else "(self)"] += 1
    print(f"{function}: {100 * inside / total:.1f} % of {total} samples")
    for name, n in under.most_common(25):
        print(f"{100 * n / total:6.1f} %  {name}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("perf_data")
    parser.add_argument("--bucket", type=float, default=0.5, help="seconds per row")
    parser.add_argument("--phase", action="append", default=[], help="stack substring")
    parser.add_argument("--callees", help="break this function's samples down")
    args = parser.parse_args()
    all_samples = list(samples(args.perf_data))
    if not all_samples:
        sys.exit("no samples in " + args.perf_data)
    if args.callees:
        callees(all_samples, args.callees)
    else:
        timeline(all_samples, args.bucket, args.phase)


if __name__ == "__main__":
    main()
