#!/usr/bin/env bash
# The object-store acceptance command of docs/scale-out.md, run by .ci/run:
# moto's S3 server on loopback, a corpus trace put in a bucket with boto3,
# then `flameox import s3://<bucket>/<key> --json` from a fresh workspace.
# The stored artifact id must be the sha256 of the local file.
# Usage: s3_import_check.sh FLAMEOX_BIN VENV_WITH_MOTO TRACE_FILE
set -euo pipefail
bin="$1"
venv="$2"
trace="$3"
work=$(mktemp -d)
port=$("$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$venv/bin/moto_server" -H 127.0.0.1 -p "$port" > "$work/moto.log" 2>&1 &
moto=$!
trap 'kill "$moto" 2>/dev/null || true; rm -rf "$work"' EXIT
export AWS_ENDPOINT_URL="http://127.0.0.1:$port" AWS_ACCESS_KEY_ID=ci AWS_SECRET_ACCESS_KEY=ci-secret AWS_REGION=us-east-1
key="kineto/$(basename "$trace")"
"$venv/bin/python" - "$trace" "$key" <<'PY'
import sys, time, boto3
trace, key = sys.argv[1], sys.argv[2]
s3 = boto3.client("s3")
for _ in range(300):
    try:
        s3.list_buckets()
        break
    except Exception:
        time.sleep(0.1)
s3.create_bucket(Bucket="ci-traces")
s3.upload_file(trace, "ci-traces", key)
PY
mkdir "$work/project"
(cd "$work/project" && "$bin" init --json > /dev/null)
start=$(date +%s.%N)
(cd "$work/project" && "$bin" import "s3://ci-traces/$key" --json > "$work/import.json")
end=$(date +%s.%N)
"$venv/bin/python" - "$trace" "$work/import.json" "$start" "$end" "$key" <<'PY'
import hashlib, json, sys
trace, answer, start, end, key = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
result = json.load(open(answer))
expected = "sha256:" + hashlib.sha256(open(trace, "rb").read()).hexdigest()
assert result["artifact_id"] == expected, (result["artifact_id"], expected)
assert result["sources"] == ["s3://ci-traces/" + key], result["sources"]
rows = sum(result["rows"].values())
print(f"s3 import: {result['kind']} {result['bytes']} bytes, {rows} rows, run {result['run_id']}, "
      f"{end - start:.2f} s wall, artifact id = sha256 of the file")
PY
