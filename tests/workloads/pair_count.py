"""Counts the pairs (i, j) of 0..n whose sum is divisible by 7, twice:
exactly 2·n² loop iterations, plus Python's own start-up (tens of ms of
CPU: interpreter, site, imports) as a fixed cost under every size. The
scaling test (tests/tests/scaling_startup_cost.rs) expects flameox to see
quadratic growth through that fixed cost."""

import sys

n = int(sys.argv[1])
count = 0
for _ in range(2):
    for i in range(n):
        for j in range(n):
            if (i + j) % 7 == 0:
                count += 1
print("pairs", count)
