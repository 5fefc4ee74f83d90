//! OTLP metric points → `counters` rows: one series per metric and
//! attribute set (`http.requests{route=/a}`), on a counter track of the
//! resource's process. Gauge and sum points keep their value; histogram,
//! exponential histogram and summary points become `<name>.count`,
//! `<name>.sum`, `<name>.min` and `<name>.max` series (the parts written).
//! UCUM `By` is stored as `bytes`, the unit the memory analysis reads.

use std::collections::HashSet;

use super::model::{KeyValue, Metric, any_value};
use crate::trace_events::builder::TraceBuilder;
use crate::trace_events::ids::NO_ID;
use crate::trace_events::store::CounterRow;
use crate::trace_events::tracks::Ident;

/// Distinct series seen (process, series name).
#[derive(Default)]
pub struct SeriesCount(HashSet<(u32, u32)>);

impl SeriesCount {
    pub fn len(&self) -> usize {
        self.0.len()
    }
}

/// `name` or `name{k=v,…}` with the attributes sorted by key.
fn series_name(name: &str, attributes: &[KeyValue]) -> String {
    if attributes.is_empty() {
        return name.to_owned();
    }
    let mut parts: Vec<String> = attributes
        .iter()
        .map(|kv| {
            let v = match any_value(&kv.value) {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            };
            format!("{}={v}", kv.key)
        })
        .collect();
    parts.sort();
    format!("{name}{{{}}}", parts.join(","))
}

fn unit_of(unit: &str) -> &str {
    match unit {
        "By" => "bytes",
        // UCUM `1`: dimensionless.
        "1" => "",
        other => other,
    }
}

struct Writer<'a> {
    trace: &'a mut TraceBuilder,
    series: &'a mut SeriesCount,
    process: u32,
}

impl Writer<'_> {
    fn point(&mut self, name: &str, unit: &str, ts: Option<i64>, value: Option<f64>) {
        let (Some(ts), Some(value)) = (ts, value) else {
            self.trace.log.note("metric_point_unreadable", || {
                format!("a point of `{name}` has no time or no value; skipped")
            });
            return;
        };
        let name = self.trace.strings.intern(name);
        let unit = if unit.is_empty() {
            NO_ID
        } else {
            self.trace.strings.intern(unit)
        };
        let track = self
            .trace
            .tracks
            .counter_track(Ident::Label(self.process), name);
        self.series.0.insert((self.process, name));
        self.trace.counters.push(CounterRow {
            track,
            ts,
            value,
            name,
            unit,
        });
    }
}

/// Adds every point of `metric` for `process` (an interned label).
pub fn add_metric(
    trace: &mut TraceBuilder,
    series: &mut SeriesCount,
    process: u32,
    metric: &Metric,
) {
    let mut w = Writer {
        trace,
        series,
        process,
    };
    let unit = unit_of(&metric.unit);
    for points in [&metric.gauge, &metric.sum].into_iter().flatten() {
        for p in &points.data_points {
            let name = series_name(&metric.name, &p.attributes);
            w.point(&name, unit, p.time_unix_nano, p.as_double.or(p.as_int));
        }
    }
    let histograms = [
        &metric.histogram,
        &metric.exponential_histogram,
        &metric.summary,
    ];
    for points in histograms.into_iter().flatten() {
        for p in &points.data_points {
            let base = series_name(&metric.name, &p.attributes);
            let ts = p.time_unix_nano;
            w.point(&format!("{base}.count"), "count", ts, p.count);
            if p.sum.is_some() {
                w.point(&format!("{base}.sum"), unit, ts, p.sum);
            }
            if p.min.is_some() {
                w.point(&format!("{base}.min"), unit, ts, p.min);
            }
            if p.max.is_some() {
                w.point(&format!("{base}.max"), unit, ts, p.max);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn series_names_sort_attributes() {
        let attrs: Vec<KeyValue> = serde_json::from_value(json!([
            {"key": "route", "value": {"stringValue": "/a"}},
            {"key": "code", "value": {"intValue": "200"}}
        ]))
        .unwrap();
        assert_eq!(
            series_name("http.requests", &attrs),
            "http.requests{code=200,route=/a}"
        );
        assert_eq!(series_name("x", &[]), "x");
    }
}
