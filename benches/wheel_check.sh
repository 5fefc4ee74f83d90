#!/usr/bin/env bash
# The wheel as a user gets it: install it into a fresh virtualenv, check
# its version against server.json, report its sizes, drive the installed
# `flameox mcp serve` with the stock Python MCP client, connect a client
# with `flameox setup` (its MCP handshake included), and run it with uvx.
# Usage: [WHEEL_PROFILE=debug] bash benches/wheel_check.sh WHEEL MCP_CLIENT_VENV UV [TRACE]
# TRACE is the Kineto trace the MCP client imports (default: the shared
# corpus's hta_alexnet_a100 beside this repository; .ci/run, which runs this
# from a clone with no corpus beside it, names the checkout's).
# WHEEL_PROFILE is the profile folder the wheel was built into (default
# dist, what is released: stripped; the dev profile writes to debug); .ci/run packages the dev build. The
# sizes of a dist wheel go to docs/install.md.
set -euo pipefail
wheel=$1 client_venv=$2 uv=$3
repo=$(cd "$(dirname "$0")/.." && pwd)
trace=${4:-$repo/../shared/corpus/kineto/hta_alexnet_a100.pt.trace.json.gz}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

version=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$repo/server.json")
case "$(basename "$wheel")" in
  "flameox-$version-"*) ;;
  *) echo "wheel $(basename "$wheel") is not version $version (server.json)"; exit 1 ;;
esac

python3 -m venv "$scratch/venv"
"$scratch/venv/bin/pip" install -q --disable-pip-version-check --no-index "$wheel"
bin="$scratch/venv/bin/flameox"
reported=$("$bin" --version)
echo "installed: $reported"
profile=${WHEEL_PROFILE:-dist}
case "$reported" in
  "flameox $version (commit "*", $profile build)") ;;
  *) echo "the installed flameox says '$reported', expected version $version from the $profile profile"; exit 1 ;;
esac
if [ "$profile" = dist ] && nm "$bin" >/dev/null 2>&1 && [ "$(nm "$bin" 2>/dev/null | wc -l)" -gt 0 ]; then
  echo "the installed binary still has symbols"; exit 1
fi
rss_kb=$( { /usr/bin/time -f '%M' "$bin" --version >/dev/null; } 2>&1 | tail -n 1)
text_bytes=$(size "$bin" | awk 'NR == 2 { print $1 }')
echo "sizes: wheel $(stat -c %s "$wheel") B, installed binary $(stat -c %s "$bin") B, text $text_bytes B, resident $rss_kb KB for a fresh --version"

echo "-- stock MCP client against the installed flameox"
(cd /tmp && "$client_venv/bin/python" "$repo/tests/clients/python_stdio_client.py" \
  "$bin" "$trace")

echo "-- flameox setup from the install: Cursor and Codex in a scratch home"
home="$scratch/home"
mkdir -p "$home/.cursor" "$home/.codex"
printf '# my Codex settings\nmodel = "gpt-5-codex"\n' > "$home/.codex/config.toml"
HOME="$home" XDG_CONFIG_HOME= XDG_STATE_HOME= CODEX_HOME= "$bin" setup --dry-run
HOME="$home" XDG_CONFIG_HOME= XDG_STATE_HOME= CODEX_HOME= "$bin" setup --all --yes --json > "$scratch/setup.json"
python3 - "$scratch/setup.json" "$bin" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
connected = [e for e in report["edits"] if e["action"] == "add"]
assert [e["client"] for e in connected] == ["cursor", "codex"], report
for edit in connected:
    assert edit["verified"]["server_name"] == "flameox", edit
assert report["launcher"]["command"] == sys.argv[2], report["launcher"]
print("setup: connected", ", ".join(e["client"] for e in connected), "with", report["launcher"]["command"])
PY
grep -q '^# my Codex settings$' "$home/.codex/config.toml"

echo "-- uvx --from the wheel"
UV_CACHE_DIR="$scratch/uv-cache" UV_PYTHON_DOWNLOADS=never \
  "$(dirname "$uv")/uvx" --offline --from "$wheel" flameox --version
