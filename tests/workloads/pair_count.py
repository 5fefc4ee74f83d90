"""Counts the unordered pairs (i, j) of 0..n whose sum is divisible by 7.

Both algorithms are O(n^2); `full` visits every ordered pair and halves the
count, `half` visits each unordered pair once, so it does half the work:
the experiment golden test expects `half` to be faster and both to grow
like n^2.
"""

import sys


def full(n):
    count = 0
    for i in range(n):
        for j in range(n):
            if i != j and (i + j) % 7 == 0:
                count += 1
    return count // 2


def half(n):
    count = 0
    for i in range(n):
        for j in range(i + 1, n):
            if (i + j) % 7 == 0:
                count += 1
    return count


def main():
    n = int(sys.argv[1])
    algorithm = {"full": full, "half": half}[sys.argv[2]]
    print(f"pairs {algorithm(n)}")


if __name__ == "__main__":
    main()
