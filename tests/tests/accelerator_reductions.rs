//! The accelerator reductions written at extraction (`stream_gaps`,
//! `launch_latency`) give exactly the answer of the event-level reference
//! (window functions over `trace_events`, a join on correlation ids) — on
//! every GPU trace of the corpus (Kineto from CUDA and ROCm, CUDA graphs,
//! NCCL, every nsys version) and on a generated one, for the whole trace
//! and for single phases. A trace whose reductions are missing (imported
//! before they existed) still gets the reference answer.

use std::path::Path;
use std::sync::Arc;

use flameox_engine::Workspace;
use flameox_engine::catalog::pin_head;
use flameox_engine::query::{QueryBudget, open_session};
use flameox_engine::recipes::accelerator::{
    AcceleratorAnswer, accelerator_launches, accelerator_launches_from_events,
};
use flameox_engine::recipes::accelerator_reduced::{
    accelerator_launches_reduced, reductions_cover,
};
use flameox_engine::recipes::common::ArtifactScope;
use flameox_engine::services::import::{ImportRequest, Quiet, import_artifact};
use flameox_tests::corpus;

const GPU_TRACES: &[&str] = &[
    "kineto/hta_alexnet_a100.pt.trace.json.gz",
    "kineto/hta_amd_mi250_rocm6.2.json.gz",
    "kineto/hta_cudagraph_nccl_a100_rank0of16.json.gz",
    "kineto/hta_nccl_a100_rank0of2.json.gz",
    "kineto/hta_ns_resolution_v100_rank0.pt.trace.json.gz",
    "kineto/hta_v100_nccl_rank1of2_216k_events.json.gz",
    "kineto/kineto_h100_out_of_order_after_fix.json",
    "kineto/tbplugin_resnet50_v100_worker0.pt.trace.json.gz",
    "kineto/tracelens_b200_vllm_eager_rank0of8.json.gz",
    "kineto/tracelens_h100_bert_small.json.gz",
    "kineto/tracelens_mi300x_sglang_decode_hipgraph.json.gz",
    "kineto/tracelens_mi300x_vllm_graph_replay.json.gz",
    "nsys/flameox_smoke_nsys2025.5.2.sqlite",
    "nsys/pipit_cloverleaf_a100_nsys2024.5.sqlite",
    "nsys/pipit_saxpy_mpi_a100_nsys2022.2.sqlite",
];

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// Imports `path` into `ws` and returns its artifact scope.
fn import(ws: &Workspace, path: &Path) -> ArtifactScope {
    let imported = import_artifact(
        ws,
        &ImportRequest {
            path: path.to_path_buf(),
            ..Default::default()
        },
        &Quiet,
    )
    .expect("import");
    ArtifactScope::one(imported.artifact_id)
}

/// Both formulations over `scope`, for the whole trace and for up to three
/// phases (the first, a middle and the last region the reference found).
fn assert_same_answers(ws: &Workspace, scope: &ArtifactScope, label: &str) -> AcceleratorAnswer {
    let snapshot = Arc::new(pin_head(ws).expect("head"));
    let session = open_session(ws, snapshot, QueryBudget::from_config(ws, None)).expect("session");
    let rt = runtime();
    assert!(
        rt.block_on(reductions_cover(&session.ctx, scope))
            .expect("cover"),
        "{label}: reductions missing"
    );
    let whole = |phase: Option<&str>| {
        let reference = rt
            .block_on(accelerator_launches_from_events(&session.ctx, scope, phase))
            .expect("reference");
        let reduced = rt
            .block_on(accelerator_launches_reduced(&session.ctx, scope, phase))
            .expect("reduced");
        assert_eq!(reduced, reference, "{label}, phase {phase:?}");
        reference
    };
    let all = whole(None);
    let named: Vec<String> = all
        .regions
        .iter()
        .map(|r| r.region.clone())
        .filter(|r| r != "(all)")
        .collect();
    for pick in [named.first(), named.get(named.len() / 2), named.last()]
        .into_iter()
        .flatten()
    {
        whole(Some(pick));
    }
    all
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn reductions_equal_the_event_reference_on_every_corpus_gpu_trace() {
    let mut checked_kernels = 0;
    for name in GPU_TRACES {
        let dir = tempfile::tempdir().expect("tempdir");
        let (ws, _) = Workspace::init(dir.path()).expect("init");
        let scope = import(&ws, &corpus().join(name));
        let answer = assert_same_answers(&ws, &scope, name);
        assert!(answer.overall.kernels.count > 0, "{name}: no kernels");
        checked_kernels += answer.overall.kernels.count;
    }
    // The comparison is not vacuous: 44,494 kernels when written.
    assert!(checked_kernels > 10_000, "{checked_kernels} kernels");
}

#[test]
fn reductions_equal_the_reference_on_a_generated_trace_with_many_phases() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (ws, _) = Workspace::init(dir.path()).expect("init");
    let path = dir.path().join("gen.pt.trace.json");
    let mut bytes = Vec::new();
    flameox_benches::kineto::write_kineto(
        &flameox_benches::kineto::KinetoSpec {
            seed: 7,
            events: 60_000,
            streams: 3,
            ops_per_step: 0,
        },
        &mut bytes,
    )
    .expect("generate");
    std::fs::write(&path, bytes).expect("write");
    let scope = import(&ws, &path);
    let answer = assert_same_answers(&ws, &scope, "generated");
    assert!(
        answer.regions.len() > 10,
        "{} regions",
        answer.regions.len()
    );
    assert!(answer.streams.iter().all(|s| s.gaps > 0));
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn without_reductions_the_answer_comes_from_events() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (ws, _) = Workspace::init(dir.path()).expect("init");
    let scope = import(&ws, &corpus().join(GPU_TRACES[0]));
    let snapshot = Arc::new(pin_head(&ws).expect("head"));
    let session =
        open_session(&ws, snapshot, QueryBudget::from_config(&ws, None)).expect("session");
    let rt = runtime();
    // An artifact the reductions never saw (as if imported by an older
    // flameox): the dispatcher must not trust the partial coverage.
    let mut wider = scope.clone();
    wider
        .artifact_ids
        .push("sha256:imported-before-reductions".into());
    assert!(
        !rt.block_on(reductions_cover(&session.ctx, &wider))
            .expect("cover")
    );
    let dispatched = rt
        .block_on(accelerator_launches(&session.ctx, &wider, None))
        .expect("dispatched");
    let reference = rt
        .block_on(accelerator_launches_from_events(&session.ctx, &wider, None))
        .expect("reference");
    assert_eq!(dispatched, reference);
    assert!(dispatched.overall.kernels.count > 0);
}
