//! The OTLP/JSON request shapes flameox reads, as serde structs, and the
//! value conventions of both JSON encodings of them:
//!
//! - the OTLP/JSON spec (collector `file` exporter, OTLP/HTTP JSON):
//!   lowerCamelCase names, trace and span ids in hex, 64-bit integers as
//!   strings or numbers, enums as integers;
//! - protobuf's canonical JSON (`MessageToJson` of the SDK's
//!   `encode_spans` / `encode_metrics`): the same names, ids in base64,
//!   enums as names (`SPAN_KIND_SERVER`); with `preserving_proto_field_name`
//!   the names are snake_case, accepted as aliases.
//!
//! Attribute values stay `serde_json::Value` until [`any_value`] turns them
//! into plain JSON (`{"intValue": "5"}` → `5`).

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// One export request (one line of a collector file).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportRequest {
    #[serde(default, alias = "resource_spans")]
    pub resource_spans: Vec<ResourceSpans>,
    #[serde(default, alias = "resource_metrics")]
    pub resource_metrics: Vec<ResourceMetrics>,
    /// Logs are counted, not read.
    #[serde(default, alias = "resource_logs")]
    pub resource_logs: Vec<serde::de::IgnoredAny>,
}

#[derive(Debug, Default, Deserialize)]
pub struct Resource {
    #[serde(default)]
    pub attributes: Vec<KeyValue>,
}

#[derive(Debug, Default, Deserialize)]
pub struct Scope {
    #[serde(default)]
    pub name: String,
}

#[derive(Debug, Deserialize)]
pub struct KeyValue {
    pub key: String,
    #[serde(default)]
    pub value: Value,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSpans {
    #[serde(default)]
    pub resource: Resource,
    #[serde(
        default,
        alias = "scope_spans",
        alias = "instrumentationLibrarySpans",
        alias = "instrumentation_library_spans"
    )]
    pub scope_spans: Vec<ScopeSpans>,
}

#[derive(Debug, Default, Deserialize)]
pub struct ScopeSpans {
    #[serde(default, alias = "instrumentationLibrary")]
    pub scope: Scope,
    #[serde(default)]
    pub spans: Vec<Span>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Span {
    #[serde(default, alias = "trace_id")]
    pub trace_id: String,
    #[serde(default, alias = "span_id")]
    pub span_id: String,
    #[serde(default, alias = "parent_span_id")]
    pub parent_span_id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub kind: Value,
    #[serde(default, alias = "start_time_unix_nano", deserialize_with = "nanos")]
    pub start_time_unix_nano: Option<i64>,
    #[serde(default, alias = "end_time_unix_nano", deserialize_with = "nanos")]
    pub end_time_unix_nano: Option<i64>,
    #[serde(default)]
    pub attributes: Vec<KeyValue>,
    #[serde(default)]
    pub status: Option<Status>,
    #[serde(default)]
    pub events: Vec<serde::de::IgnoredAny>,
}

#[derive(Debug, Default, Deserialize)]
pub struct Status {
    #[serde(default)]
    pub code: Value,
    #[serde(default)]
    pub message: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceMetrics {
    #[serde(default)]
    pub resource: Resource,
    #[serde(
        default,
        alias = "scope_metrics",
        alias = "instrumentationLibraryMetrics",
        alias = "instrumentation_library_metrics"
    )]
    pub scope_metrics: Vec<ScopeMetrics>,
}

#[derive(Debug, Default, Deserialize)]
pub struct ScopeMetrics {
    #[serde(default, alias = "instrumentationLibrary")]
    pub scope: Scope,
    #[serde(default)]
    pub metrics: Vec<Metric>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Metric {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub unit: String,
    #[serde(default)]
    pub gauge: Option<NumberPoints>,
    #[serde(default)]
    pub sum: Option<NumberPoints>,
    #[serde(default)]
    pub histogram: Option<HistogramPoints>,
    #[serde(default, alias = "exponential_histogram")]
    pub exponential_histogram: Option<HistogramPoints>,
    #[serde(default)]
    pub summary: Option<HistogramPoints>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NumberPoints {
    #[serde(default, alias = "data_points")]
    pub data_points: Vec<NumberPoint>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NumberPoint {
    #[serde(default)]
    pub attributes: Vec<KeyValue>,
    #[serde(default, alias = "time_unix_nano", deserialize_with = "nanos")]
    pub time_unix_nano: Option<i64>,
    #[serde(default, alias = "as_double", deserialize_with = "number")]
    pub as_double: Option<f64>,
    #[serde(default, alias = "as_int", deserialize_with = "number")]
    pub as_int: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistogramPoints {
    #[serde(default, alias = "data_points")]
    pub data_points: Vec<HistogramPoint>,
}

/// A histogram, exponential histogram or summary point: what all three
/// share (count, sum, and min / max where written).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistogramPoint {
    #[serde(default)]
    pub attributes: Vec<KeyValue>,
    #[serde(default, alias = "time_unix_nano", deserialize_with = "nanos")]
    pub time_unix_nano: Option<i64>,
    #[serde(default, deserialize_with = "number")]
    pub count: Option<f64>,
    #[serde(default, deserialize_with = "number")]
    pub sum: Option<f64>,
    #[serde(default, deserialize_with = "number")]
    pub min: Option<f64>,
    #[serde(default, deserialize_with = "number")]
    pub max: Option<f64>,
}

/// A number written as a JSON number or a decimal string.
fn number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    })
}

/// Unix nanoseconds written as a string or a number (`None` when absent,
/// zero, or beyond `i64`).
fn nanos<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    let v = match Value::deserialize(d)? {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_u64().and_then(|u| i64::try_from(u).ok())),
        Value::String(s) => s.trim().parse::<i64>().ok(),
        _ => None,
    };
    Ok(v.filter(|&t| t > 0))
}

/// An OTLP `AnyValue` as plain JSON.
pub fn any_value(v: &Value) -> Value {
    let Value::Object(map) = v else {
        return v.clone();
    };
    let Some((key, inner)) = map.iter().next() else {
        return Value::Null;
    };
    match key.as_str() {
        "intValue" | "int_value" => match inner {
            Value::String(s) => s.parse::<i64>().map(Value::from).unwrap_or(inner.clone()),
            _ => inner.clone(),
        },
        "arrayValue" | "array_value" => Value::Array(
            inner["values"]
                .as_array()
                .map(|a| a.iter().map(any_value).collect())
                .unwrap_or_default(),
        ),
        "kvlistValue" | "kvlist_value" => Value::Object(
            inner["values"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|kv| {
                            Some((kv["key"].as_str()?.to_owned(), any_value(&kv["value"])))
                        })
                        .collect()
                })
                .unwrap_or_default(),
        ),
        _ => inner.clone(),
    }
}

/// The string value of attribute `key`, if it has one (numbers printed).
pub fn attribute(attributes: &[KeyValue], key: &str) -> Option<String> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| match any_value(&kv.value) {
            Value::String(s) => Some(s),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        })
}

/// A trace or span id as lowercase hex: hex as written when it is hex of
/// the id's length (16 or 8 bytes), else decoded from base64. `None` when
/// absent, all zero, or neither.
pub fn id_hex(text: &str) -> Option<String> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let hex =
        if (text.len() == 32 || text.len() == 16) && text.bytes().all(|b| b.is_ascii_hexdigit()) {
            text.to_ascii_lowercase()
        } else {
            hex::encode(base64_decode(text)?)
        };
    (!hex.bytes().all(|b| b == b'0')).then_some(hex)
}

/// Standard or URL-safe base64, padding optional.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for b in text.bytes().filter(|&b| b != b'=') {
        let v = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// A span kind's lowercase name (`server`, `client`, …), from its integer
/// or enum-name spelling; `internal` when unspecified.
pub fn span_kind(v: &Value) -> &'static str {
    let code = match v {
        Value::Number(n) => n.as_i64().unwrap_or(0),
        Value::String(s) => match s.trim_start_matches("SPAN_KIND_") {
            "INTERNAL" => 1,
            "SERVER" => 2,
            "CLIENT" => 3,
            "PRODUCER" => 4,
            "CONSUMER" => 5,
            _ => 0,
        },
        _ => 0,
    };
    match code {
        2 => "server",
        3 => "client",
        4 => "producer",
        5 => "consumer",
        _ => "internal",
    }
}

/// Whether a status says error (code 2 or `STATUS_CODE_ERROR`).
pub fn is_error(status: &Status) -> bool {
    match &status.code {
        Value::Number(n) => n.as_i64() == Some(2),
        Value::String(s) => s == "STATUS_CODE_ERROR",
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_read_from_hex_and_base64() {
        assert_eq!(
            id_hex("5B8EFFF798038103D269B633813FC60C").as_deref(),
            Some("5b8efff798038103d269b633813fc60c")
        );
        // The same 16 bytes in base64.
        assert_eq!(
            id_hex("W47/95gDgQPSabYzgT/GDA==").as_deref(),
            Some("5b8efff798038103d269b633813fc60c")
        );
        assert_eq!(id_hex("AAAAAAAAAAE=").as_deref(), Some("0000000000000001"));
        assert_eq!(id_hex("0000000000000000"), None);
        assert_eq!(id_hex(""), None);
        assert_eq!(id_hex("not an id!"), None);
    }

    #[test]
    fn values_and_enums_read_in_both_spellings() {
        assert_eq!(any_value(&json!({"intValue": "42"})), json!(42));
        assert_eq!(any_value(&json!({"stringValue": "x"})), json!("x"));
        assert_eq!(
            any_value(&json!({"arrayValue": {"values": [{"boolValue": true}]}})),
            json!([true])
        );
        assert_eq!(span_kind(&json!(2)), "server");
        assert_eq!(span_kind(&json!("SPAN_KIND_CLIENT")), "client");
        assert_eq!(span_kind(&Value::Null), "internal");
        let p: NumberPoint =
            serde_json::from_value(json!({"timeUnixNano": "1700000000000000001", "asInt": "7"}))
                .unwrap();
        assert_eq!(p.time_unix_nano, Some(1_700_000_000_000_000_001));
        assert_eq!(p.as_int, Some(7.0));
    }
}
