//! How people read numbers: durations and sizes with three significant digits. Shared
//! by the terminal's tables and the one-line summaries both transports show.

/// `1.53 ms`, `12 ns`, `2.10 s` — three significant digits.
pub fn duration_ns(ns: i64) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let v = ns.unsigned_abs() as f64;
    let (value, unit) = if v >= 1e9 {
        (v / 1e9, "s")
    } else if v >= 1e6 {
        (v / 1e6, "ms")
    } else if v >= 1e3 {
        (v / 1e3, "µs")
    } else {
        return format!("{sign}{} ns", ns.unsigned_abs());
    };
    format!("{sign}{} {unit}", sig3(value))
}

/// `1.2 KiB`, `12.4 GiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{} {}", sig3(v), UNITS[unit])
    }
}

/// Three significant digits.
pub fn sig3(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// A metric as a person says it (`trace.wall_ns` → wall time).
pub fn metric_words(metric: &str) -> String {
    match metric {
        "trace.wall_ns" => "wall time".into(),
        "cpu.time_ns" => "CPU time".into(),
        "cpu.samples" => "CPU samples".into(),
        "samples" => "samples".into(),
        other => other.replace(['.', '_'], " "),
    }
}
