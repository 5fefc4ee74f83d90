"""The nextest filter of the corpus-backed tests.

Reads `cargo nextest list --run-ignored only --message-format json` from a
clone with no corpus (where exactly the corpus-backed tests are ignored) and
prints a filterset that selects those tests by binary and exact name, so
.ci/run runs them with the corpus without running the rest twice.
"""

import json
import sys


def main(path: str) -> None:
    with open(path, encoding="utf-8") as f:
        listing = json.load(f)
    terms = []
    count = 0
    for binary_id, suite in sorted(listing["rust-suites"].items()):
        names = [
            name
            for name, case in sorted(suite["testcases"].items())
            if case.get("ignored") and case["filter-match"]["status"] == "matches"
        ]
        if not names:
            continue
        count += len(names)
        tests = " | ".join(f"test(={name})" for name in names)
        terms.append(f"(binary_id({binary_id}) & ({tests}))")
    if not terms:
        sys.exit("no corpus-backed tests were listed: the clean clone should have skipped them")
    print(f"{count} corpus-backed tests in {len(terms)} binaries", file=sys.stderr)
    print(" | ".join(terms))


if __name__ == "__main__":
    main(sys.argv[1])
