//! Text rendering of the MPI calls beside the collectives of `flameox
//! analyze gpu-diagnosis`. Presentation only.

use flameox_recipes::gpu_diagnosis::mpi_calls::MpiCalls;

use crate::gpu_breakdown::{id, ns};
use crate::render::{Table, thousands};

pub(crate) fn render(m: &MpiCalls) -> String {
    let mut out = format!(
        "\nMPI calls: {} ({}; {} with the device idle)\n",
        thousands(m.calls),
        ns(m.time_ns),
        ns(m.exposed_ns)
    );
    let mut tb = Table::new(
        &[
            "rank",
            "operation",
            "calls",
            "time",
            "median",
            "overlapped",
            "exposed",
            "start spread",
        ],
        &[2, 3, 4, 5, 6, 7],
    )
    .shorten(&[1]);
    for r in &m.rows {
        tb.row(vec![
            id(r.rank),
            r.operation.clone(),
            thousands(r.calls),
            ns(r.time_ns),
            ns(r.median_ns),
            ns(r.overlapped_ns),
            ns(r.exposed_ns),
            r.start_spread_median_ns.map_or("-".to_owned(), ns),
        ]);
    }
    out += &tb.render();
    if m.rows_total > m.rows.len() {
        out += &format!("  … {} rows in all\n", m.rows_total);
    }
    out
}
