#!/usr/bin/env bash
# The shared corpus of real traces, checked against tests/corpus.toml (path, size, sha256,
# producer, licence, source and origin of every file).
#
#   bash benches/corpus.sh status [DIR]              which files are present and verified
#   bash benches/corpus.sh fetch [DIR]               fetch missing or differing files from their
#                                                    origins (public repositories at pinned
#                                                    commits, files of this repository)
#   bash benches/corpus.sh fetch --from MIRROR [DIR] the same from a mirror: a folder or an
#                                                    http(s) URL with the corpus's layout
#
# DIR defaults to $FLAMEOX_CORPUS, else ../shared/corpus beside the repository: the folder the
# tests read (tests/build_support/corpus_location.rs). Every fetched file is verified against
# its sha256 before it is moved into place. Exit 0 when every file is verified, 1 otherwise.
# FLAMEOX_CORPUS_ORIGIN_BASE replaces https://raw.githubusercontent.com (tests serve a copy
# on loopback: benches/corpus_fetch_check.py).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
exec python3 "$repo/benches/corpus.py" "$repo" "$@"
