//! One Python interpreter's environment, probed and changed through child
//! processes only (flameox never imports anything itself): its version,
//! whether it is a virtualenv, which distributions it has, and installing
//! or removing distributions with its own pip (or `uv pip` when it has no
//! pip). The installer sees flameox's filtered environment plus the user's
//! installer settings (`PIP_*`, `UV_*`, proxies, certificates), so a
//! configured package index or mirror is honoured.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::error::{ErrorCode, FlameoxError, Result};
use crate::execution::env::{child_environment, resolve_program};
use crate::execution::{ProcessOutcome, ProcessSpec, Supervision, Termination, run_process};

/// How long a probe of an interpreter may take.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one install or uninstall may take.
pub const INSTALL_TIMEOUT: Duration = Duration::from_secs(900);
/// Characters of an installer's stderr kept in an error.
const STDERR_TAIL: usize = 1_500;

const PROBE_SCRIPT: &str = r#"
import sys, json, importlib.util
try:
    import importlib.metadata as md
except ImportError:
    md = None
out = {"python_version": "%d.%d.%d" % tuple(sys.version_info[:3]),
       "virtualenv": sys.prefix != getattr(sys, "base_prefix", sys.prefix),
       "pip": importlib.util.find_spec("pip") is not None,
       "distributions": {}}
if md is not None:
    if sys.argv[1:] == ["--all"]:
        for d in md.distributions():
            name = d.metadata["Name"]
            if name:
                out["distributions"][name] = d.version
    else:
        for name in sys.argv[1:]:
            try:
                out["distributions"][name] = md.version(name)
            except Exception:
                out["distributions"][name] = None
print(json.dumps(out))
"#;

/// What a probe of an interpreter found.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct InterpreterProbe {
    pub python_version: String,
    pub virtualenv: bool,
    pub pip: bool,
    /// Name → installed version (`None`: not installed).
    pub distributions: BTreeMap<String, Option<String>>,
}

/// Variables an installer inherits beyond the workload allowlist.
fn installer_variable(name: &str) -> bool {
    name.starts_with("PIP_")
        || name.starts_with("UV_")
        || matches!(
            name,
            "HTTP_PROXY"
                | "HTTPS_PROXY"
                | "NO_PROXY"
                | "http_proxy"
                | "https_proxy"
                | "no_proxy"
                | "SSL_CERT_FILE"
                | "SSL_CERT_DIR"
                | "REQUESTS_CA_BUNDLE"
                | "XDG_CACHE_HOME"
                | "XDG_CONFIG_HOME"
        )
}

/// The environment of probes and installers.
pub fn installer_environment() -> BTreeMap<String, String> {
    let mut env = child_environment(&BTreeMap::new());
    for (name, value) in std::env::vars() {
        if installer_variable(&name) {
            env.insert(name, value);
        }
    }
    env
}

fn spec(program: PathBuf, argv: Vec<String>, timeout: Duration) -> ProcessSpec {
    let mut spec = ProcessSpec::new(program, argv, std::env::temp_dir(), timeout);
    spec.env = installer_environment();
    spec.sample_interval = Duration::from_millis(100);
    spec
}

/// How a process ended, in words (`exit 1`, `killed by signal 9`, `timed out`).
pub fn ending(outcome: &ProcessOutcome) -> String {
    match (outcome.termination, outcome.exit_code, outcome.signal) {
        (Termination::TimedOut, ..) => "timed out".to_owned(),
        (Termination::Cancelled, ..) => "cancelled".to_owned(),
        (_, Some(code), _) => format!("exit {code}"),
        (_, None, Some(signal)) => format!("killed by signal {signal}"),
        _ => "ended without an exit status".to_owned(),
    }
}

fn lossy(output: &crate::execution::CapturedOutput) -> String {
    String::from_utf8_lossy(&output.bytes).into_owned()
}

fn tail(text: &str) -> String {
    let text = text.trim();
    let start = text.len().saturating_sub(STDERR_TAIL);
    let start = (start..=text.len())
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(text.len());
    text[start..].to_owned()
}

/// Probes `python` for its version, virtualenv-ness, pip, and the
/// installed versions of `names` (`["--all"]`: every distribution).
pub fn probe(python: &Path, names: &[String]) -> Result<InterpreterProbe> {
    let mut argv = vec![
        python.to_string_lossy().into_owned(),
        "-I".to_owned(),
        "-c".to_owned(),
        PROBE_SCRIPT.to_owned(),
    ];
    argv.extend(names.iter().cloned());
    let outcome = run_process(
        &spec(python.to_path_buf(), argv, PROBE_TIMEOUT),
        &crate::execution::Unsupervised,
    )?;
    if outcome.exit_code != Some(0) {
        return Err(FlameoxError::new(
            ErrorCode::CapabilityUnavailable,
            format!(
                "the Python interpreter could not be probed ({}): {}",
                ending(&outcome),
                tail(&lossy(&outcome.stderr))
            ),
        ));
    }
    serde_json::from_str(lossy(&outcome.stdout).trim()).map_err(|e| {
        FlameoxError::new(
            ErrorCode::CapabilityUnavailable,
            format!("the Python interpreter's probe answer was unreadable: {e}"),
        )
    })
}

/// What ran an installer, for receipts.
pub struct Installed {
    pub installer: &'static str,
    pub outcome: ProcessOutcome,
}

/// The installer command for `python`: its pip, or `uv pip` with `--python`.
fn installer(
    python: &Path,
    has_pip: bool,
    verb: &str,
) -> Result<(PathBuf, Vec<String>, &'static str)> {
    let python_text = python.to_string_lossy().into_owned();
    if has_pip {
        let mut argv = vec![
            python_text.clone(),
            "-m".into(),
            "pip".into(),
            verb.into(),
            "--disable-pip-version-check".into(),
            "--no-input".into(),
        ];
        if verb == "uninstall" {
            argv.push("--yes".into());
        } else {
            argv.push("--progress-bar".into());
            argv.push("off".into());
        }
        return Ok((python.to_path_buf(), argv, "pip"));
    }
    let uv = resolve_program("uv").ok_or_else(|| {
        FlameoxError::new(
            ErrorCode::CapabilityUnavailable,
            "the interpreter has no pip and no uv is on PATH to install with",
        )
        .remedy("install pip into that interpreter, or put uv on PATH")
    })?;
    Ok((
        uv,
        vec![
            "uv".into(),
            "pip".into(),
            verb.into(),
            "--python".into(),
            python_text,
        ],
        "uv",
    ))
}

fn failed(what: &str, outcome: &ProcessOutcome) -> FlameoxError {
    let code = match outcome.termination {
        Termination::Cancelled => ErrorCode::OperationCancelled,
        Termination::TimedOut => ErrorCode::ProcessTimeout,
        _ => ErrorCode::ProcessFailed,
    };
    FlameoxError::new(
        code,
        format!(
            "{what} failed ({}): {}",
            ending(outcome),
            tail(&lossy(&outcome.stderr))
        ),
    )
}

/// Installs `requirements` into `python`'s environment.
pub fn install(
    python: &Path,
    has_pip: bool,
    requirements: &[String],
    supervision: &dyn Supervision,
) -> Result<Installed> {
    let (program, mut argv, installer) = installer(python, has_pip, "install")?;
    argv.extend(requirements.iter().cloned());
    let outcome = run_process(&spec(program, argv, INSTALL_TIMEOUT), supervision)?;
    if outcome.termination != Termination::Exited || outcome.exit_code != Some(0) {
        return Err(failed(
            &format!("installing {} with {installer}", requirements.join(" ")),
            &outcome,
        )
        .remedy("check the requirement's version specifiers against the versions the package index has (pip uses PIP_INDEX_URL / pip.conf; uv uses UV_INDEX_URL)"));
    }
    Ok(Installed { installer, outcome })
}

/// Removes `names` from `python`'s environment (rollback; never cancelled).
pub fn uninstall(python: &Path, has_pip: bool, names: &[String]) -> Result<()> {
    if names.is_empty() {
        return Ok(());
    }
    let (program, mut argv, installer) = installer(python, has_pip, "uninstall")?;
    argv.extend(names.iter().cloned());
    let outcome = run_process(
        &spec(program, argv, INSTALL_TIMEOUT),
        &crate::execution::Unsupervised,
    )?;
    if outcome.exit_code != Some(0) {
        return Err(failed(
            &format!("removing {} with {installer}", names.join(" ")),
            &outcome,
        ));
    }
    Ok(())
}

/// Runs `argv` (a version probe) bounded; its stdout and stderr joined.
pub fn version_output(program: &Path, argv: Vec<String>) -> Result<(bool, String)> {
    let outcome = run_process(
        &spec(program.to_path_buf(), argv, Duration::from_secs(10)),
        &crate::execution::Unsupervised,
    )?;
    let text = format!("{}\n{}", lossy(&outcome.stdout), lossy(&outcome.stderr));
    Ok((outcome.exit_code == Some(0), text.trim().to_owned()))
}
