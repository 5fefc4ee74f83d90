//! A seeded multi-rank PyTorch/NCCL data-parallel job: one Kineto (PyTorch
//! profiler) Chrome JSON trace per rank, `rank<r>.pt.trace.json`, all on
//! one clock, with an exactly known answer ([`nccl_job_truth`]) to "which
//! rank is slow, and how long does everyone else wait for it".
//!
//! # Files
//!
//! Each file is shaped like PyTorch 2.x output: `schemaVersion`,
//! `distributedInfo` (`backend` `nccl`, `rank`, `world_size`), one A100
//! in `deviceProperties`, `traceEvents`, `displayTimeUnit` `ms` and
//! `baseTimeNanoseconds`. Every file has the same `baseTimeNanoseconds`
//! ([`BASE_TIME_NS`]) and its `ts` (fractional µs relative to that base,
//! as Kineto writes them) are on one shared clock, so rank `r`'s event at
//! `ts` happened at the same instant as rank `q`'s event at `ts`. In this
//! module "trace ns" means `ts × 1000`.
//!
//! Rank `r`'s host thread is pid = tid = `2_900_000 + 7·r`; its GPU is
//! device 0 (kernels on pid 0; compute on stream 7, NCCL on stream 20).
//!
//! # Events of one step (rank `r`, step `k`)
//!
//! - `ProfilerStep#k` (`user_annotation`) from the step's start to its end.
//! - `enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__`
//!   (`user_annotation`): 30–50 µs, plus the injected stall on a
//!   host-slowed rank.
//! - Forward, [`LAYERS`] layers of `aten::linear` → `aten::addmm`,
//!   `aten::relu` → `aten::clamp_min`, `aten::layer_norm` →
//!   `aten::native_layer_norm`; the loss (`aten::cross_entropy_loss` →
//!   `aten::_log_softmax`); backward in reverse
//!   (`autograd::engine::evaluate_function: LogSoftmaxBackward0` /
//!   `NativeLayerNormBackward0` / `ReluBackward0` / `AddmmBackward0` with
//!   their inner `aten::` ops). All `cpu_op`, each with an `External id`;
//!   the innermost op calls `cudaLaunchKernel` (`cuda_runtime`, args
//!   `External id`, `correlation`, `cbid` 211) for each of its kernels
//!   (`kernel`, stream 7; args `External id`, `queued`, `device`,
//!   `context`, `stream`, `correlation`, `registers per thread`,
//!   `shared memory`, `blocks per SM` = grid / 108, `warps per SM`,
//!   `grid` `[x, 1, 1]`, `block` `[256, 1, 1]`,
//!   `est. achieved occupancy %`), and an `ac2g` flow (`s` on the launch,
//!   `f` with `bp: e` on the kernel, id = correlation).
//! - The gradient all-reduce: `record_param_comms` (`cpu_op`, with the
//!   collective's args) around `nccl:all_reduce` (`user_annotation`)
//!   around a `cudaLaunchKernel` of
//!   `ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)`
//!   (`kernel`, stream 20, grid `[8, 1, 1]`, block `[544, 1, 1]`, args
//!   `Collective name` `allreduce`, `In/Out msg nelems` =
//!   [`ALLREDUCE_ELEMENTS`], `Group size` R, `dtype` `Float`,
//!   `Process Group Name` `0`, `Process Group Description` `default_pg`,
//!   `Process Group Ranks` `[0, 1, …, R-1]` — for R > 64 the first 30
//!   and `...`, as PyTorch truncates them).
//! - The tail: `Optimizer.step#SGD.step` (`user_annotation`) around
//!   `aten::_foreach_add_` (`cpu_op`) launching one
//!   `multi_tensor_apply_kernel` on stream 7, then `cudaStreamSynchronize`
//!   (`cuda_runtime`, `cbid` 131) until that kernel has finished.
//!
//! # Timing model (exact; [`nccl_job_truth`] computes it)
//!
//! - Step 0 starts at [`FIRST_STEP_NS`] on every rank; step `k + 1`
//!   starts where step `k` ends, on every rank.
//! - Rank `r`'s compute kernels (`8·LAYERS + 2` per step) last their base
//!   duration × a seeded jitter in [0.970, 1.030] (per kernel, per rank,
//!   per step). With `--slow-cause compute`, every compute kernel of the
//!   slow rank lasts `F ×` that. `compute_ns` = the sum of the compute
//!   kernel durations (≈ 23.4 ms unslowed).
//! - The host launches them from one thread, each `cudaLaunchKernel`
//!   taking 4–8 µs within ops of at most ~60 µs — less than any kernel
//!   runs — so the host runs ahead and the stream is back to back: kernel
//!   `i` starts at `max(end of kernel i-1 + LAUNCH_GAP_NS, its launch's
//!   start + LAUNCH_LATENCY_NS)`; kernel 0 at its launch + latency.
//! - With `--slow-cause host`, the slow rank's DataLoader `__next__` at
//!   the start of the step lasts `round((F − 1) · compute_ns)` longer
//!   (its own unslowed compute), before anything is launched: its kernels
//!   start that much later and its GPU idles meanwhile; their durations
//!   are normal.
//! - All-reduce: rank `r`'s NCCL kernel starts at `start_r = max(
//!   compute_end_r + LAUNCH_GAP_NS, its launch + LAUNCH_LATENCY_NS)` (in
//!   practice `compute_end_r + 3 µs`). It ends on every rank at
//!   `end = max_r(start_r) + transfer`, `transfer = bytes · 2(R−1)/R /
//!   busbw` with bytes = 4 · [`ALLREDUCE_ELEMENTS`] (100 MB) and busbw =
//!   [`BUS_BANDWIDTH_BYTES_PER_S`] (80 GB/s), in whole ns (floor): 2.1875
//!   ms at R = 8. So `wait_r = max_s(start_s) − start_r`, the kernel lasts
//!   `wait_r + transfer`: the slowest rank's all-reduce is the shortest.
//! - Tail: the optimizer kernel starts at `max(end + LAUNCH_GAP_NS, its
//!   launch + LAUNCH_LATENCY_NS)` = `end + 3 µs` and lasts
//!   [`OPTIMIZER_KERNEL_NS`] on every rank; `cudaStreamSynchronize`
//!   returns [`SYNC_RETURN_NS`] after it; the step ends
//!   [`STEP_CLOSE_NS`] later. The step's end is the maximum of that over
//!   the ranks, which is the same on every rank (`end +` 862 µs).
//!
//! Same spec → same bytes.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use crate::rng::SeededRng;

/// `baseTimeNanoseconds` of every rank's file (Unix ns, whole seconds as
/// Kineto rounds it).
pub const BASE_TIME_NS: u64 = 1_711_964_646_000_000_000;
/// Trace ns (`ts × 1000`, relative to [`BASE_TIME_NS`]) where step 0
/// starts on every rank.
pub const FIRST_STEP_NS: u64 = 5_000_000_000;
/// Elements of the float32 gradient bucket each all-reduce sums.
pub const ALLREDUCE_ELEMENTS: u64 = 25_000_000;
/// Bytes of the all-reduce: 4 × [`ALLREDUCE_ELEMENTS`].
pub const ALLREDUCE_BYTES: u64 = 4 * ALLREDUCE_ELEMENTS;
/// NCCL bus bandwidth of the model (80 GB/s).
pub const BUS_BANDWIDTH_BYTES_PER_S: u64 = 80_000_000_000;
/// Gap between consecutive kernels on a stream and between a rank's last
/// compute kernel and its all-reduce.
pub const LAUNCH_GAP_NS: u64 = 3_000;
/// From a `cudaLaunchKernel`'s start to the earliest start of its kernel.
pub const LAUNCH_LATENCY_NS: u64 = 6_000;
/// The optimizer kernel, the same on every rank and step.
pub const OPTIMIZER_KERNEL_NS: u64 = 850_000;
/// `cudaStreamSynchronize` returns this long after the optimizer kernel.
pub const SYNC_RETURN_NS: u64 = 4_000;
/// The step ends this long after `cudaStreamSynchronize` returns.
pub const STEP_CLOSE_NS: u64 = 5_000;
/// Layers of the modelled network (each: linear, relu, layer norm).
pub const LAYERS: usize = 4;
/// The modelled GPU's SM count (A100).
const NUM_SMS: u64 = 108;
const COMPUTE_STREAM: u64 = 7;
const NCCL_STREAM: u64 = 20;
const DEVICE: u64 = 0;
const NCCL_KERNEL: &str =
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
const DATALOADER: &str = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__";
const DEVICE_PROPERTIES: &str = "{\"id\": 0, \"name\": \"NVIDIA A100-SXM4-80GB\", \"totalGlobalMem\": 85899345920, \"computeMajor\": 8, \"computeMinor\": 0, \"maxThreadsPerBlock\": 1024, \"maxThreadsPerMultiprocessor\": 2048, \"regsPerBlock\": 65536, \"regsPerMultiprocessor\": 65536, \"warpSize\": 32, \"sharedMemPerBlock\": 49152, \"sharedMemPerMultiprocessor\": 167936, \"numSms\": 108, \"sharedMemPerBlockOptin\": 166912}";

/// What slows the slow rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlowCause {
    /// Its GPU: every compute kernel lasts `slow_factor ×` longer.
    Compute,
    /// Its host: the DataLoader stalls `(slow_factor − 1) × compute` at the
    /// start of each step, before anything is launched.
    Host,
}

/// What to generate.
#[derive(Debug, Clone)]
pub struct NcclJobSpec {
    pub seed: u64,
    /// World size R (1..=1 << 20).
    pub ranks: u64,
    /// Profiler steps per rank (≥ 1).
    pub steps: u64,
    /// The rank made slow (< `ranks`), if any.
    pub slow_rank: Option<u64>,
    /// How much slower (finite, 1.0..=100.0).
    pub slow_factor: f64,
    pub slow_cause: SlowCause,
}

impl Default for NcclJobSpec {
    fn default() -> NcclJobSpec {
        NcclJobSpec {
            seed: 1,
            ranks: 8,
            steps: 4,
            slow_rank: None,
            slow_factor: 1.6,
            slow_cause: SlowCause::Compute,
        }
    }
}

impl NcclJobSpec {
    /// An `InvalidInput` error when a field is out of range.
    pub fn validate(&self) -> io::Result<()> {
        let bad = |m: String| Err(io::Error::new(io::ErrorKind::InvalidInput, m));
        if self.ranks == 0 || self.ranks > 1 << 20 {
            return bad(format!("ranks must be 1..=1048576, not {}", self.ranks));
        }
        if self.steps == 0 || self.steps > 100_000 {
            return bad(format!("steps must be 1..=100000, not {}", self.steps));
        }
        if let Some(k) = self.slow_rank
            && k >= self.ranks
        {
            return bad(format!("slow rank {k} is not below ranks {}", self.ranks));
        }
        if !(self.slow_factor.is_finite() && (1.0..=100.0).contains(&self.slow_factor)) {
            return bad(format!(
                "slow factor must be within 1..=100, not {}",
                self.slow_factor
            ));
        }
        Ok(())
    }

    /// The slow factor as the model uses it (out-of-range values → 1 or
    /// 100, so [`nccl_job_truth`] never fails).
    fn factor(&self) -> f64 {
        if self.slow_factor.is_finite() {
            self.slow_factor.clamp(1.0, 100.0)
        } else {
            1.0
        }
    }

    fn slowed(&self, rank: u64, cause: SlowCause) -> bool {
        self.slow_rank == Some(rank) && self.slow_cause == cause
    }
}

/// What the model says happened on one rank in one step. Times are trace
/// ns (`ts × 1000`, relative to [`BASE_TIME_NS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RankStepTruth {
    /// Start of `ProfilerStep#k` (the same on every rank).
    pub step_start_ns: u64,
    /// Duration of the DataLoader `__next__` (30–50 µs, plus the stall on
    /// a host-slowed rank).
    pub host_delay_ns: u64,
    /// Sum of the rank's compute kernel durations (GPU busy, excluding
    /// the all-reduce and the optimizer).
    pub compute_ns: u64,
    /// Start of the first compute kernel.
    pub compute_start_ns: u64,
    /// End of the last compute kernel.
    pub compute_end_ns: u64,
    /// Start of the rank's NCCL all-reduce kernel.
    pub allreduce_start_ns: u64,
    /// End of the all-reduce (the same on every rank).
    pub allreduce_end_ns: u64,
    /// `allreduce_end_ns − allreduce_start_ns`.
    pub allreduce_ns: u64,
    /// `max over ranks of allreduce_start_ns − own allreduce_start_ns`:
    /// time spent in the collective waiting for the last rank.
    pub wait_ns: u64,
    /// End of the step (the same on every rank; the next step's start).
    pub step_end_ns: u64,
}

/// The ground truth of a job.
#[derive(Debug, Clone, PartialEq)]
pub struct JobTruth {
    pub ranks: u64,
    pub steps: u64,
    pub slow_rank: Option<u64>,
    pub base_time_ns: u64,
    pub allreduce_bytes: u64,
    pub bus_bandwidth_bytes_per_s: u64,
    /// `bytes · 2(R−1)/R / busbw`, in ns.
    pub transfer_ns: u64,
    /// `per_rank[r][k]`.
    pub per_rank: Vec<Vec<RankStepTruth>>,
}

impl JobTruth {
    /// Rank `rank` in step `step`.
    pub fn get(&self, rank: u64, step: u64) -> Option<&RankStepTruth> {
        self.per_rank.get(rank as usize)?.get(step as usize)
    }
}

/// The all-reduce's transfer time at world size `ranks`, in whole ns.
pub fn transfer_ns(ranks: u64) -> u64 {
    let r = ranks.max(1) as u128;
    let ns = ALLREDUCE_BYTES as u128 * 2 * (r - 1) * 1_000_000_000
        / (r * BUS_BANDWIDTH_BYTES_PER_S as u128);
    ns as u64
}

/// The model's answer for `spec`, without writing anything.
pub fn nccl_job_truth(spec: &NcclJobSpec) -> JobTruth {
    let ranks = spec.ranks.max(1);
    let transfer = transfer_ns(ranks);
    let mut per_rank = vec![Vec::with_capacity(spec.steps as usize); ranks as usize];
    let mut t = FIRST_STEP_NS;
    let mut ids = Ids::default();
    let mut summaries = Vec::with_capacity(ranks as usize);
    for step in 0..spec.steps {
        summaries.clear();
        for rank in 0..ranks {
            summaries.push(plan_step(spec, rank, step, &mut ids).summary);
        }
        let max_start = summaries.iter().map(|s| s.nccl_start).max().unwrap_or(0);
        let end = max_start + transfer;
        let step_end = summaries
            .iter()
            .map(|s| tail(s, end).step_end)
            .max()
            .unwrap_or(end);
        for (rank, s) in summaries.iter().enumerate() {
            per_rank[rank].push(RankStepTruth {
                step_start_ns: t,
                host_delay_ns: s.host_delay,
                compute_ns: s.compute_ns,
                compute_start_ns: t + s.compute_start,
                compute_end_ns: t + s.compute_end,
                allreduce_start_ns: t + s.nccl_start,
                allreduce_end_ns: t + end,
                allreduce_ns: end - s.nccl_start,
                wait_ns: max_start - s.nccl_start,
                step_end_ns: t + step_end,
            });
        }
        t += step_end;
    }
    JobTruth {
        ranks,
        steps: spec.steps,
        slow_rank: spec.slow_rank.filter(|&k| k < ranks),
        base_time_ns: BASE_TIME_NS,
        allreduce_bytes: ALLREDUCE_BYTES,
        bus_bandwidth_bytes_per_s: BUS_BANDWIDTH_BYTES_PER_S,
        transfer_ns: transfer,
        per_rank,
    }
}

/// What [`write_nccl_job`] wrote.
#[derive(Debug, Clone)]
pub struct NcclJobOutput {
    pub files: u64,
    pub events: u64,
    pub bytes: u64,
    pub truth: JobTruth,
}

/// Writes `dir/rank<r>.pt.trace.json` for every rank (`dir` created if
/// missing).
pub fn write_nccl_job(spec: &NcclJobSpec, dir: &Path) -> io::Result<NcclJobOutput> {
    spec.validate()?;
    std::fs::create_dir_all(dir)?;
    let truth = nccl_job_truth(spec);
    let mut events = 0;
    let mut bytes = 0;
    for rank in 0..spec.ranks {
        let path = dir.join(format!("rank{rank}.pt.trace.json"));
        let file = File::create(&path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        let mut out = Counting {
            inner: BufWriter::with_capacity(1 << 18, file),
            bytes: 0,
        };
        events += write_nccl_rank(spec, &truth, rank, &mut out)?;
        out.flush()?;
        bytes += out.bytes;
    }
    Ok(NcclJobOutput {
        files: spec.ranks,
        events,
        bytes,
        truth,
    })
}

/// Writes rank `rank`'s file of the job whose truth is `truth` (from
/// [`nccl_job_truth`] of the same spec); returns the number of events.
pub fn write_nccl_rank<W: Write>(
    spec: &NcclJobSpec,
    truth: &JobTruth,
    rank: u64,
    out: W,
) -> io::Result<u64> {
    spec.validate()?;
    if truth.ranks != spec.ranks || truth.steps != spec.steps || rank >= spec.ranks {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "truth does not belong to this spec and rank",
        ));
    }
    let mut w = Events {
        out,
        first: true,
        written: 0,
    };
    let ranks = spec.ranks;
    let pid = 2_900_000 + 7 * rank;
    let tid = pid;
    w.out.write_all(format!(
        "{{\"schemaVersion\": 1, \"distributedInfo\": {{\"backend\": \"nccl\", \"rank\": {rank}, \"world_size\": {ranks}}}, \"deviceProperties\": [{DEVICE_PROPERTIES}],\n\"traceEvents\": [\n"
    ).as_bytes())?;
    w.event(&format!("{{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": {pid}, \"tid\": 0, \"args\": {{\"name\": \"python3.10\"}}}}"))?;
    w.event(&format!("{{\"ph\": \"M\", \"name\": \"process_labels\", \"pid\": {pid}, \"tid\": 0, \"args\": {{\"labels\": \"CPU\"}}}}"))?;
    w.event(&format!("{{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": {DEVICE}, \"tid\": 0, \"args\": {{\"name\": \"python3.10\"}}}}"))?;
    w.event(&format!("{{\"ph\": \"M\", \"name\": \"process_labels\", \"pid\": {DEVICE}, \"tid\": 0, \"args\": {{\"labels\": \"GPU {DEVICE}\"}}}}"))?;
    w.event(&format!("{{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": {pid}, \"tid\": {tid}, \"args\": {{\"name\": \"thread {tid} (pt_main_thread)\"}}}}"))?;
    for stream in [COMPUTE_STREAM, NCCL_STREAM] {
        w.event(&format!("{{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": {DEVICE}, \"tid\": {stream}, \"args\": {{\"name\": \"stream {stream} \"}}}}"))?;
    }
    let comms = comms_args(ranks);
    let host = Host { pid, tid };
    let mut ids = Ids::default();
    for step in 0..spec.steps {
        let Some(truth_step) = truth.get(rank, step) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "truth has too few steps",
            ));
        };
        let t = truth_step.step_start_ns;
        let end = truth_step.allreduce_end_ns - t;
        let step_end = truth_step.step_end_ns - t;
        let plan = plan_step(spec, rank, step, &mut ids);
        let s = &plan.summary;
        w.event(&host.x(
            "user_annotation",
            &format!("ProfilerStep#{step}"),
            t,
            t + step_end,
            &ext_args(plan.step_ext),
        ))?;
        for ev in &plan.events {
            match *ev {
                Ev::Host {
                    cat,
                    name,
                    start,
                    end,
                    ext,
                } => {
                    let args = if name == "record_param_comms" {
                        format!("{{\"External id\": {ext}, {comms}}}")
                    } else {
                        ext_args(ext)
                    };
                    w.event(&host.x(cat, name, t + start, t + end, &args))?;
                }
                Ev::Launch {
                    start,
                    end,
                    ext,
                    corr,
                } => {
                    w.event(&host.launch(t + start, t + end, ext, corr))?;
                    w.event(&host.flow_start(t + start, corr))?;
                }
                Ev::Kernel {
                    kernel,
                    start,
                    end,
                    ext,
                    corr,
                } => {
                    w.event(&compute_kernel(kernel, t + start, t + end, ext, corr))?;
                    w.event(&flow_end(COMPUTE_STREAM, t + start, corr))?;
                }
            }
        }
        // The all-reduce kernel: it ends on every rank together.
        let (nccl_ext, nccl_corr) = (s.nccl_ext, s.nccl_corr);
        w.event(&format!(
            "{{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"{NCCL_KERNEL}\", \"pid\": {DEVICE}, \"tid\": {NCCL_STREAM}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {nccl_ext}, \"queued\": 0, \"device\": {DEVICE}, \"context\": 1, \"stream\": {NCCL_STREAM}, \"correlation\": {nccl_corr}, \"registers per thread\": 96, \"shared memory\": 87568, \"blocks per SM\": {}, \"warps per SM\": {}, \"grid\": [8, 1, 1], \"block\": [544, 1, 1], \"est. achieved occupancy %\": 0, {comms}}}}}",
            us(t + s.nccl_start),
            us(end - s.nccl_start),
            per_sm(8, 1),
            per_sm(8, 544 / 32),
        ))?;
        w.event(&flow_end(NCCL_STREAM, t + s.nccl_start, nccl_corr))?;
        // The optimizer and the synchronisation that ends the step.
        let tl = tail(s, end);
        let o = &plan.tail;
        w.event(&host.x(
            "user_annotation",
            "Optimizer.step#SGD.step",
            t + o.step_start,
            t + o.step_end,
            &ext_args(o.step_ext),
        ))?;
        w.event(&host.x(
            "cpu_op",
            "aten::_foreach_add_",
            t + o.op_start,
            t + o.op_end,
            &ext_args(o.op_ext),
        ))?;
        w.event(&host.launch(
            t + o.launch_start,
            t + o.launch_end,
            o.op_ext,
            o.launch_corr,
        ))?;
        w.event(&host.flow_start(t + o.launch_start, o.launch_corr))?;
        w.event(&compute_kernel(
            &OPTIMIZER,
            t + tl.kernel_start,
            t + tl.kernel_start + OPTIMIZER_KERNEL_NS,
            o.op_ext,
            o.launch_corr,
        ))?;
        w.event(&flow_end(
            COMPUTE_STREAM,
            t + tl.kernel_start,
            o.launch_corr,
        ))?;
        w.event(&format!(
            "{{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaStreamSynchronize\", \"pid\": {pid}, \"tid\": {tid}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {}, \"correlation\": {}, \"cbid\": 131}}}}",
            us(t + o.sync_start),
            us(tl.sync_end - o.sync_start),
            plan.step_ext,
            o.sync_corr,
        ))?;
    }
    w.out.write_all(
        format!("\n],\n\"displayTimeUnit\": \"ms\",\n\"baseTimeNanoseconds\": {BASE_TIME_NS}}}\n")
            .as_bytes(),
    )?;
    w.out.flush()?;
    Ok(w.written)
}

/// A compute kernel's shape.
struct Kernel {
    name: &'static str,
    base_ns: u64,
    grid: u64,
    registers: u64,
    shared_memory: u64,
}

/// A host operator: `chain` nested `cpu_op`s (outermost first); each
/// kernel is launched from the innermost one, inside its own leaf
/// `cpu_op` when the leaf name is not empty.
struct Op {
    chain: &'static [&'static str],
    kernels: &'static [(&'static str, &'static Kernel)],
}

static GEMM_FWD: Kernel = Kernel {
    name: "ampere_sgemm_128x64_tn",
    base_ns: 1_600_000,
    grid: 1536,
    registers: 122,
    shared_memory: 49152,
};
static GEMM_DGRAD: Kernel = Kernel {
    name: "ampere_sgemm_128x64_nn",
    base_ns: 1_600_000,
    grid: 1536,
    registers: 122,
    shared_memory: 49152,
};
static GEMM_WGRAD: Kernel = Kernel {
    name: "ampere_sgemm_128x64_nt",
    base_ns: 1_550_000,
    grid: 1024,
    registers: 122,
    shared_memory: 49152,
};
static RELU: Kernel = Kernel {
    name: "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::clamp_min_scalar_kernel_impl(at::TensorIteratorBase&, c10::Scalar)::{lambda()#1}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, at::native::(anonymous namespace)::clamp_min_scalar_kernel_impl(at::TensorIteratorBase&, c10::Scalar)::{lambda()#1}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>)",
    base_ns: 180_000,
    grid: 24576,
    registers: 28,
    shared_memory: 0,
};
static RELU_BWD: Kernel = Kernel {
    name: "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::threshold_kernel_impl<float>(at::TensorIteratorBase&, float, float)::{lambda(float, float)#1}, at::detail::Array<char*, 3> >(int, at::native::(anonymous namespace)::threshold_kernel_impl<float>(at::TensorIteratorBase&, float, float)::{lambda(float, float)#1}, at::detail::Array<char*, 3>)",
    base_ns: 200_000,
    grid: 24576,
    registers: 30,
    shared_memory: 0,
};
static LAYER_NORM: Kernel = Kernel {
    name: "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, float const*, float const*, float const*, float*, float*, float*)",
    base_ns: 220_000,
    grid: 8192,
    registers: 36,
    shared_memory: 64,
};
static LAYER_NORM_BWD_INPUT: Kernel = Kernel {
    name: "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<float, float>(float const*, float const*, float const*, float const*, float const*, float*, int)",
    base_ns: 260_000,
    grid: 8192,
    registers: 40,
    shared_memory: 1024,
};
static LAYER_NORM_BWD_PARAMS: Kernel = Kernel {
    name: "void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel_32x32<float, float>(long, long, float const*, float const*, float const*, float const*, float*, float*)",
    base_ns: 140_000,
    grid: 32,
    registers: 64,
    shared_memory: 8448,
};
static SOFTMAX_FWD: Kernel = Kernel {
    name: "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, int)",
    base_ns: 190_000,
    grid: 8192,
    registers: 38,
    shared_memory: 0,
};
static SOFTMAX_BWD: Kernel = Kernel {
    name: "void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4, float, float, float, at::native::(anonymous namespace)::LogSoftMaxBackwardEpilogue>(float*, float const*, float const*, long)",
    base_ns: 210_000,
    grid: 8192,
    registers: 40,
    shared_memory: 0,
};
static OPTIMIZER: Kernel = Kernel {
    name: "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::BinaryOpListAlphaFunctor<float, 2, 2, 0>, std::plus<float>, float>(at::native::(anonymous namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::BinaryOpListAlphaFunctor<float, 2, 2, 0>, std::plus<float>, float)",
    base_ns: OPTIMIZER_KERNEL_NS,
    grid: 3360,
    registers: 32,
    shared_memory: 0,
};

static LINEAR: Op = Op {
    chain: &["aten::linear"],
    kernels: &[("aten::addmm", &GEMM_FWD)],
};
static RELU_OP: Op = Op {
    chain: &["aten::relu"],
    kernels: &[("aten::clamp_min", &RELU)],
};
static LAYER_NORM_OP: Op = Op {
    chain: &["aten::layer_norm"],
    kernels: &[("aten::native_layer_norm", &LAYER_NORM)],
};
static LOSS: Op = Op {
    chain: &["aten::cross_entropy_loss"],
    kernels: &[("aten::_log_softmax", &SOFTMAX_FWD)],
};
static LOSS_BWD: Op = Op {
    chain: &[
        "autograd::engine::evaluate_function: LogSoftmaxBackward0",
        "LogSoftmaxBackward0",
    ],
    kernels: &[("aten::_log_softmax_backward_data", &SOFTMAX_BWD)],
};
static LAYER_NORM_BWD: Op = Op {
    chain: &[
        "autograd::engine::evaluate_function: NativeLayerNormBackward0",
        "NativeLayerNormBackward0",
        "aten::native_layer_norm_backward",
    ],
    kernels: &[("", &LAYER_NORM_BWD_INPUT), ("", &LAYER_NORM_BWD_PARAMS)],
};
static RELU_BWD_OP: Op = Op {
    chain: &[
        "autograd::engine::evaluate_function: ReluBackward0",
        "ReluBackward0",
    ],
    kernels: &[("aten::threshold_backward", &RELU_BWD)],
};
static ADDMM_BWD: Op = Op {
    chain: &[
        "autograd::engine::evaluate_function: AddmmBackward0",
        "AddmmBackward0",
    ],
    kernels: &[("aten::mm", &GEMM_DGRAD), ("aten::mm", &GEMM_WGRAD)],
};

/// The step's operators in host order: forward, loss, backward.
fn step_ops() -> impl Iterator<Item = &'static Op> {
    let forward = (0..LAYERS).flat_map(|_| [&LINEAR, &RELU_OP, &LAYER_NORM_OP]);
    let backward = (0..LAYERS).flat_map(|_| [&LAYER_NORM_BWD, &RELU_BWD_OP, &ADDMM_BWD]);
    forward.chain([&LOSS, &LOSS_BWD]).chain(backward)
}

/// External and correlation id counters of one rank's file.
#[derive(Default)]
struct Ids {
    ext: u64,
    corr: u64,
}

impl Ids {
    fn ext(&mut self) -> u64 {
        self.ext += 1;
        self.ext
    }
    fn corr(&mut self) -> u64 {
        self.corr += 1;
        self.corr
    }
}

/// One event of a step whose time does not depend on other ranks; times
/// relative to the step's start.
enum Ev {
    Host {
        cat: &'static str,
        name: &'static str,
        start: u64,
        end: u64,
        ext: u64,
    },
    Launch {
        start: u64,
        end: u64,
        ext: u64,
        corr: u64,
    },
    Kernel {
        kernel: &'static Kernel,
        start: u64,
        end: u64,
        ext: u64,
        corr: u64,
    },
}

/// The numbers of a rank's step that the job-wide model needs (relative
/// to the step's start).
struct Summary {
    host_delay: u64,
    compute_ns: u64,
    compute_start: u64,
    compute_end: u64,
    nccl_start: u64,
    nccl_ext: u64,
    nccl_corr: u64,
    optimizer_launch: u64,
    sync_start: u64,
}

/// The host side of the step's tail (relative to the step's start).
struct TailHost {
    step_start: u64,
    step_end: u64,
    step_ext: u64,
    op_start: u64,
    op_end: u64,
    op_ext: u64,
    launch_start: u64,
    launch_end: u64,
    launch_corr: u64,
    sync_start: u64,
    sync_corr: u64,
}

struct Plan {
    step_ext: u64,
    events: Vec<Ev>,
    summary: Summary,
    tail: TailHost,
}

/// The tail's times once the all-reduce's end (`end`, relative to the
/// step's start) is known.
struct Tail {
    kernel_start: u64,
    sync_end: u64,
    step_end: u64,
}

fn tail(s: &Summary, end: u64) -> Tail {
    let kernel_start = (end + LAUNCH_GAP_NS).max(s.optimizer_launch + LAUNCH_LATENCY_NS);
    let sync_end = s.sync_start.max(kernel_start + OPTIMIZER_KERNEL_NS) + SYNC_RETURN_NS;
    Tail {
        kernel_start,
        sync_end,
        step_end: sync_end + STEP_CLOSE_NS,
    }
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Rank `rank`'s step `step`, from its own seed; the same for the truth
/// and the writer.
fn plan_step(spec: &NcclJobSpec, rank: u64, step: u64, ids: &mut Ids) -> Plan {
    let mut rng = SeededRng::new(splitmix(spec.seed ^ splitmix(rank ^ splitmix(step))));
    let factor = spec.factor();
    // Kernel durations first: the host stall depends on their sum.
    let compute_slow = spec.slowed(rank, SlowCause::Compute);
    let mut durations = Vec::with_capacity(8 * LAYERS + 2);
    for op in step_ops() {
        for (_, k) in op.kernels {
            let jittered = k.base_ns * rng.range(970, 1_031) / 1_000;
            durations.push(if compute_slow {
                (jittered as f64 * factor).round() as u64
            } else {
                jittered
            });
        }
    }
    let compute_ns: u64 = durations.iter().sum();
    let stall = if spec.slowed(rank, SlowCause::Host) {
        ((factor - 1.0) * compute_ns as f64).round() as u64
    } else {
        0
    };

    let step_ext = ids.ext();
    let mut events = Vec::with_capacity(4 * durations.len() + 8);
    let dl_start = rng.range(3_000, 6_000);
    let host_delay = rng.range(30_000, 50_000) + stall;
    events.push(Ev::Host {
        cat: "user_annotation",
        name: DATALOADER,
        start: dl_start,
        end: dl_start + host_delay,
        ext: ids.ext(),
    });
    let mut h = dl_start + host_delay + rng.range(5_000, 15_000);
    let mut stream_free: Option<u64> = None;
    let mut compute_start = 0;
    let mut next_kernel = durations.iter();
    let mut launch = |launch_start: u64,
                      rng: &mut SeededRng,
                      ext: u64,
                      corr: u64,
                      kernel: &'static Kernel,
                      dur: u64,
                      events: &mut Vec<Ev>| {
        let launch_end = launch_start + rng.range(4_000, 8_000);
        let start = match stream_free {
            None => {
                compute_start = launch_start + LAUNCH_LATENCY_NS;
                compute_start
            }
            Some(free) => (free + LAUNCH_GAP_NS).max(launch_start + LAUNCH_LATENCY_NS),
        };
        stream_free = Some(start + dur);
        events.push(Ev::Launch {
            start: launch_start,
            end: launch_end,
            ext,
            corr,
        });
        events.push(Ev::Kernel {
            kernel,
            start,
            end: start + dur,
            ext,
            corr,
        });
        launch_end
    };
    for op in step_ops() {
        // Open the chain, outermost first.
        let mut opened = Vec::with_capacity(op.chain.len());
        for &name in op.chain {
            opened.push((name, h, ids.ext()));
            h += rng.range(2_000, 5_000);
        }
        let inner_ext = opened.last().map_or(0, |o| o.2);
        for &(leaf, kernel) in op.kernels {
            let dur = next_kernel.next().copied().unwrap_or(kernel.base_ns);
            if leaf.is_empty() {
                h = launch(h, &mut rng, inner_ext, ids.corr(), kernel, dur, &mut events);
            } else {
                let leaf_start = h;
                let leaf_ext = ids.ext();
                h += rng.range(2_000, 4_000);
                h = launch(h, &mut rng, leaf_ext, ids.corr(), kernel, dur, &mut events);
                h += rng.range(1_000, 3_000);
                events.push(Ev::Host {
                    cat: "cpu_op",
                    name: leaf,
                    start: leaf_start,
                    end: h,
                    ext: leaf_ext,
                });
            }
            h += rng.range(1_000, 2_000);
        }
        for (name, start, ext) in opened.into_iter().rev() {
            h += rng.range(1_000, 3_000);
            events.push(Ev::Host {
                cat: "cpu_op",
                name,
                start,
                end: h,
                ext,
            });
        }
        h += rng.range(3_000, 8_000);
    }
    let compute_end = stream_free.unwrap_or(compute_start);

    // The gradient all-reduce: record_param_comms > nccl:all_reduce > launch.
    let rpc_start = h;
    let rpc_ext = ids.ext();
    let ann_start = rpc_start + rng.range(5_000, 10_000);
    let nccl_ext = ids.ext();
    let nccl_corr = ids.corr();
    let nccl_launch = ann_start + rng.range(3_000, 6_000);
    let nccl_launch_end = nccl_launch + rng.range(5_000, 9_000);
    let ann_end = nccl_launch_end + rng.range(2_000, 4_000);
    let rpc_end = ann_end + rng.range(2_000, 5_000);
    events.push(Ev::Launch {
        start: nccl_launch,
        end: nccl_launch_end,
        ext: nccl_ext,
        corr: nccl_corr,
    });
    events.push(Ev::Host {
        cat: "user_annotation",
        name: "nccl:all_reduce",
        start: ann_start,
        end: ann_end,
        ext: nccl_ext,
    });
    events.push(Ev::Host {
        cat: "cpu_op",
        name: "record_param_comms",
        start: rpc_start,
        end: rpc_end,
        ext: rpc_ext,
    });
    let nccl_start = (compute_end + LAUNCH_GAP_NS).max(nccl_launch + LAUNCH_LATENCY_NS);

    // The tail's host side.
    let opt_start = rpc_end + rng.range(5_000, 15_000);
    let opt_step_ext = ids.ext();
    let op_start = opt_start + rng.range(3_000, 6_000);
    let op_ext = ids.ext();
    let launch_start = op_start + rng.range(2_000, 5_000);
    let launch_corr = ids.corr();
    let launch_end = launch_start + rng.range(4_000, 8_000);
    let op_end = launch_end + rng.range(1_000, 3_000);
    let opt_end = op_end + rng.range(2_000, 5_000);
    let sync_start = opt_end + rng.range(3_000, 6_000);
    let sync_corr = ids.corr();
    Plan {
        step_ext,
        events,
        summary: Summary {
            host_delay,
            compute_ns,
            compute_start,
            compute_end,
            nccl_start,
            nccl_ext,
            nccl_corr,
            optimizer_launch: launch_start,
            sync_start,
        },
        tail: TailHost {
            step_start: opt_start,
            step_end: opt_end,
            step_ext: opt_step_ext,
            op_start,
            op_end,
            op_ext,
            launch_start,
            launch_end,
            launch_corr,
            sync_start,
            sync_corr,
        },
    }
}

/// The collective's args (PyTorch's NCCL metadata), without braces.
fn comms_args(ranks: u64) -> String {
    let listed = if ranks > 64 { 30 } else { ranks };
    let mut list = (0..listed)
        .map(|r| r.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    if listed < ranks {
        list.push_str(", ...");
    }
    format!(
        "\"Collective name\": \"allreduce\", \"In msg nelems\": {ALLREDUCE_ELEMENTS}, \"Out msg nelems\": {ALLREDUCE_ELEMENTS}, \"Group size\": {ranks}, \"dtype\": \"Float\", \"In split size\": \"[]\", \"Out split size\": \"[]\", \"Process Group Name\": \"0\", \"Process Group Description\": \"default_pg\", \"Process Group Ranks\": \"[{list}]\""
    )
}

fn ext_args(ext: u64) -> String {
    format!("{{\"External id\": {ext}}}")
}

/// `count × grid / 108` with six decimals, as CUPTI's per-SM figures.
fn per_sm(grid: u64, count: u64) -> String {
    format!("{:.6}", (grid * count) as f64 / NUM_SMS as f64)
}

/// CUPTI-style estimated occupancy (%) of a 256-thread-block kernel.
fn occupancy(k: &Kernel) -> u64 {
    let threads = 256;
    let by_threads = 2048 / threads;
    let by_registers = 65_536 / (k.registers * threads).max(1);
    let by_shared = 167_936 / k.shared_memory.max(1);
    let resident = by_threads.min(by_registers).min(by_shared).min(32);
    let active = resident.min(k.grid.div_ceil(NUM_SMS));
    (active * (threads / 32) * 100 / 64).min(100)
}

fn compute_kernel(k: &Kernel, start: u64, end: u64, ext: u64, corr: u64) -> String {
    format!(
        "{{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"{}\", \"pid\": {DEVICE}, \"tid\": {COMPUTE_STREAM}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {ext}, \"queued\": 0, \"device\": {DEVICE}, \"context\": 1, \"stream\": {COMPUTE_STREAM}, \"correlation\": {corr}, \"registers per thread\": {}, \"shared memory\": {}, \"blocks per SM\": {}, \"warps per SM\": {}, \"grid\": [{}, 1, 1], \"block\": [256, 1, 1], \"est. achieved occupancy %\": {}}}}}",
        k.name,
        us(start),
        us(end - start),
        k.registers,
        k.shared_memory,
        per_sm(k.grid, 1),
        per_sm(k.grid, 256 / 32),
        k.grid,
        occupancy(k),
    )
}

fn flow_end(stream: u64, ts: u64, corr: u64) -> String {
    format!(
        "{{\"ph\": \"f\", \"id\": {corr}, \"pid\": {DEVICE}, \"tid\": {stream}, \"ts\": {}, \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"}}",
        us(ts)
    )
}

/// The rank's host thread.
struct Host {
    pid: u64,
    tid: u64,
}

impl Host {
    fn x(&self, cat: &str, name: &str, start: u64, end: u64, args: &str) -> String {
        format!(
            "{{\"ph\": \"X\", \"cat\": \"{cat}\", \"name\": \"{name}\", \"pid\": {}, \"tid\": {}, \"ts\": {}, \"dur\": {}, \"args\": {args}}}",
            self.pid,
            self.tid,
            us(start),
            us(end - start)
        )
    }

    fn launch(&self, start: u64, end: u64, ext: u64, corr: u64) -> String {
        self.x(
            "cuda_runtime",
            "cudaLaunchKernel",
            start,
            end,
            &format!("{{\"External id\": {ext}, \"correlation\": {corr}, \"cbid\": 211}}"),
        )
    }

    fn flow_start(&self, ts: u64, corr: u64) -> String {
        format!(
            "{{\"ph\": \"s\", \"id\": {corr}, \"pid\": {}, \"tid\": {}, \"ts\": {}, \"cat\": \"ac2g\", \"name\": \"ac2g\"}}",
            self.pid,
            self.tid,
            us(ts)
        )
    }
}

/// `12.345` µs text for a ns value (Kineto's fractional microseconds).
fn us(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

struct Events<W: Write> {
    out: W,
    first: bool,
    written: u64,
}

impl<W: Write> Events<W> {
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

/// Counts the bytes written through it.
struct Counting<W: Write> {
    inner: W,
    bytes: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn spec(ranks: u64, slow: Option<u64>, cause: SlowCause) -> NcclJobSpec {
        NcclJobSpec {
            seed: 7,
            ranks,
            steps: 3,
            slow_rank: slow,
            slow_factor: 1.6,
            slow_cause: cause,
        }
    }

    fn rank_bytes(spec: &NcclJobSpec, rank: u64) -> Vec<u8> {
        let truth = nccl_job_truth(spec);
        let mut out = Vec::new();
        write_nccl_rank(spec, &truth, rank, &mut out).unwrap();
        out
    }

    /// `ts` (or `ts + dur`) of an event in trace ns.
    fn ns(e: &Value, key: &str) -> u64 {
        (e[key].as_f64().unwrap() * 1000.0).round() as u64
    }

    fn events(doc: &Value) -> &Vec<Value> {
        doc["traceEvents"].as_array().unwrap()
    }

    fn nccl_kernels(doc: &Value) -> Vec<&Value> {
        events(doc)
            .iter()
            .filter(|e| e["cat"] == "kernel" && e["name"] == NCCL_KERNEL)
            .collect()
    }

    /// Checks the model's invariants on a slowed job's truth.
    fn check_slowed(truth: &JobTruth, slow: u64, factor: f64) {
        for step in 0..truth.steps {
            let k = truth.get(slow, step).unwrap();
            assert_eq!(k.wait_ns, 0, "the slow rank is the last to arrive");
            assert_eq!(k.allreduce_ns, truth.transfer_ns);
            for rank in 0..truth.ranks {
                let s = truth.get(rank, step).unwrap();
                assert_eq!(s.allreduce_end_ns, k.allreduce_end_ns, "ends coincide");
                assert_eq!(s.step_start_ns, k.step_start_ns, "starts coincide");
                assert_eq!(s.step_end_ns, k.step_end_ns);
                assert_eq!(s.allreduce_ns, s.wait_ns + truth.transfer_ns);
                assert_eq!(s.allreduce_start_ns, s.compute_end_ns + LAUNCH_GAP_NS);
                if rank != slow {
                    assert!(s.allreduce_ns > k.allreduce_ns, "rank {rank} step {step}");
                    let floor = (factor - 1.0) * s.compute_ns as f64 * 0.9;
                    assert!(
                        s.wait_ns as f64 >= floor,
                        "rank {rank} step {step}: wait {} < {floor}",
                        s.wait_ns
                    );
                }
            }
            if step + 1 < truth.steps {
                let next = truth.get(slow, step + 1).unwrap();
                assert_eq!(next.step_start_ns, k.step_end_ns);
            }
        }
    }

    #[test]
    fn same_seed_same_bytes_other_seed_other_bytes() {
        let s = spec(4, Some(1), SlowCause::Compute);
        assert_eq!(rank_bytes(&s, 2), rank_bytes(&s, 2));
        assert_ne!(rank_bytes(&s, 2), rank_bytes(&s, 3));
        let other = NcclJobSpec {
            seed: 8,
            ..s.clone()
        };
        assert_ne!(rank_bytes(&s, 2), rank_bytes(&other, 2));
        assert_eq!(nccl_job_truth(&s), nccl_job_truth(&s));
    }

    #[test]
    fn job_files_parse_and_agree_with_the_truth() {
        let dir = tempfile::tempdir().unwrap();
        let s = spec(8, Some(5), SlowCause::Compute);
        let job = write_nccl_job(&s, dir.path()).unwrap();
        assert_eq!(job.files, 8);
        assert_eq!(job.truth, nccl_job_truth(&s));
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names.len(), 8);
        let mut events_total = 0;
        let mut ends = Vec::new();
        for rank in 0..8u64 {
            let bytes =
                std::fs::read(dir.path().join(format!("rank{rank}.pt.trace.json"))).unwrap();
            let doc: Value = serde_json::from_slice(&bytes).unwrap();
            assert_eq!(doc["schemaVersion"], 1);
            assert_eq!(doc["distributedInfo"]["backend"], "nccl");
            assert_eq!(doc["distributedInfo"]["rank"], rank);
            assert_eq!(doc["distributedInfo"]["world_size"], 8);
            assert_eq!(doc["deviceProperties"][0]["numSms"], 108);
            assert_eq!(doc["displayTimeUnit"], "ms");
            assert_eq!(doc["baseTimeNanoseconds"], BASE_TIME_NS);
            let evs = events(&doc);
            events_total += evs.len() as u64;
            let steps: Vec<&Value> = evs
                .iter()
                .filter(|e| e["name"].as_str().unwrap().starts_with("ProfilerStep#"))
                .collect();
            assert_eq!(steps.len(), 3);
            // Every launch has its kernel and both ends of its flow.
            let corr = |pred: &dyn Fn(&Value) -> bool| {
                let mut v: Vec<u64> = evs
                    .iter()
                    .filter(|e| pred(e))
                    .map(|e| {
                        e["args"]["correlation"]
                            .as_u64()
                            .or(e["id"].as_u64())
                            .unwrap()
                    })
                    .collect();
                v.sort();
                v
            };
            let launches = corr(&|e| e["name"] == "cudaLaunchKernel");
            assert_eq!(launches, corr(&|e| e["cat"] == "kernel"));
            assert_eq!(launches, corr(&|e| e["ph"] == "s"));
            assert_eq!(launches, corr(&|e| e["ph"] == "f"));
            assert!(evs.len() < 3 * 300, "a few hundred events per step");
            let nccl = nccl_kernels(&doc);
            assert_eq!(nccl.len(), 3);
            for (step, k) in nccl.iter().enumerate() {
                let t = job.truth.get(rank, step as u64).unwrap();
                assert_eq!(k["tid"], 20);
                assert_eq!(k["args"]["Group size"], 8);
                assert_eq!(k["args"]["Process Group Ranks"], "[0, 1, 2, 3, 4, 5, 6, 7]");
                assert_eq!(ns(k, "ts"), t.allreduce_start_ns);
                assert_eq!(ns(k, "dur"), t.allreduce_ns);
                assert_eq!(ns(steps[step], "ts"), t.step_start_ns);
                ends.push((step, t.allreduce_end_ns));
            }
            // Compute kernels: the truth's sum, first start and last end.
            let mut compute: Vec<&Value> = evs
                .iter()
                .filter(|e| e["cat"] == "kernel" && e["tid"] == 7)
                .collect();
            compute.sort_by_key(|e| ns(e, "ts"));
            let t0 = job.truth.get(rank, 0).unwrap();
            let step0: Vec<&&Value> = compute
                .iter()
                .filter(|e| ns(e, "ts") < t0.allreduce_start_ns)
                .collect();
            assert_eq!(step0.len(), 8 * LAYERS + 2);
            assert_eq!(ns(step0[0], "ts"), t0.compute_start_ns);
            let last = step0[step0.len() - 1];
            assert_eq!(ns(last, "ts") + ns(last, "dur"), t0.compute_end_ns);
            let sum: u64 = step0.iter().map(|e| ns(e, "dur")).sum();
            assert_eq!(sum, t0.compute_ns);
        }
        assert_eq!(events_total, job.events);
        for step in 0..3 {
            let e: Vec<u64> = ends.iter().filter(|x| x.0 == step).map(|x| x.1).collect();
            assert!(e.iter().all(|&x| x == e[0]), "all-reduce ends coincide");
        }
        check_slowed(&job.truth, 5, 1.6);
    }

    #[test]
    fn compute_slowed_rank_has_the_shortest_all_reduce() {
        let s = spec(16, Some(11), SlowCause::Compute);
        let truth = nccl_job_truth(&s);
        check_slowed(&truth, 11, 1.6);
        let k = truth.get(11, 0).unwrap();
        let other = truth.get(0, 0).unwrap();
        assert!(k.compute_ns as f64 > 1.5 * other.compute_ns as f64);
        // The slow rank's file says so too.
        let doc: Value = serde_json::from_slice(&rank_bytes(&s, 11)).unwrap();
        let mine = ns(nccl_kernels(&doc)[0], "dur");
        let doc0: Value = serde_json::from_slice(&rank_bytes(&s, 0)).unwrap();
        assert!(mine < ns(nccl_kernels(&doc0)[0], "dur"));
    }

    #[test]
    fn host_slowed_rank_starts_late_with_normal_kernels() {
        let s = NcclJobSpec {
            slow_factor: 2.0,
            ..spec(8, Some(2), SlowCause::Host)
        };
        let truth = nccl_job_truth(&s);
        check_slowed(&truth, 2, 2.0);
        for step in 0..3 {
            let k = truth.get(2, step).unwrap();
            let other = truth.get(0, step).unwrap();
            let ratio = k.compute_ns as f64 / other.compute_ns as f64;
            assert!((0.97..1.03).contains(&ratio), "normal kernels: {ratio}");
            assert!(k.host_delay_ns >= k.compute_ns, "stall = (F-1) compute");
            assert!(k.compute_start_ns - k.step_start_ns > k.compute_ns);
            assert!(other.compute_start_ns - other.step_start_ns < 100_000);
        }
        let doc: Value = serde_json::from_slice(&rank_bytes(&s, 2)).unwrap();
        let dl = events(&doc)
            .iter()
            .find(|e| e["name"] == DATALOADER)
            .unwrap();
        assert_eq!(dl["cat"], "user_annotation");
        assert_eq!(ns(dl, "dur"), truth.get(2, 0).unwrap().host_delay_ns);
    }

    #[test]
    fn without_a_slow_rank_waits_are_jitter() {
        let truth = nccl_job_truth(&spec(32, None, SlowCause::Compute));
        for row in &truth.per_rank {
            for s in row {
                assert!(s.wait_ns * 20 < s.compute_ns, "wait {} ns", s.wait_ns);
            }
        }
    }

    #[test]
    fn transfer_follows_the_ring_formula() {
        assert_eq!(transfer_ns(1), 0);
        assert_eq!(transfer_ns(2), 1_250_000);
        assert_eq!(transfer_ns(8), 2_187_500);
        assert_eq!(transfer_ns(64), 2_460_937);
    }

    #[test]
    fn large_jobs_truncate_the_rank_list_and_stay_fast() {
        let s = NcclJobSpec {
            steps: 1,
            ..spec(1024, Some(1000), SlowCause::Compute)
        };
        let truth = nccl_job_truth(&s);
        assert_eq!(truth.per_rank.len(), 1024);
        check_slowed(&truth, 1000, 1.6);
        let doc: Value = serde_json::from_slice(&rank_bytes(&s, 3)).unwrap();
        let ranks = nccl_kernels(&doc)[0]["args"]["Process Group Ranks"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(
            ranks.starts_with("[0, 1, 2,") && ranks.ends_with(", 29, ...]"),
            "{ranks}"
        );
        assert_eq!(nccl_kernels(&doc)[0]["args"]["Group size"], 1024);
    }

    #[test]
    fn bad_specs_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        for bad in [
            spec(0, None, SlowCause::Compute),
            spec(4, Some(4), SlowCause::Host),
            NcclJobSpec {
                slow_factor: f64::NAN,
                ..spec(4, Some(1), SlowCause::Compute)
            },
            NcclJobSpec {
                steps: 0,
                ..spec(4, None, SlowCause::Compute)
            },
        ] {
            let e = write_nccl_job(&bad, dir.path()).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        }
    }
}
