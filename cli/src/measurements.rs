//! `flameox measurements query` and the `--param NAME=VALUE` parser of
//! `flameox import`: argument parsing and rendering only (the engine's
//! `services::measurements` answers, `import_plan::check_run_labels` checks).

use std::collections::BTreeMap;

use flameox_engine::FlameoxError;
use flameox_engine::error::Result;
use flameox_engine::services::QueryContext;
use flameox_engine::services::measurements::{self, MeasurementsRequest, MeasurementsResult};

use crate::commands::{block_on, call_options, emit, open};
use crate::render::{self, Table, cut};
use crate::{GlobalOptions, MeasurementsCommand};

/// `--param n=1024 --param mode=fast` → `{mode: fast, n: 1024}`; a
/// missing `=` or a repeated name is refused.
pub(crate) fn parse_params(params: &[String]) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for text in params {
        let Some((name, value)) = text.split_once('=') else {
            return Err(FlameoxError::invalid_argument(
                "param",
                format!("{text:?} is not NAME=VALUE"),
            ));
        };
        if out.insert(name.to_owned(), value.to_owned()).is_some() {
            return Err(FlameoxError::invalid_argument(
                "param",
                format!("parameter {name} is given twice"),
            ));
        }
    }
    Ok(out)
}

/// A measured value in its unit: durations humanized from 1 µs up.
fn measured(value: f64, unit: &str) -> String {
    match unit {
        "ns" if value.abs() >= 1e3 => render::duration_ns(value.round() as i64),
        "ns" => format!("{value:.3} ns"),
        "bytes" if value >= 0.0 => render::bytes(value.round() as u64),
        _ => format!("{value} {unit}"),
    }
}

pub(crate) fn measurements_command(g: &GlobalOptions, action: MeasurementsCommand) -> Result<()> {
    let ws = open(g)?;
    let qc = QueryContext {
        ws: &ws,
        cache: None,
        options: call_options(g)?,
    };
    let MeasurementsCommand::Query {
        run,
        name_prefix,
        include_warmups,
        page,
    } = action;
    let request = MeasurementsRequest {
        run,
        name_prefix,
        include_warmups,
        limit: page.limit,
        cursor: page.cursor,
    };
    let result = block_on(measurements::query_measurements(&qc, &request))??;
    emit(g, &result, |r| render_page(r, &request))
}

fn render_page(r: &MeasurementsResult, request: &MeasurementsRequest) -> String {
    let mut t = Table::new(
        &["name", "#", "value", "warmup", "variant", "parameters"],
        &[1, 2],
    );
    for row in &r.rows {
        t.row(vec![
            cut(&row.name, 60),
            row.sample_index.to_string(),
            measured(row.value, &row.unit),
            if row.is_warmup { "yes" } else { "" }.to_owned(),
            row.variant.clone().unwrap_or_default(),
            row.parameters
                .as_ref()
                .map(|p| cut(&p.to_string(), 40))
                .unwrap_or_default(),
        ]);
    }
    let next = r.next_cursor.as_ref().map(|c| {
        let mut command = "flameox measurements query".to_owned();
        if let Some(run) = &request.run {
            command += &format!(" --run {run}");
        }
        if let Some(prefix) = &request.name_prefix {
            command += &format!(" --name-prefix '{prefix}'");
        }
        if request.include_warmups {
            command += " --include-warmups";
        }
        format!("{command} --limit {} --cursor {c}", r.returned)
    });
    t.render()
        + &render::footer(r.returned, r.total, next)
        + &format!(
            "\nevidence: {} ({})\n",
            r.evidence.status, r.evidence.reason
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_parse_and_bad_ones_are_refused() {
        let parsed = parse_params(&["n=1024".into(), "expr=a=b".into()]).unwrap();
        assert_eq!(parsed["n"], "1024");
        assert_eq!(parsed["expr"], "a=b");
        assert!(parse_params(&["n".into()]).is_err());
        assert!(parse_params(&["n=1".into(), "n=2".into()]).is_err());
        assert_eq!(measured(18.25, "ns"), "18.250 ns");
        assert_eq!(measured(2_500_000.0, "ns"), "2.50 ms");
        assert_eq!(measured(3.0, "exit_code"), "3 exit_code");
    }
}
