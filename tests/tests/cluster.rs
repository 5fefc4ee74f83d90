//! Recipes on a Ballista cluster: a scheduler and executors started as
//! separate `flameox cluster …` processes on loopback, reading a generated
//! 64-rank job from a shared store on moto's S3 server. Every answer with
//! `--cluster` equals the local engine's; the wall time of the GPU
//! breakdown with 1 and with 2 executors is reported (on 2 cores a ratio,
//! not a speed-up claim).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use flameox_tests::s3_server::{S3Server, free_port};
use flameox_tests::{Project, flameox_bin, write_kineto_job};
use serde_json::Value;

const BUCKET: &str = "cluster-evidence";
const STORE: &str = "s3://cluster-evidence/job";
const RANKS: u64 = 64;

/// A `flameox cluster …` process, killed when dropped.
struct ClusterProcess(Child);

impl Drop for ClusterProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(server: &S3Server, args: &[&str]) -> ClusterProcess {
    let mut cmd = Command::new(flameox_bin());
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    server.configure(&mut cmd);
    ClusterProcess(cmd.spawn().expect("starting a cluster process"))
}

fn executor(server: &S3Server, scheduler: u16) -> ClusterProcess {
    // The executor also serves shuffle data on the next port.
    let port = loop {
        let port = free_port();
        if port < u16::MAX && std::net::TcpListener::bind(("127.0.0.1", port + 1)).is_ok() {
            break port;
        }
    };
    spawn(
        server,
        &[
            "cluster",
            "executor",
            "--scheduler",
            &format!("127.0.0.1:{scheduler}"),
            "--bind",
            &format!("127.0.0.1:{port}"),
            "--store",
            STORE,
            "--cores",
            "1",
        ],
    )
}

/// Whether the flameox binary has `flameox cluster …`: exactly when this
/// test binary was built with `--features flameox-tests/cluster` (the
/// nested build of `flameox_bin` passes the same features), asserted
/// either way so a build that lost the feature fails rather than skips.
fn cluster_built(project: &Project) -> bool {
    let out = project
        .command(&[
            "cluster",
            "scheduler",
            "--store",
            "https://example.com/x",
            "--json",
        ])
        .output()
        .expect("running flameox");
    let body: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let expected = if cfg!(feature = "cluster") {
        "INVALID_ARGUMENTS"
    } else {
        "CAPABILITY_UNAVAILABLE"
    };
    assert_eq!(body["code"], expected, "{body}");
    cfg!(feature = "cluster")
}

fn run(project: &Project, server: &S3Server, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let mut cmd = project.command(&all);
    server.configure(&mut cmd);
    flameox_tests::success_json(&mut cmd, args)
}

#[test]
#[cfg_attr(
    not(feature = "cluster"),
    ignore = "needs the cluster feature: cargo nextest run --workspace --all-targets --features flameox-tests/cluster -E 'test(/^cluster::/)'"
)]
fn recipes_on_a_ballista_cluster_answer_as_the_local_engine_does() {
    let Some(server) = S3Server::start() else {
        return;
    };
    let project = Project::bare();
    if !cluster_built(&project) {
        return;
    }
    server.create_bucket(BUCKET);
    run(&project, &server, &["init", "--store", STORE]);
    let job = tempfile::tempdir().expect("job folder");
    write_kineto_job(job.path(), RANKS, 2_000, 31);
    let imported = run(
        &project,
        &server,
        &["import", job.path().to_str().expect("path")],
    );
    assert_eq!(imported["artifacts_total"], RANKS);
    let run_id = imported["run_id"].as_str().expect("run").to_owned();
    // A second job to compare against.
    let base_job = tempfile::tempdir().expect("job folder");
    write_kineto_job(base_job.path(), RANKS, 2_000, 7);
    let base = run(
        &project,
        &server,
        &["import", base_job.path().to_str().expect("path")],
    );
    let base_id = base["run_id"].as_str().expect("run").to_owned();

    // Nothing listens there yet: a typed, retryable error, not a plan failure.
    let nobody = format!("df://127.0.0.1:{}", free_port());
    let mut cmd = project.command(&[
        "analyze",
        "gpu-summary",
        &run_id,
        "--cluster",
        &nobody,
        "--json",
    ]);
    server.configure(&mut cmd);
    let out = cmd.output().expect("running flameox");
    let body: Value = serde_json::from_slice(&out.stdout).expect("JSON error");
    assert_eq!(body["code"], "REMOTE_SOURCE_UNAVAILABLE", "{body}");
    assert_eq!(body["retryable"], true, "{body}");

    let scheduler_port = free_port();
    let _scheduler = spawn(
        &server,
        &[
            "cluster",
            "scheduler",
            "--bind",
            &format!("127.0.0.1:{scheduler_port}"),
            "--store",
            STORE,
        ],
    );
    let cluster = format!("df://127.0.0.1:{scheduler_port}");
    // The work goes to executors: with none registered, a query waits for
    // one until its deadline. Asked before the scheduler listens, it would
    // answer REMOTE_SOURCE_UNAVAILABLE instead: wait for the port.
    let listening = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", scheduler_port)).is_err() {
        assert!(
            listening.elapsed() < Duration::from_secs(60),
            "the scheduler never listened on {scheduler_port}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut cmd = project.command(&[
        "analyze",
        "gpu-summary",
        &run_id,
        "--cluster",
        &cluster,
        "--timeout",
        "3",
        "--json",
    ]);
    server.configure(&mut cmd);
    let out = cmd.output().expect("running flameox");
    let body: Value = serde_json::from_slice(&out.stdout).expect("JSON error");
    assert_eq!(body["code"], "QUERY_BUDGET_EXCEEDED", "{body}");
    let _first = executor(&server, scheduler_port);
    let analyses: Vec<Vec<&str>> = vec![
        vec!["analyze", "gpu-breakdown", &run_id],
        vec!["analyze", "gpu-summary", &run_id],
        vec!["analyze", "gpu-gaps", &run_id, "--limit", "10"],
        vec!["analyze", "summary", &run_id],
        vec!["analyze", "hotspots", &run_id, "--limit", "10"],
        vec!["analyze", "accelerator-launches", &run_id],
        vec![
            "analyze",
            "compare-hotspots",
            &run_id,
            &base_id,
            "--limit",
            "10",
        ],
    ];
    // The first call also waits for the executor to register.
    let started = Instant::now();
    let warm = loop {
        let mut args = analyses[1].clone();
        args.extend(["--cluster", &cluster]);
        let mut all = args.clone();
        all.push("--json");
        let mut cmd = project.command(&all);
        server.configure(&mut cmd);
        let out = cmd.output().expect("running flameox");
        if out.status.success() {
            break serde_json::from_slice::<Value>(&out.stdout).expect("JSON");
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the cluster never answered: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    assert!(
        warm["rows"].as_array().is_some_and(|r| !r.is_empty()),
        "{warm}"
    );

    let timed = |label: &str| -> f64 {
        let mut args = analyses[0].clone();
        args.extend(["--cluster", &cluster]);
        let started = Instant::now();
        run(&project, &server, &args);
        let seconds = started.elapsed().as_secs_f64();
        eprintln!("gpu-breakdown over {RANKS} ranks with {label}: {seconds:.2} s");
        seconds
    };
    let started = Instant::now();
    run(&project, &server, &analyses[0]);
    eprintln!(
        "gpu-breakdown over {RANKS} ranks in this process: {:.2} s",
        started.elapsed().as_secs_f64()
    );
    let one = timed("1 executor");
    let _second = executor(&server, scheduler_port);
    // Let the second executor register and take tasks before timing.
    std::thread::sleep(Duration::from_secs(3));
    let mut args = analyses[1].clone();
    args.extend(["--cluster", &cluster]);
    run(&project, &server, &args);
    let two = timed("2 executors");
    eprintln!("wall-time ratio, 2 executors / 1: {:.2}", two / one);

    for analysis in &analyses {
        let local = run(&project, &server, analysis);
        let mut args = analysis.clone();
        args.extend(["--cluster", &cluster]);
        let distributed = run(&project, &server, &args);
        assert!(local.as_object().is_some_and(|o| o.len() > 3), "{local}");
        assert_eq!(local, distributed, "{analysis:?} differs on the cluster");
    }
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn a_cluster_without_a_shared_store_or_with_a_bad_address_is_a_typed_error() {
    let project = Project::new();
    let out = project
        .command(&["status", "--cluster", "127.0.0.1:50050", "--json"])
        .output()
        .expect("running flameox");
    let body: Value = serde_json::from_slice(&out.stdout).expect("JSON error");
    assert_eq!(body["code"], "INVALID_ARGUMENTS", "{body}");
    if !cluster_built(&project) {
        return;
    }
    let trace = flameox_tests::corpus().join("kineto/hta_nccl_a100_rank0of2.json.gz");
    project.json(&["import", trace.to_str().expect("path")]);
    let out = project
        .command(&[
            "analyze",
            "gpu-summary",
            "latest",
            "--cluster",
            "df://127.0.0.1:1",
            "--json",
        ])
        .output()
        .expect("running flameox");
    let body: Value = serde_json::from_slice(&out.stdout).expect("JSON error");
    assert_eq!(body["code"], "INVALID_ARGUMENTS", "{body}");
    assert!(
        body["message"]
            .as_str()
            .is_some_and(|m| m.contains("shared store")),
        "{body}"
    );
}
