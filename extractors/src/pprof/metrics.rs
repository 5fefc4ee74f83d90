//! pprof sample types → flameox metrics.
//!
//! A pprof profile carries one value per sample type on every sample (Go
//! CPU: `samples/count`, `cpu/nanoseconds`; Go heap: four alloc/inuse
//! columns). Each becomes its own metric, so `frame_totals` has one set of
//! rows per sample type and hotspots pick one with `--metric`. The known
//! pairs get flameox's names; anything else keeps its pprof name under
//! `pprof.`.

use crate::stacks::ReductionSpec;

/// One sample type and how its column is read.
#[derive(Debug, Clone)]
pub struct MetricPlan {
    /// Index of the column in `Sample.value`.
    pub column: usize,
    pub spec: ReductionSpec,
    /// pprof's own `type` and `unit` strings.
    pub pprof_type: String,
    pub pprof_unit: String,
    /// Where `samples.count` comes from: the value itself (count-like
    /// types), the nearest earlier `count` column (Go pairs
    /// `alloc_space` with `alloc_objects`, `cpu` with `samples`), or 1 per
    /// pprof sample record (`None`).
    pub count: CountSource,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountSource {
    Itself,
    Column(usize),
    OnePerRecord,
}

/// (metric, weight unit) for a pprof `type`/`unit` pair.
pub fn metric_for(pprof_type: &str, pprof_unit: &str) -> (String, String) {
    let known = match (pprof_type, pprof_unit) {
        ("samples", "count") => Some(("cpu.samples", "samples")),
        ("cpu", "nanoseconds") => Some(("cpu.time_ns", "ns")),
        ("alloc_objects", "count") => Some(("memory.alloc_objects", "count")),
        ("alloc_space", "bytes") => Some(("memory.alloc_bytes", "bytes")),
        ("inuse_objects", "count") => Some(("memory.inuse_objects", "count")),
        ("inuse_space", "bytes") => Some(("memory.inuse_bytes", "bytes")),
        ("wall", "nanoseconds") => Some(("wall.time_ns", "ns")),
        ("contentions", "count") => Some(("lock.contentions", "count")),
        ("delay", "nanoseconds") => Some(("lock.delay_ns", "ns")),
        _ => None,
    };
    if let Some((metric, unit)) = known {
        return (metric.to_owned(), unit.to_owned());
    }
    let unit = match pprof_unit {
        "nanoseconds" => "ns".to_owned(),
        "" => "count".to_owned(),
        other => sanitize(other),
    };
    (
        format!("pprof.{}_{}", sanitize(pprof_type), sanitize(pprof_unit)),
        unit,
    )
}

/// Lowercase ASCII letters, digits and single `_`; never empty, at most 64 bytes.
pub fn sanitize(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
        if out.len() >= 64 {
            break;
        }
    }
    while out.ends_with('_') {
        out.pop();
    }
    if out.is_empty() {
        out.push_str("value");
    }
    out
}

/// One plan per `(type, unit)` column, the default column first (its metric
/// is declared first); duplicate metric names get `_2`, `_3`, ….
pub fn plan(types: &[(String, String)], default_column: usize) -> Vec<MetricPlan> {
    let mut order: Vec<usize> = (0..types.len()).collect();
    if default_column < types.len() {
        order.retain(|&i| i != default_column);
        order.insert(0, default_column);
    }
    let mut names: Vec<String> = vec![String::new(); types.len()];
    let mut taken = std::collections::BTreeSet::new();
    // Names are given in column order so a suffix does not depend on the default.
    for (i, (ty, unit)) in types.iter().enumerate() {
        let (base, _) = metric_for(ty, unit);
        let mut name = base.clone();
        let mut n = 2;
        while !taken.insert(name.clone()) {
            name = format!("{base}_{n}");
            n += 1;
        }
        names[i] = name;
    }
    order
        .into_iter()
        .map(|column| {
            let (ty, unit) = &types[column];
            let (_, weight_unit) = metric_for(ty, unit);
            let count = if unit == "count" {
                CountSource::Itself
            } else {
                match (0..column).rev().find(|&j| types[j].1 == "count") {
                    Some(j) => CountSource::Column(j),
                    None => CountSource::OnePerRecord,
                }
            };
            MetricPlan {
                column,
                spec: ReductionSpec {
                    metric: names[column].clone(),
                    unit: weight_unit.clone(),
                    weight_unit,
                },
                pprof_type: ty.clone(),
                pprof_unit: unit.clone(),
                count,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn types(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn names_units_and_counts() {
        assert_eq!(
            metric_for("cpu", "nanoseconds"),
            ("cpu.time_ns".into(), "ns".into())
        );
        assert_eq!(
            metric_for("Goroutine Count!", "count"),
            ("pprof.goroutine_count_count".into(), "count".into())
        );
        assert_eq!(
            metric_for("wall", "microseconds"),
            ("pprof.wall_microseconds".into(), "microseconds".into())
        );
        assert_eq!(
            metric_for("", ""),
            ("pprof.value_value".into(), "count".into())
        );

        let heap = plan(
            &types(&[
                ("alloc_objects", "count"),
                ("alloc_space", "bytes"),
                ("inuse_objects", "count"),
                ("inuse_space", "bytes"),
            ]),
            1,
        );
        let got: Vec<_> = heap
            .iter()
            .map(|p| (p.column, p.spec.metric.as_str(), p.count))
            .collect();
        assert_eq!(
            got,
            vec![
                (1, "memory.alloc_bytes", CountSource::Column(0)),
                (0, "memory.alloc_objects", CountSource::Itself),
                (2, "memory.inuse_objects", CountSource::Itself),
                (3, "memory.inuse_bytes", CountSource::Column(2)),
            ]
        );

        let dup = plan(
            &types(&[
                ("cpu", "nanoseconds"),
                ("cpu", "nanoseconds"),
                ("x", "bytes"),
            ]),
            1,
        );
        let names: Vec<_> = dup.iter().map(|p| p.spec.metric.as_str()).collect();
        assert_eq!(names, ["cpu.time_ns_2", "cpu.time_ns", "pprof.x_bytes"]);
        assert_eq!(dup[0].count, CountSource::OnePerRecord);
    }
}
