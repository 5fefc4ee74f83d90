//! Text rendering of the MFU section of `flameox analyze gpu-diagnosis`:
//! per artifact, the FLOPs, the span and the peak they were measured
//! against, then the operators by FLOPs. Presentation only.

use flameox_recipes::gpu_diagnosis::mfu::Mfu;

use crate::gpu_breakdown::{id, ns, short};
use crate::render::{Table, thousands};

fn pct(v: Option<f64>) -> String {
    v.map_or("-".to_owned(), |v| format!("{v:.2} %"))
}

pub(crate) fn render(m: &Mfu) -> String {
    let mut out = String::new();
    if m.artifacts_total > m.artifacts.len() {
        out += &format!(
            "\nMFU of {} artifacts, lowest {} shown",
            m.artifacts_total,
            m.artifacts.len()
        );
        if let Some([lo, mid, hi]) = m.mfu_pct_spread {
            out += &format!(" (min {lo:.2} %, median {mid:.2} %, max {hi:.2} %)");
        }
        out.push('\n');
    }
    if let Some(w) = &m.without_flop {
        out += &format!(
            "\nMFU: {} of {} artifacts have no FLOP counts (first: {} on {}): {}\n",
            w.artifacts,
            m.artifacts_total,
            short(&w.artifact_id),
            w.device_name
                .as_deref()
                .filter(|n| !n.is_empty())
                .unwrap_or("an unnamed device"),
            w.caveat.as_deref().unwrap_or("no FLOP counts")
        );
    }
    for a in &m.artifacts {
        let device = a.device_name.as_deref().filter(|n| !n.is_empty());
        let device = device.unwrap_or("an unnamed device");
        if a.flop_source.is_none() {
            out += &format!(
                "\nMFU of rank {} {} on {device}: no FLOP counts over {} {}\n",
                id(a.rank),
                short(&a.artifact_id),
                a.span.name.words(),
                ns(a.span.dur_ns)
            );
        } else {
            out += &format!(
                "\nMFU of rank {} {} on {} ({} device{}): {:.3e} FLOP from {} over {} {}: {} ({:.2} TFLOP/s); {} of peak in the kernels' {}\n",
                id(a.rank),
                short(&a.artifact_id),
                device,
                a.devices,
                if a.devices == 1 { "" } else { "s" },
                a.flop,
                a.flop_source.as_deref().unwrap_or("no source"),
                a.span.name.words(),
                ns(a.span.dur_ns),
                pct(a.mfu_pct_over_span),
                a.tflop_per_s_over_span,
                pct(a.pct_of_peak_in_kernels),
                ns(a.kernel_ns)
            );
        }
        for d in &a.by_dtype {
            match &d.peak {
                Some(p) => {
                    out += &format!(
                        "  {} {:.3e} FLOP against {} {} {} TFLOP/s ({})\n",
                        d.dtype, d.flop, p.gpu, p.dtype, p.tflops, p.source
                    )
                }
                None => out += &format!("  {} {:.3e} FLOP, no peak known\n", d.dtype, d.flop),
            }
        }
        if let Some(c) = &a.caveat {
            out += &format!("  caveat: {c}\n");
        }
        if a.ops.is_empty() {
            continue;
        }
        let mut tb = Table::new(
            &[
                "operator",
                "dtype",
                "calls",
                "FLOP",
                "kernel time",
                "TFLOP/s",
                "of peak",
            ],
            &[2, 3, 4, 5, 6],
        )
        .shorten(&[0]);
        for o in &a.ops {
            tb.row(vec![
                o.name.clone(),
                o.dtype.clone().unwrap_or_default(),
                thousands(o.calls as i64),
                format!("{:.3e}", o.flop),
                ns(o.kernel_ns),
                o.tflop_per_s_in_kernels
                    .map_or("-".to_owned(), |v| format!("{v:.2}")),
                pct(o.pct_of_peak_in_kernels),
            ]);
        }
        out += &tb.render();
        if a.ops_total > a.ops.len() {
            out += &format!("  … {} operators in all\n", a.ops_total);
        }
    }
    out
}
