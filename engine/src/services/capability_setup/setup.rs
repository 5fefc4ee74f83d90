//! Capability setup as a detached operation: pinned adapters installed into
//! the managed runtime (created first if it does not exist), each verified
//! by running its version probe, or everything this setup changed rolled
//! back. Phases: validating_request → installing_packages → verifying →
//! completed. Items: one per adapter (`already_installed`, `installed`,
//! `rolled_back`, `failed`). It never runs a workload and installs nothing
//! but the pinned distributions (and what they depend on).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::pins::{MANAGED_ADAPTERS, ManagedAdapter, managed};
use super::probe_cache;
use super::python_env::{self, InterpreterProbe};
use super::requirement::normalize_name;
use super::runtime::{ManagedRuntime, RuntimeState};
use crate::detached::record::ItemOutcome;
use crate::detached::{OperationRecord, OperationStatus, StartRequest, Started, WorkOutcome};
use crate::error::{ErrorCode, FlameoxError, Result, io_error};
use crate::execution::env::resolve_program;
use crate::execution::{ProcessSpec, run_process};
use crate::fsutil::{now_rfc3339, write_json_atomic};
use crate::lock::FileLock;
use crate::services::import_progress::{ImportProgress, ProgressSupervision};
use crate::workspace::Workspace;

/// The operation kind of a capability setup.
pub const SETUP_KIND: &str = "capability_setup";
/// Where each setup phase starts (percent of the whole).
pub const SETUP_PHASES: [(&str, f64); 4] = [
    ("validating_request", 0.0),
    ("installing_packages", 10.0),
    ("verifying", 85.0),
    ("completed", 100.0),
];
/// How long a setup waits for another setup to release the runtime.
const RUNTIME_LOCK_WAIT: Duration = Duration::from_secs(1_800);

/// The adapters a request names, checked, sorted and deduplicated.
pub fn check_adapters(adapters: &[String]) -> Result<Vec<&'static ManagedAdapter>> {
    let names: Vec<&str> = MANAGED_ADAPTERS.iter().map(|m| m.adapter).collect();
    if adapters.is_empty() {
        return Err(FlameoxError::invalid_argument(
            "adapters",
            format!("name at least one of {}", names.join(", ")),
        ));
    }
    let mut out: Vec<&'static ManagedAdapter> = Vec::new();
    for name in adapters {
        let m = managed(name).ok_or_else(|| {
            FlameoxError::invalid_argument(
                "adapters",
                format!(
                    "`{name}` is not installable by flameox; managed adapters: {} (list_capabilities names the setup for the others)",
                    names.join(", ")
                ),
            )
        })?;
        if !out.contains(&m) {
            out.push(m);
        }
    }
    out.sort_by_key(|m| m.adapter);
    Ok(out)
}

/// Starts a setup of `adapters`, or reconnects to the one its key started.
pub fn start_capability_setup(
    ws: &Workspace,
    idempotency_key: &str,
    adapters: &[String],
    spawn: crate::detached::lifecycle::SpawnWorker<'_>,
) -> Result<Started> {
    let checked = check_adapters(adapters)?;
    let names: Vec<&str> = checked.iter().map(|m| m.adapter).collect();
    let request = json!({ "adapters": names });
    let work = json!({
        "adapters": checked.iter().map(|m| json!({
            "adapter": m.adapter, "requirement": m.requirement(),
        })).collect::<Vec<_>>(),
    });
    crate::detached::start(
        ws,
        StartRequest {
            kind: SETUP_KIND,
            idempotency_key,
            request,
            start_tool: "start_capability_setup",
        },
        move || Ok(work),
        spawn,
    )
}

fn cancelled_error() -> FlameoxError {
    FlameoxError::new(ErrorCode::OperationCancelled, "cancelled by request")
}

/// Holds the runtime's lock, waiting (cancellably) for another setup.
fn lock_runtime(runtime: &ManagedRuntime, progress: &dyn ImportProgress) -> Result<FileLock> {
    std::fs::create_dir_all(runtime.root()).map_err(|e| {
        io_error("creating the managed runtime's folder", e).remedy(format!(
            "point {} (or XDG_DATA_HOME) at a folder this user can write",
            super::runtime::DATA_DIR_VARIABLE
        ))
    })?;
    let started = Instant::now();
    loop {
        if let Some(lock) = FileLock::try_acquire(&runtime.lock_path())? {
            return Ok(lock);
        }
        if progress.cancelled() {
            return Err(cancelled_error());
        }
        if started.elapsed() > RUNTIME_LOCK_WAIT {
            return Err(FlameoxError::new(
                ErrorCode::WriteLockTimeout,
                "another capability setup held the managed runtime for 30 minutes",
            ));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Creates the runtime with `python3 -m venv`, or `uv venv` when that fails.
fn create_runtime(runtime: &ManagedRuntime, progress: &dyn ImportProgress) -> Result<()> {
    let venv = runtime.venv().to_string_lossy().into_owned();
    let python = resolve_program("python3");
    let uv = resolve_program("uv");
    let mut attempts: Vec<(std::path::PathBuf, Vec<String>, &str)> = Vec::new();
    if let Some(python) = &python {
        attempts.push((
            python.clone(),
            vec!["python3".into(), "-m".into(), "venv".into(), venv.clone()],
            "venv",
        ));
    }
    if let Some(uv) = uv {
        attempts.push((
            uv,
            vec![
                "uv".into(),
                "venv".into(),
                "--python".into(),
                python
                    .as_ref()
                    .map(|p| p.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "python3".into()),
                venv.clone(),
            ],
            "uv",
        ));
    }
    if attempts.is_empty() {
        return Err(FlameoxError::new(
            ErrorCode::CapabilityUnavailable,
            "no python3 and no uv on PATH to create the managed runtime with",
        )
        .remedy("install Python 3 (with its venv module) or uv, then start the setup again"));
    }
    let mut why = Vec::new();
    for (program, argv, created_with) in attempts {
        let mut spec = ProcessSpec::new(
            program,
            argv,
            std::env::temp_dir(),
            Duration::from_secs(300),
        );
        spec.env = python_env::installer_environment();
        let outcome = run_process(&spec, &ProgressSupervision(progress))?;
        if progress.cancelled() {
            let _ = std::fs::remove_dir_all(runtime.venv());
            return Err(cancelled_error());
        }
        if outcome.exit_code == Some(0) && runtime.exists() {
            let probe = python_env::probe(&runtime.python(), &[])?;
            write_json_atomic(
                &runtime.state_path(),
                &RuntimeState {
                    created_at: now_rfc3339(),
                    created_with: created_with.to_owned(),
                    python_version: probe.python_version,
                },
            )?;
            return Ok(());
        }
        let _ = std::fs::remove_dir_all(runtime.venv());
        why.push(format!(
            "{created_with}: {}: {}",
            python_env::ending(&outcome),
            String::from_utf8_lossy(&outcome.stderr.bytes)
                .lines()
                .last()
                .unwrap_or("")
        ));
    }
    Err(FlameoxError::new(
        ErrorCode::CapabilityUnavailable,
        format!(
            "the managed runtime could not be created ({})",
            why.join("; ")
        ),
    ))
}

fn names(probe: &InterpreterProbe) -> BTreeSet<String> {
    probe
        .distributions
        .keys()
        .map(|n| normalize_name(n))
        .collect()
}

fn installed_version(probe: &InterpreterProbe, distribution: &str) -> Option<String> {
    let wanted = normalize_name(distribution);
    probe
        .distributions
        .iter()
        .find(|(n, _)| normalize_name(n) == wanted)
        .and_then(|(_, v)| v.clone())
}

/// Undoes what this setup changed: the runtime it created, or the
/// distributions it added. Returns what it did.
fn roll_back(
    runtime: &ManagedRuntime,
    created: bool,
    before: &BTreeSet<String>,
    pip: bool,
) -> String {
    if created {
        let _ = std::fs::remove_file(runtime.state_path());
        return match std::fs::remove_dir_all(runtime.venv()) {
            Ok(()) => "removed the managed runtime this setup created".to_owned(),
            Err(e) => format!("could not remove the managed runtime this setup created: {e}"),
        };
    }
    let after = match python_env::probe(&runtime.python(), &["--all".to_owned()]) {
        Ok(p) => names(&p),
        Err(e) => return format!("could not list the runtime's distributions: {}", e.message),
    };
    let added: Vec<String> = after.difference(before).cloned().collect();
    if added.is_empty() {
        return "nothing was added to the managed runtime".to_owned();
    }
    match python_env::uninstall(&runtime.python(), pip, &added) {
        Ok(()) => format!("removed {} from the managed runtime", added.join(", ")),
        Err(e) => format!("could not remove {}: {}", added.join(", "), e.message),
    }
}

/// The worker's work for a capability setup.
pub fn run_setup_work(
    _ws: &Workspace,
    record: &OperationRecord,
    progress: &dyn ImportProgress,
) -> Result<WorkOutcome> {
    progress.phase("validating_request");
    let requested: Vec<String> = record.work["adapters"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v["adapter"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let adapters = check_adapters(&requested)?;
    let runtime = ManagedRuntime::locate()?;
    let _lock = lock_runtime(&runtime, progress)?;
    let created = !runtime.exists();
    if created {
        create_runtime(&runtime, progress)?;
    }
    let before_probe = python_env::probe(&runtime.python(), &["--all".to_owned()])?;
    let before = names(&before_probe);
    let mut items: Vec<ItemOutcome> = Vec::new();
    let mut to_install = Vec::new();
    for m in &adapters {
        let current = installed_version(&before_probe, m.distribution);
        let ready = current.as_deref() == Some(m.version);
        items.push(ItemOutcome {
            item: m.adapter.to_owned(),
            status: if ready {
                "already_installed"
            } else {
                "pending"
            }
            .to_owned(),
            run_id: None,
            detail: Some(m.requirement()),
        });
        if !ready {
            to_install.push(m.requirement());
        }
    }
    progress.phase("installing_packages");
    let fail = |items: &mut Vec<ItemOutcome>, mut err: FlameoxError| -> Result<WorkOutcome> {
        let undone = roll_back(&runtime, created, &before, before_probe.pip);
        for item in items.iter_mut().filter(|i| i.status != "already_installed") {
            item.status = "rolled_back".into();
        }
        let status = if err.code == ErrorCode::OperationCancelled {
            OperationStatus::Cancelled
        } else {
            OperationStatus::Failed
        };
        err.message = format!("{}; rolled back: {undone}", err.message);
        Ok(WorkOutcome {
            status,
            receipt: json!({ "runtime": "managed", "rolled_back": undone, "adapters": items }),
            items: items.clone(),
            error: Some(err),
        })
    };
    let mut installer = None;
    if !to_install.is_empty() {
        match python_env::install(
            &runtime.python(),
            before_probe.pip,
            &to_install,
            &ProgressSupervision(progress),
        ) {
            Ok(done) => installer = Some(done.installer),
            Err(err) => return fail(&mut items, err),
        }
        for item in items.iter_mut().filter(|i| i.status == "pending") {
            item.status = "installed".into();
        }
    }
    if progress.cancelled() {
        return fail(&mut items, cancelled_error());
    }
    progress.phase("verifying");
    let mut verification = Vec::new();
    let mut unverified = Vec::new();
    for m in &adapters {
        let result = runtime.program(m.program).map(|program| {
            probe_cache::probe(
                m.adapter,
                &program,
                vec![m.program.to_owned(), "--version".to_owned()],
            )
        });
        let verified = result
            .as_ref()
            .is_some_and(|r| r.ok && r.version.as_deref() == Some(m.version));
        if !verified {
            unverified.push(format!(
                "{}: {}",
                m.adapter,
                result
                    .as_ref()
                    .map(|r| format!("`{} --version` printed `{}`", m.program, r.detail))
                    .unwrap_or_else(|| format!("no {} program was installed", m.program))
            ));
        }
        verification.push(json!({
            "adapter": m.adapter,
            "verified": verified,
            "version": result.as_ref().and_then(|r| r.version.clone()),
        }));
    }
    if !unverified.is_empty() {
        return fail(
            &mut items,
            FlameoxError::new(
                ErrorCode::CapabilityUnavailable,
                format!(
                    "verification failed, expected version {}",
                    unverified.join("; ")
                ),
            ),
        );
    }
    progress.phase("completed");
    let state = runtime.state();
    Ok(WorkOutcome {
        status: OperationStatus::Completed,
        receipt: json!({
            "runtime": "managed",
            "runtime_created": created,
            "python_version": state.map(|s| s.python_version),
            "installer": installer,
            "verification": verification,
        }),
        items,
        error: None,
    })
}

/// The request of a setup, as an agent reads it.
pub fn requested_adapters(record: &OperationRecord) -> Vec<String> {
    record.request["adapters"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}
