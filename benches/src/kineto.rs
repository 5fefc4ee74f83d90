//! A Kineto-shaped (PyTorch profiler) Chrome JSON trace generator.
//!
//! Shape: `ProfilerStep#N` annotations on the main thread; nested `cpu_op`s
//! (`aten::linear` → `aten::addmm` → `aten::mm`, …) with `External id`s;
//! `cudaLaunchKernel` runtime calls with correlation ids; kernels on several
//! GPU streams with realistic gaps; memcpy; `ac2g` flows; `[memory]`
//! instants; process and thread names. Timestamps are fractional µs, as
//! Kineto writes them.

use std::io::{self, Write};

use crate::rng::SeededRng;

/// What to generate.
#[derive(Debug, Clone)]
pub struct KinetoSpec {
    pub seed: u64,
    /// Approximate number of trace events to write.
    pub events: u64,
    pub streams: u64,
    /// Mean operators per `ProfilerStep`; 0 = the default 20..60. Real
    /// profiles record a few long steps; the default makes many short ones.
    pub ops_per_step: u64,
}

const OPS: &[(&str, &[&str], &str)] = &[
    (
        "aten::linear",
        &["aten::t", "aten::addmm"],
        "sm80_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize96x128x32",
    ),
    (
        "aten::conv2d",
        &["aten::convolution", "aten::_convolution"],
        "implicit_convolve_sgemm",
    ),
    (
        "aten::relu",
        &["aten::clamp_min"],
        "vectorized_elementwise_kernel<4, at::native::relu>",
    ),
    (
        "aten::layer_norm",
        &["aten::native_layer_norm"],
        "vectorized_layer_norm_kernel",
    ),
    ("aten::softmax", &["aten::_softmax"], "cunn_SoftMaxForward"),
    (
        "aten::add_",
        &[],
        "vectorized_elementwise_kernel<4, at::native::add>",
    ),
];

struct Writer<W: Write> {
    out: W,
    first: bool,
    written: u64,
}

impl<W: Write> Writer<W> {
    fn event(&mut self, body: &str) -> io::Result<()> {
        if !self.first {
            self.out.write_all(b",\n")?;
        }
        self.first = false;
        self.out.write_all(body.as_bytes())?;
        self.written += 1;
        Ok(())
    }
}

/// `12.345` µs text for a ns value (Kineto's fractional microseconds).
fn us(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

/// How much each event's `args` holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KinetoArgs {
    /// `External id`, correlation and input dimensions: ~180 bytes per
    /// event.
    Compact,
    /// What `record_shapes=True` and CUPTI's kernel attributes add in a
    /// real profile (input types, strides, concrete inputs, sequence
    /// numbers; registers, shared memory, occupancy): ~300 bytes per event.
    Rich,
}

/// Writes the trace of a one-process job; returns the number of events
/// written.
pub fn write_kineto<W: Write>(spec: &KinetoSpec, out: W) -> io::Result<u64> {
    write_kineto_rank(spec, 0, 1, out)
}

/// [`write_kineto`] with the given `args` shape.
pub fn write_kineto_args<W: Write>(spec: &KinetoSpec, args: KinetoArgs, out: W) -> io::Result<u64> {
    write_kineto_shaped(spec, 0, 1, args, out)
}

/// Writes rank `rank` of a `world_size`-process job: its own seed (the
/// spec's plus the rank), process id, GPU (`rank % 8`) and
/// `distributedInfo`, as each rank's profiler writes its own file.
pub fn write_kineto_rank<W: Write>(
    spec: &KinetoSpec,
    rank: u64,
    world_size: u64,
    out: W,
) -> io::Result<u64> {
    write_kineto_shaped(spec, rank, world_size, KinetoArgs::Compact, out)
}

fn write_kineto_shaped<W: Write>(
    spec: &KinetoSpec,
    rank: u64,
    world_size: u64,
    args: KinetoArgs,
    out: W,
) -> io::Result<u64> {
    let rich = args == KinetoArgs::Rich;
    let mut rng = SeededRng::new(spec.seed.wrapping_add(rank.wrapping_mul(0x9E37_79B9)));
    let mut w = Writer {
        out,
        first: true,
        written: 0,
    };
    let device = rank % 8;
    w.out.write_all(format!("{{\"schemaVersion\": 1, \"deviceProperties\": [{{\"id\": {device}, \"name\": \"Generated GPU\"}}],\n\"distributedInfo\": {{\"rank\": {rank}, \"world_size\": {world_size}}},\n\"traceEvents\": [\n").as_bytes())?;
    let pid = 4242u64 + rank;
    let tid = 4242u64;
    w.event(&format!("{{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": {pid}, \"tid\": 0, \"args\": {{\"name\": \"python\"}}}}"))?;
    w.event(&format!("{{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": {pid}, \"tid\": {tid}, \"args\": {{\"name\": \"thread {tid} (python)\"}}}}"))?;
    let streams = spec.streams.max(1);
    for s in 0..streams {
        w.event(&format!("{{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": {device}, \"tid\": {}, \"args\": {{\"name\": \"stream {}\"}}}}", 7 + s, 7 + s))?;
    }
    let mut t: u64 = 1_700_000_000_000_000; // ns
    let mut stream_free = vec![t; streams as usize];
    let mut correlation: u64 = 1;
    let mut external: u64 = 1;
    let mut step = 0u64;
    let mut allocated: u64 = 1 << 30;
    while w.written < spec.events {
        let step_start = t;
        let mut body = Vec::new();
        let ops_in_step = match spec.ops_per_step {
            0 => rng.range(20, 60),
            n => rng.range(n / 2 + 1, n + n / 2 + 2),
        };
        let mut cursor = t + 2_000;
        for _ in 0..ops_in_step {
            let (name, children, kernel) = OPS[rng.range(0, OPS.len() as u64) as usize];
            let op_start = cursor;
            let ext = external;
            external += 1;
            let mut inner = op_start + rng.range(1_000, 5_000);
            for child in children.iter() {
                let c_start = inner;
                let c_dur = rng.range(3_000, 20_000);
                body.push(format!("{{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"{child}\", \"pid\": {pid}, \"tid\": {tid}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {}, \"Input Dims\": [[64, 1024]]{}}}}}", us(c_start), us(c_dur), external, op_extra(rich, external, tid, 1)));
                external += 1;
                inner = c_start + c_dur + rng.range(500, 2_000);
            }
            // The launch, the kernel it starts, and the flow between them.
            let launch_start = inner;
            let launch_dur = rng.range(4_000, 9_000);
            let corr = correlation;
            correlation += 1;
            body.push(format!("{{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": {pid}, \"tid\": {tid}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {ext}, \"correlation\": {corr}, \"cbid\": 211}}}}", us(launch_start), us(launch_dur)));
            let s = rng.range(0, streams) as usize;
            let gap = if rng.chance(20) {
                rng.range(20_000, 200_000)
            } else {
                rng.range(1_000, 5_000)
            };
            let k_start = stream_free[s].max(launch_start + 5_000) + gap;
            let k_dur = rng.range(10_000, 400_000);
            stream_free[s] = k_start + k_dur;
            body.push(format!("{{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"{kernel}\", \"pid\": {device}, \"tid\": {}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {ext}, \"correlation\": {corr}, \"device\": {device}, \"stream\": {}, \"grid\": [128, 1, 1], \"block\": [256, 1, 1]{}}}}}", 7 + s, us(k_start), us(k_dur), 7 + s, kernel_extra(rich, k_start - launch_start)));
            body.push(format!("{{\"ph\": \"s\", \"id\": {corr}, \"pid\": {pid}, \"tid\": {tid}, \"ts\": {}, \"cat\": \"ac2g\", \"name\": \"ac2g\"}}", us(launch_start)));
            body.push(format!("{{\"ph\": \"f\", \"id\": {corr}, \"pid\": {device}, \"tid\": {}, \"ts\": {}, \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"}}", 7 + s, us(k_start)));
            let op_end = launch_start + launch_dur + rng.range(500, 3_000);
            body.push(format!("{{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"{name}\", \"pid\": {pid}, \"tid\": {tid}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {ext}, \"Input Dims\": [[64, 1024], [1024, 1024]]{}}}}}", us(op_start), us(op_end - op_start), op_extra(rich, ext, tid, 2)));
            if rng.chance(10) {
                let bytes = rng.range(1 << 10, 1 << 24);
                allocated += bytes;
                body.push(format!("{{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\", \"pid\": {pid}, \"tid\": {tid}, \"ts\": {}, \"args\": {{\"Device Type\": 1, \"Device Id\": {device}, \"Addr\": {}, \"Bytes\": {bytes}, \"Total Allocated\": {allocated}, \"Total Reserved\": {}}}}}", us(op_end), rng.next_u64() >> 20, allocated + (1 << 28)));
            }
            if rng.chance(5) {
                let m_start = stream_free[s] + rng.range(1_000, 10_000);
                let m_dur = rng.range(5_000, 50_000);
                stream_free[s] = m_start + m_dur;
                body.push(format!("{{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy DtoH (Device -> Pinned)\", \"pid\": {device}, \"tid\": {}, \"ts\": {}, \"dur\": {}, \"args\": {{\"device\": {device}, \"stream\": {}, \"bytes\": {}}}}}", 7 + s, us(m_start), us(m_dur), 7 + s, rng.range(1 << 10, 1 << 22)));
            }
            cursor = op_end + rng.range(1_000, 10_000);
        }
        let step_end = cursor + 1_000;
        w.event(&format!("{{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#{step}\", \"pid\": {pid}, \"tid\": {tid}, \"ts\": {}, \"dur\": {}, \"args\": {{}}}}", us(step_start), us(step_end - step_start)))?;
        for e in body {
            w.event(&e)?;
        }
        step += 1;
        t = step_end + rng.range(10_000, 100_000);
    }
    w.out.write_all(b"\n],\n\"traceName\": \"generated\"}\n")?;
    w.out.flush()?;
    Ok(w.written)
}

/// The args `record_shapes=True` adds to a `cpu_op` with `inputs` inputs.
fn op_extra(rich: bool, seq: u64, tid: u64, inputs: usize) -> String {
    if !rich {
        return String::new();
    }
    let types = vec!["\"c10::Half\""; inputs].join(", ");
    let strides = ["[1024, 1]"; 2][..inputs].join(", ");
    let concrete = vec!["\"\""; inputs].join(", ");
    format!(
        ", \"Record function id\": 0, \"Ev Idx\": {seq}, \"Input type\": [{types}], \"Input Strides\": [{strides}], \"Concrete Inputs\": [{concrete}], \"Sequence number\": {seq}, \"Fwd thread id\": {tid}"
    )
}

/// The attributes CUPTI gives a kernel in a real profile.
fn kernel_extra(rich: bool, queued_ns: u64) -> String {
    if !rich {
        return String::new();
    }
    format!(
        ", \"queued\": {}, \"registers per thread\": 168, \"shared memory\": 49152, \"blocks per SM\": 1.185185, \"warps per SM\": 9.481482, \"est. achieved occupancy %\": 13",
        queued_ns / 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_bytes_and_valid_json() {
        let spec = KinetoSpec {
            seed: 3,
            events: 2_000,
            streams: 2,
            ops_per_step: 0,
        };
        let mut a = Vec::new();
        let mut b = Vec::new();
        let n = write_kineto(&spec, &mut a).unwrap();
        write_kineto(&spec, &mut b).unwrap();
        assert_eq!(a, b);
        let doc: serde_json::Value = serde_json::from_slice(&a).unwrap();
        assert_eq!(doc["traceEvents"].as_array().unwrap().len() as u64, n);
        assert!(n >= 2_000);
        let other = KinetoSpec { seed: 4, ..spec };
        let mut c = Vec::new();
        write_kineto(&other, &mut c).unwrap();
        assert_ne!(a, c);
    }

    #[test]
    fn each_rank_has_its_own_events_gpu_and_distributed_info() {
        let spec = KinetoSpec {
            seed: 3,
            events: 500,
            streams: 2,
            ops_per_step: 0,
        };
        let mut one = Vec::new();
        write_kineto(&spec, &mut one).unwrap();
        let mut rank0 = Vec::new();
        write_kineto_rank(&spec, 0, 1, &mut rank0).unwrap();
        assert_eq!(one, rank0, "a one-process job is rank 0 of 1");
        let mut rank9 = Vec::new();
        write_kineto_rank(&spec, 9, 16, &mut rank9).unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&rank9).unwrap();
        assert_eq!(doc["distributedInfo"]["rank"], 9);
        assert_eq!(doc["distributedInfo"]["world_size"], 16);
        let kernels: Vec<&serde_json::Value> = doc["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["cat"] == "kernel")
            .collect();
        assert!(!kernels.is_empty());
        assert!(
            kernels
                .iter()
                .all(|k| k["pid"] == 1 && k["args"]["device"] == 1)
        );
        assert_ne!(rank0, rank9);
    }
}
