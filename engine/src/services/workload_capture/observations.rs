//! Configuration observations: what the machine and the project looked
//! like when a capture ran — CPU model, frequency governor, memory, kernel,
//! the project's git commit and whether its tree was dirty, the workload
//! interpreter's version and installed packages (Python), and the
//! environment the child was given (declared values; the inherited
//! locale and time zone with their values, other inherited names only).
//! Recorded with every capture as the run's `observations` artifact, before
//! the workload starts (never while it is measured), each probe bounded, so
//! `analyze_execution` can say what changed between two runs when their
//! times differ. A probe that cannot run leaves its field out and says why.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::execution::env::{ALLOWED_PREFIX, child_environment, is_allowed};
use crate::execution::process::{ProcessSpec, Unsupervised, run_process};

pub use flameox_extractors::configuration_observations::{
    ConfigurationObservations, EnvironmentObservations, GitState, HostObservations,
    InterpreterObservations, OBSERVATIONS_KIND, OBSERVATIONS_SCHEMA,
};
/// Most packages recorded (sorted by name; the count is always whole).
const MOST_PACKAGES: usize = 5000;
/// Each probe's time limit.
const PROBE_SECONDS: u64 = 15;

fn first_line(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()?
        .lines()
        .next()
        .map(|l| l.trim().to_owned())
        .filter(|l| !l.is_empty())
}

fn host() -> HostObservations {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_owned());
    let memory_total_bytes = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map(|kb| kb * 1024);
    HostObservations {
        os: std::env::consts::OS.to_owned(),
        arch: std::env::consts::ARCH.to_owned(),
        kernel: first_line("/proc/sys/kernel/osrelease"),
        cpu_model,
        logical_cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        frequency_governor: first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        memory_total_bytes,
    }
}

/// Runs `program argv…` in `cwd`, bounded; its stdout when it exits 0.
fn probe(program: &Path, argv: Vec<String>, cwd: &Path) -> Result<String, String> {
    let mut spec = ProcessSpec::new(
        program.to_path_buf(),
        argv,
        cwd.to_path_buf(),
        Duration::from_secs(PROBE_SECONDS),
    );
    spec.env = child_environment(&BTreeMap::new());
    spec.output_limit = 4 * 1024 * 1024;
    let outcome = run_process(&spec, &Unsupervised).map_err(|e| e.message.clone())?;
    if outcome.exit_code != Some(0) {
        return Err(format!("exited with {:?}", outcome.exit_code));
    }
    Ok(String::from_utf8_lossy(&outcome.stdout.bytes).into_owned())
}

fn git(project_root: &Path) -> Result<Option<GitState>, String> {
    if !project_root.join(".git").exists() {
        return Ok(None);
    }
    let Some(git) = crate::execution::env::resolve_program("git") else {
        return Err("git: not on PATH".into());
    };
    let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let commit = probe(&git, args(&["git", "rev-parse", "HEAD"]), project_root)
        .map_err(|e| format!("git rev-parse: {e}"))?;
    let status = probe(
        &git,
        args(&["git", "status", "--porcelain", "--untracked-files=no"]),
        project_root,
    )
    .map_err(|e| format!("git status: {e}"))?;
    Ok(Some(GitState {
        commit: commit.trim().to_owned(),
        dirty: !status.trim().is_empty(),
    }))
}

const PYTHON_PROBE: &str = "import json, sys, platform\n\
try:\n    import importlib.metadata as m\n    pk = {}\n    for d in m.distributions():\n        n = d.metadata.get('Name')\n        if n: pk[n.lower()] = d.version\n\
except Exception:\n    pk = {}\n\
print(json.dumps({'implementation': platform.python_implementation(), 'version': platform.python_version(), 'virtualenv': sys.prefix != sys.base_prefix, 'packages': pk}))";

#[derive(Deserialize)]
struct PythonProbe {
    implementation: String,
    version: String,
    virtualenv: bool,
    packages: BTreeMap<String, String>,
}

fn python(program: &Path, argv0: &str, cwd: &Path) -> Result<InterpreterObservations, String> {
    let out = probe(
        program,
        vec![argv0.to_owned(), "-c".into(), PYTHON_PROBE.into()],
        cwd,
    )?;
    let p: PythonProbe = serde_json::from_str(out.trim()).map_err(|e| e.to_string())?;
    let packages_total = p.packages.len();
    Ok(InterpreterObservations {
        implementation: p.implementation,
        version: p.version,
        virtualenv: p.virtualenv,
        packages: p.packages.into_iter().take(MOST_PACKAGES).collect(),
        packages_total,
    })
}

/// Observes the configuration a capture of `argv` (resolved `program`) in
/// `cwd` runs in.
pub fn observe(
    project_root: &Path,
    program: &Path,
    argv: &[String],
    cwd: &Path,
    declared: &BTreeMap<String, String>,
) -> ConfigurationObservations {
    let mut not_observed = Vec::new();
    let git = git(project_root).unwrap_or_else(|why| {
        not_observed.push(why);
        None
    });
    let argv0 = argv.first().map(String::as_str).unwrap_or_default();
    let interpreter = if super::adapters::is_python(argv0) {
        python(program, argv0, cwd)
            .map_err(|why| not_observed.push(format!("python: {why}")))
            .ok()
    } else {
        None
    };
    let mut inherited: Vec<String> = Vec::new();
    let mut locale = BTreeMap::new();
    for (name, value) in std::env::vars() {
        if !is_allowed(&name) || declared.contains_key(&name) {
            continue;
        }
        if is_locale(&name) {
            locale.insert(name.clone(), value);
        }
        inherited.push(name);
    }
    inherited.sort();
    ConfigurationObservations {
        schema: OBSERVATIONS_SCHEMA.into(),
        observed_at: crate::fsutil::now_rfc3339(),
        host: host(),
        git,
        interpreter,
        environment: EnvironmentObservations {
            declared: declared.clone(),
            inherited,
            locale,
        },
        not_observed,
    }
}

/// Whether an inherited variable's value is recorded: the locale and the
/// time zone.
fn is_locale(name: &str) -> bool {
    name == "LANG" || name == "TZ" || name.starts_with(ALLOWED_PREFIX)
}

/// One field that differs between two runs' observations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigurationChange {
    /// `host.frequency_governor`, `git.commit`, `interpreter.version`,
    /// `packages.numpy`, `environment.OMP_NUM_THREADS`, …
    pub field: String,
    pub base: Option<String>,
    pub target: Option<String>,
}

/// Every field that differs, host and git first, packages last.
pub fn changes(
    base: &ConfigurationObservations,
    target: &ConfigurationObservations,
) -> Vec<ConfigurationChange> {
    let mut out = Vec::new();
    let mut push = |field: String, b: Option<String>, t: Option<String>| {
        if b != t {
            out.push(ConfigurationChange {
                field,
                base: b,
                target: t,
            });
        }
    };
    let (bh, th) = (&base.host, &target.host);
    push(
        "host.cpu_model".into(),
        bh.cpu_model.clone(),
        th.cpu_model.clone(),
    );
    push(
        "host.logical_cpus".into(),
        Some(bh.logical_cpus.to_string()),
        Some(th.logical_cpus.to_string()),
    );
    push(
        "host.frequency_governor".into(),
        bh.frequency_governor.clone(),
        th.frequency_governor.clone(),
    );
    push(
        "host.memory_total_bytes".into(),
        bh.memory_total_bytes.map(|b| b.to_string()),
        th.memory_total_bytes.map(|b| b.to_string()),
    );
    push("host.kernel".into(), bh.kernel.clone(), th.kernel.clone());
    let git = |g: &Option<GitState>| {
        (
            g.as_ref().map(|g| g.commit.clone()),
            g.as_ref().map(|g| g.dirty.to_string()),
        )
    };
    let ((bc, bd), (tc, td)) = (git(&base.git), git(&target.git));
    push("git.commit".into(), bc, tc);
    push("git.dirty".into(), bd, td);
    let version = |i: &Option<InterpreterObservations>| {
        i.as_ref()
            .map(|i| format!("{} {}", i.implementation, i.version))
    };
    push(
        "interpreter.version".into(),
        version(&base.interpreter),
        version(&target.interpreter),
    );
    let value = |o: &ConfigurationObservations, name: &str| {
        let e = &o.environment;
        e.declared.get(name).or_else(|| e.locale.get(name)).cloned()
    };
    let names: std::collections::BTreeSet<&String> = [base, target]
        .iter()
        .flat_map(|o| {
            o.environment
                .declared
                .keys()
                .chain(o.environment.locale.keys())
        })
        .collect();
    for name in names {
        push(
            format!("environment.{name}"),
            value(base, name),
            value(target, name),
        );
    }
    let empty = BTreeMap::new();
    let bp = base.interpreter.as_ref().map_or(&empty, |i| &i.packages);
    let tp = target.interpreter.as_ref().map_or(&empty, |i| &i.packages);
    let names: std::collections::BTreeSet<&String> = bp.keys().chain(tp.keys()).collect();
    for name in names {
        push(
            format!("packages.{name}"),
            bp.get(name).cloned(),
            tp.get(name).cloned(),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_is_observed_and_changes_name_each_field() {
        let dir = tempfile::tempdir().unwrap();
        let python = crate::execution::env::resolve_program("python3");
        let argv = vec!["python3".to_owned(), "-c".into(), "pass".into()];
        let declared = BTreeMap::from([("MODE".to_owned(), "fast".to_owned())]);
        let program = python.clone().unwrap_or_else(|| "/bin/true".into());
        let a = observe(dir.path(), &program, &argv, dir.path(), &declared);
        assert!(a.host.logical_cpus >= 1);
        assert_eq!(a.host.os, std::env::consts::OS);
        assert!(a.git.is_none(), "not a checkout");
        if python.is_some() {
            let i = a.interpreter.as_ref().expect("python observed");
            assert!(i.version.starts_with('3'), "{i:?}");
            assert_eq!(i.packages.len(), i.packages_total.min(MOST_PACKAGES));
        }
        let mut b = a.clone();
        b.host.frequency_governor = Some("powersave".into());
        b.environment.declared.insert("MODE".into(), "slow".into());
        b.environment
            .locale
            .insert("LANG".into(), "tr_TR.UTF-8".into());
        if let Some(i) = b.interpreter.as_mut() {
            i.packages.insert("zzz-new".into(), "1.0".into());
        }
        let fields: Vec<String> = changes(&a, &b).into_iter().map(|c| c.field).collect();
        assert!(
            fields.contains(&"environment.MODE".to_owned()),
            "{fields:?}"
        );
        if a.environment.locale.get("LANG").map(String::as_str) != Some("tr_TR.UTF-8") {
            assert!(
                fields.contains(&"environment.LANG".to_owned()),
                "a locale change is a change: {fields:?}"
            );
        }
        if a.host.frequency_governor.as_deref() != Some("powersave") {
            assert_eq!(fields[0], "host.frequency_governor", "{fields:?}");
        }
        if python.is_some() {
            assert_eq!(fields.last().map(String::as_str), Some("packages.zzz-new"));
        }
        assert!(changes(&a, &a).is_empty());
    }
}
