"""Writes OTLP/JSON made by the OpenTelemetry Python SDK, for
tests/tests/otlp_observations.rs.

A small instrumented program: one request trace whose root has sequential
children, two concurrent children (threads, the context propagated) and a
failing child; a second trace; a counter with two attribute sets, an
up-down counter, a histogram and an observable gauge. The SDK's own
encoders (opentelemetry-exporter-otlp-proto-common) turn the finished
spans and the collected metrics into export requests, written as two JSON
lines:

- OUT/base64.jsonl: protobuf's canonical JSON of the requests
  (MessageToDict: ids base64, 64-bit integers as strings, enums as names);
- OUT/hex.jsonl: the same requests as the OTLP/JSON spec and the
  collector's file exporter write them (ids hex, enums as integers).

Usage: python write_otlp.py OUT_DIR [DB_FACTOR]
(DB_FACTOR, default 1, multiplies each db.query's time and the latency
recorded for /checkout: a slower build of the same program.)
"""

import base64
import json
import sys
import threading
import time
from pathlib import Path

from google.protobuf.json_format import MessageToDict
from opentelemetry import context, trace
from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.metrics import Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

out = Path(sys.argv[1])
db_factor = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
out.mkdir(parents=True, exist_ok=True)

resource = Resource.create({"service.name": "checkout"})
spans_out = InMemorySpanExporter()
tracer_provider = TracerProvider(resource=resource)
tracer_provider.add_span_processor(SimpleSpanProcessor(spans_out))
tracer = tracer_provider.get_tracer("shop.checkout")
reader = InMemoryMetricReader()
meter = MeterProvider(resource=resource, metric_readers=[reader]).get_meter("shop.checkout")
requests = meter.create_counter("http.requests", unit="1")
inflight = meter.create_up_down_counter("http.inflight", unit="1")
latency = meter.create_histogram("http.latency", unit="ms")
meter.create_observable_gauge(
    "queue.depth", callbacks=[lambda _options: [Observation(3, {"queue": "orders"})]]
)


def fetch(name, parent_ctx, seconds):
    token = context.attach(parent_ctx)
    try:
        with tracer.start_as_current_span(name, kind=trace.SpanKind.CLIENT):
            time.sleep(seconds)
    finally:
        context.detach(token)


with tracer.start_as_current_span("handle_request", kind=trace.SpanKind.SERVER) as root:
    root.set_attribute("http.route", "/checkout")
    inflight.add(1)
    with tracer.start_as_current_span("parse"):
        time.sleep(0.002)
    for _ in range(3):
        with tracer.start_as_current_span("db.query") as q:
            q.set_attribute("db.rows", 7)
            time.sleep(0.003 * db_factor)
    here = context.get_current()
    threads = [
        threading.Thread(target=fetch, args=("fetch.inventory", here, 0.02)),
        threading.Thread(target=fetch, args=("fetch.prices", here, 0.015)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with tracer.start_as_current_span("charge") as charge:
        time.sleep(0.002)
        charge.set_status(Status(StatusCode.ERROR, "card declined"))
    inflight.add(-1)
    requests.add(1, {"route": "/checkout", "code": 200})
    latency.record(41.5 * db_factor, {"route": "/checkout"})

with tracer.start_as_current_span("warm_cache"):
    time.sleep(0.004)
    requests.add(2, {"route": "/health", "code": 200})
    latency.record(2.0, {"route": "/checkout"})

span_request = MessageToDict(encode_spans(spans_out.get_finished_spans()))
metric_request = MessageToDict(encode_metrics(reader.get_metrics_data()))

with open(out / "base64.jsonl", "w") as f:
    f.write(json.dumps(span_request) + "\n")
    f.write(json.dumps(metric_request) + "\n")

KINDS = {"SPAN_KIND_INTERNAL": 1, "SPAN_KIND_SERVER": 2, "SPAN_KIND_CLIENT": 3}
CODES = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}


def to_spec(value, key=None):
    """The OTLP/JSON spec's spelling: ids hex, enums integers."""
    if isinstance(value, dict):
        return {k: to_spec(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [to_spec(v) for v in value]
    if key in ("traceId", "spanId", "parentSpanId"):
        return base64.b64decode(value).hex()
    if key == "kind" and value in KINDS:
        return KINDS[value]
    if key == "code" and value in CODES:
        return CODES[value]
    return value


with open(out / "hex.jsonl", "w") as f:
    f.write(json.dumps(to_spec(span_request)) + "\n")
    f.write(json.dumps(to_spec(metric_request)) + "\n")
