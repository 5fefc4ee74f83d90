//! The rules `flameox.toml` must follow beyond its shape: names, `{param}`
//! templates of declared parameters only, no shell strings and no `--`,
//! project-relative paths that cannot climb out of the project, positive
//! bounded numbers, and experiments that name real workloads and allowed
//! choices. Every problem becomes a [`Diagnostic`] with its key path.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path};

use serde::{Deserialize, Serialize};

use super::schema::{AdapterDef, ExperimentDef, ProjectConfig, Scalar, WorkloadDef};
use crate::services::import_plan::AUTO;
use flameox_extractors::formats::readable_names;

/// One problem in the configuration, located by its key path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diagnostic {
    /// e.g. `workloads.sort.argv[2]`.
    pub key_path: String,
    pub reason: String,
    /// 1-based position of a syntax error, when the parser knew it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
}

impl Diagnostic {
    pub fn new(key_path: impl Into<String>, reason: impl Into<String>) -> Diagnostic {
        Diagnostic {
            key_path: key_path.into(),
            reason: reason.into(),
            line: None,
            column: None,
        }
    }
}

/// Programs that turn a `-c` string into a shell command line.
const SHELLS: &[&str] = &[
    "sh",
    "bash",
    "dash",
    "zsh",
    "ksh",
    "mksh",
    "ash",
    "fish",
    "csh",
    "tcsh",
    "busybox",
    "pwsh",
    "powershell",
    "cmd",
    "cmd.exe",
];

const MAX_ARGV: usize = 256;
const MAX_TEXT: usize = 4096;
const MAX_PARAMETERS: usize = 64;
const MAX_CHOICES: usize = 1000;
const MAX_TIMEOUT_SECONDS: f64 = 7.0 * 24.0 * 3600.0;

/// A piece of an argv / environment / path template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Text(String),
    Param(String),
}

/// Splits a template into text and `{param}` pieces (`{{`, `}}` = braces).
pub fn parse_template(template: &str) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                text.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                text.push('}');
            }
            '{' => {
                let mut name = String::new();
                loop {
                    match chars.next() {
                        Some('}') => break,
                        Some(ch) => name.push(ch),
                        None => return Err("has an unclosed `{` (write `{{` for a brace)".into()),
                    }
                }
                if !is_identifier(&name) {
                    return Err(format!(
                        "placeholder `{{{name}}}` is not a plain parameter name \
                         (only {{name}} is supported; write `{{{{` for a brace)"
                    ));
                }
                if !text.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(&mut text)));
                }
                pieces.push(Piece::Param(name));
            }
            '}' => return Err("has an unmatched `}` (write `}}` for a brace)".into()),
            other => text.push(other),
        }
    }
    if !text.is_empty() {
        pieces.push(Piece::Text(text));
    }
    Ok(pieces)
}

/// Replaces every placeholder with its value (all must be present).
pub fn render_template(
    template: &str,
    values: &BTreeMap<String, Scalar>,
) -> Result<String, String> {
    let mut out = String::new();
    for piece in parse_template(template)? {
        match piece {
            Piece::Text(t) => out.push_str(&t),
            Piece::Param(name) => match values.get(&name) {
                Some(v) => out.push_str(&v.to_string()),
                None => return Err(format!("parameter `{name}` has no value")),
            },
        }
    }
    Ok(out)
}

/// `[A-Za-z_][A-Za-z0-9_]*`, at most 64 characters.
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= 64
}

/// Workload, experiment, variant and output names: `[A-Za-z0-9_][A-Za-z0-9_.-]*`, ≤ 64.
pub fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphanumeric() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
        && name.len() <= 64
}

/// A project-relative path that stays inside the project (lexically).
pub fn check_relative_path(path: &str) -> Result<(), String> {
    if path.is_empty() || path.len() > MAX_TEXT || path.contains('\0') {
        return Err("must be a non-empty path of at most 4096 bytes".into());
    }
    let p = Path::new(path);
    let mut depth: i64 = 0;
    for component in p.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => {
                return Err("must be relative to the project root, not absolute".into());
            }
            Component::ParentDir => {
                depth -= 1;
                if depth < 0 {
                    return Err("climbs out of the project with `..`".into());
                }
            }
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
        }
    }
    if path.starts_with('~') {
        return Err("`~` is not expanded; give a project-relative path".into());
    }
    Ok(())
}

fn basename(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

/// True for `sh -c …`, `bash -lc …`, `env FOO=1 sh -c …` and the like.
pub fn is_shell_string_form(argv: &[String]) -> bool {
    let mut rest = argv;
    if rest.first().is_some_and(|a| basename(a) == "env") {
        rest = &rest[1..];
        while rest
            .first()
            .is_some_and(|a| a.starts_with('-') || a.contains('='))
        {
            rest = &rest[1..];
        }
    }
    let Some(program) = rest.first() else {
        return false;
    };
    SHELLS.contains(&basename(program))
        && rest[1..]
            .iter()
            .any(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('c'))
}

fn check_text(out: &mut Vec<Diagnostic>, key: &str, text: &str) -> bool {
    if text.len() > MAX_TEXT || text.contains('\0') {
        out.push(Diagnostic::new(
            key,
            "must be at most 4096 bytes without NUL characters",
        ));
        return false;
    }
    true
}

/// Checks a template and that it names only `declared` parameters.
fn check_template(
    out: &mut Vec<Diagnostic>,
    key: &str,
    template: &str,
    declared: &BTreeMap<String, Vec<Scalar>>,
) {
    if !check_text(out, key, template) {
        return;
    }
    match parse_template(template) {
        Err(reason) => out.push(Diagnostic::new(key, reason)),
        Ok(pieces) => {
            for piece in pieces {
                if let Piece::Param(name) = piece
                    && !declared.contains_key(&name)
                {
                    out.push(Diagnostic::new(
                        key,
                        format!("placeholder `{{{name}}}` names no declared parameter"),
                    ));
                }
            }
        }
    }
}

/// Every problem of one workload definition.
pub fn workload_diagnostics(name: &str, def: &WorkloadDef) -> Vec<Diagnostic> {
    let at = |key: &str| format!("workloads.{name}.{key}");
    let mut out = Vec::new();
    if !is_name(name) {
        out.push(Diagnostic::new(
            format!("workloads.{name}"),
            "workload names are 1..64 of A-Z a-z 0-9 _ . - (not starting with . or -)",
        ));
    }
    if def.argv.is_empty() || def.argv.len() > MAX_ARGV {
        out.push(Diagnostic::new(at("argv"), "must have 1..=256 entries"));
    }
    for (i, arg) in def.argv.iter().enumerate() {
        let key = at(&format!("argv[{i}]"));
        if arg == "--" {
            out.push(Diagnostic::new(
                &key,
                "`--` argv forms are not supported; list the program's arguments directly",
            ));
        } else if i == 0 {
            if arg.is_empty() || arg.chars().any(char::is_whitespace) || arg.contains('{') {
                out.push(Diagnostic::new(
                    &key,
                    "the program must be one plain word or path (no spaces, no placeholders): \
                     split a shell command line into an argv array",
                ));
            }
            check_text(&mut out, &key, arg);
        } else {
            check_template(&mut out, &key, arg, &def.parameters);
        }
    }
    if is_shell_string_form(&def.argv) {
        out.push(Diagnostic::new(
            at("argv"),
            "shell strings (`sh -c …`, `bash -c …`) are not supported; run the program directly",
        ));
    }
    if let Err(reason) = check_relative_path(&def.cwd) {
        out.push(Diagnostic::new(at("cwd"), reason));
    }
    if !(def.timeout_seconds.is_finite()
        && def.timeout_seconds > 0.0
        && def.timeout_seconds <= MAX_TIMEOUT_SECONDS)
    {
        out.push(Diagnostic::new(
            at("timeout_seconds"),
            "must be a positive number of seconds, at most 604800 (7 days)",
        ));
    }
    check_parameters(&mut out, name, def);
    if def.environment.len() > 128 {
        out.push(Diagnostic::new(at("environment"), "at most 128 variables"));
    }
    for (var, value) in &def.environment {
        let key = at(&format!("environment.{var}"));
        if !is_identifier(var) {
            out.push(Diagnostic::new(
                &key,
                "variable names are [A-Za-z_][A-Za-z0-9_]*",
            ));
        }
        check_template(&mut out, &key, value, &def.parameters);
    }
    check_extras(&mut out, name, def);
    out
}

fn check_parameters(out: &mut Vec<Diagnostic>, name: &str, def: &WorkloadDef) {
    if def.parameters.len() > MAX_PARAMETERS {
        out.push(Diagnostic::new(
            format!("workloads.{name}.parameters"),
            "at most 64 parameters",
        ));
    }
    for (param, choices) in &def.parameters {
        let key = format!("workloads.{name}.parameters.{param}");
        if !is_identifier(param) {
            out.push(Diagnostic::new(
                &key,
                "parameter names are [A-Za-z_][A-Za-z0-9_]*",
            ));
        }
        if choices.is_empty() || choices.len() > MAX_CHOICES {
            out.push(Diagnostic::new(&key, "needs 1..=1000 allowed choices"));
        }
        let mut seen = BTreeSet::new();
        for (i, choice) in choices.iter().enumerate() {
            let text = choice.to_string();
            let bad = match choice {
                Scalar::Float(x) => !x.is_finite(),
                Scalar::Str(s) => s.len() > 256 || s.contains('\0'),
                _ => false,
            };
            if bad {
                out.push(Diagnostic::new(
                    format!("{key}[{i}]"),
                    "choices are finite numbers, booleans or strings of at most 256 bytes",
                ));
            }
            if !seen.insert(text.clone()) {
                out.push(Diagnostic::new(
                    format!("{key}[{i}]"),
                    format!("duplicate choice `{text}`"),
                ));
            }
        }
    }
}

fn check_extras(out: &mut Vec<Diagnostic>, name: &str, def: &WorkloadDef) {
    let at = |key: &str| format!("workloads.{name}.{key}");
    if let Some(oracle) = &def.oracle {
        if oracle.exit_codes.as_ref().is_some_and(Vec::is_empty) {
            out.push(Diagnostic::new(
                at("oracle.exit_codes"),
                "must not be empty",
            ));
        }
        if let Some(text) = &oracle.stdout_contains
            && (text.is_empty() || !check_text(out, &at("oracle.stdout_contains"), text))
        {
            out.push(Diagnostic::new(
                at("oracle.stdout_contains"),
                "must not be empty",
            ));
        }
    }
    if let Some(req) = &def.requirements {
        for (i, exe) in req.executables.iter().enumerate() {
            let key = at(&format!("requirements.executables[{i}]"));
            if exe.is_empty() {
                out.push(Diagnostic::new(&key, "must not be empty"));
            }
            check_text(out, &key, exe);
        }
        for (i, dist) in req.python_distributions.iter().enumerate() {
            if dist.is_empty() || dist.len() > 200 || dist.contains('/') || dist.contains('\\') {
                out.push(Diagnostic::new(
                    at(&format!("requirements.python_distributions[{i}]")),
                    "a distribution name with optional version specifiers; no URLs or paths",
                ));
            }
        }
    }
    for (i, path) in def.writable_paths.iter().enumerate() {
        if let Err(reason) = check_relative_path(path) {
            out.push(Diagnostic::new(at(&format!("writable_paths[{i}]")), reason));
        }
    }
    if let Some(sha) = def
        .identity
        .as_ref()
        .and_then(|i| i.executable_sha256.as_ref())
        && !(sha.len() == 64
            && sha
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
    {
        out.push(Diagnostic::new(
            at("identity.executable_sha256"),
            "must be 64 lowercase hex digits",
        ));
    }
    if def.outputs.len() > 16 {
        out.push(Diagnostic::new(at("outputs"), "at most 16 outputs"));
    }
    for (output, decl) in &def.outputs {
        let key = at(&format!("outputs.{output}"));
        if !is_name(output) {
            out.push(Diagnostic::new(
                &key,
                "output names are 1..64 of A-Z a-z 0-9 _ . -",
            ));
        }
        check_template(out, &format!("{key}.path"), &decl.path, &def.parameters);
        if let Err(reason) = check_relative_path(&decl.path) {
            out.push(Diagnostic::new(format!("{key}.path"), reason));
        }
        if let Some(kind) = &decl.kind
            && kind != AUTO
            && !readable_names().contains(&kind.as_str())
        {
            out.push(Diagnostic::new(
                format!("{key}.kind"),
                format!(
                    "`{kind}` is not one of auto, {}",
                    readable_names().join(", ")
                ),
            ));
        }
    }
}

/// Checks that `value` is one of `param`'s declared choices.
pub fn allowed_choice(def: &WorkloadDef, param: &str, value: &Scalar) -> Result<(), String> {
    let Some(choices) = def.parameters.get(param) else {
        return Err(format!("`{param}` is not a declared parameter"));
    };
    let text = value.to_string();
    if choices.iter().any(|c| c.to_string() == text) {
        Ok(())
    } else {
        let allowed: Vec<String> = choices.iter().map(Scalar::to_string).collect();
        Err(format!(
            "`{text}` is not an allowed choice of `{param}` ({})",
            allowed.join(", ")
        ))
    }
}

/// Every problem of one experiment definition.
pub fn experiment_diagnostics(
    name: &str,
    def: &ExperimentDef,
    workloads: &BTreeMap<String, WorkloadDef>,
) -> Vec<Diagnostic> {
    let at = |key: &str| format!("experiments.{name}.{key}");
    let mut out = Vec::new();
    if !is_name(name) {
        out.push(Diagnostic::new(
            format!("experiments.{name}"),
            "experiment names are 1..64 of A-Z a-z 0-9 _ . -",
        ));
    }
    let Some(workload) = workloads.get(&def.workload) else {
        out.push(Diagnostic::new(
            at("workload"),
            format!("no workload named `{}` is declared", def.workload),
        ));
        return out;
    };
    let scaling_param = def.scaling.as_ref().map(|s| s.parameter.as_str());
    let check_value = |key: String, param: &str, value: &Scalar, out: &mut Vec<Diagnostic>| {
        if Some(param) == scaling_param {
            out.push(Diagnostic::new(
                &key,
                "the scaling parameter is set by scaling.values, not here",
            ));
        } else if let Err(reason) = allowed_choice(workload, param, value) {
            out.push(Diagnostic::new(&key, reason));
        }
    };
    match (&def.variants, &def.factors) {
        (Some(_), Some(_)) => out.push(Diagnostic::new(
            at("factors"),
            "give variants or factors, not both",
        )),
        (Some(variants), None) => {
            if variants.is_empty() || variants.len() > 64 {
                out.push(Diagnostic::new(at("variants"), "needs 1..=64 variants"));
            }
            for (variant, overrides) in variants {
                if !is_name(variant) {
                    out.push(Diagnostic::new(
                        at(&format!("variants.{variant}")),
                        "variant names are 1..64 of A-Z a-z 0-9 _ . -",
                    ));
                }
                for (param, value) in overrides {
                    check_value(
                        at(&format!("variants.{variant}.{param}")),
                        param,
                        value,
                        &mut out,
                    );
                }
            }
        }
        (None, Some(factors)) => {
            for (param, levels) in factors {
                if levels.is_empty() {
                    out.push(Diagnostic::new(
                        at(&format!("factors.{param}")),
                        "needs levels",
                    ));
                }
                for (i, level) in levels.iter().enumerate() {
                    check_value(at(&format!("factors.{param}[{i}]")), param, level, &mut out);
                }
            }
        }
        (None, None) => {}
    }
    if let Some(scaling) = &def.scaling {
        if scaling.values.len() < 2 {
            out.push(Diagnostic::new(
                at("scaling.values"),
                "needs at least 2 values",
            ));
        }
        let mut seen = BTreeSet::new();
        for (i, value) in scaling.values.iter().enumerate() {
            let key = at(&format!("scaling.values[{i}]"));
            if let Err(reason) = allowed_choice(workload, &scaling.parameter, value) {
                out.push(Diagnostic::new(&key, reason));
            } else if !seen.insert(value.to_string()) {
                out.push(Diagnostic::new(&key, "duplicate value"));
            }
        }
    }
    if def.repetitions == 0 || def.repetitions > 10_000 {
        out.push(Diagnostic::new(at("repetitions"), "must be in 1..=10000"));
    }
    if def.warmups.is_some_and(|w| w > 1000) {
        out.push(Diagnostic::new(at("warmups"), "must be at most 1000"));
    }
    if def.primary_metric.is_empty() || def.primary_metric.len() > 200 {
        out.push(Diagnostic::new(
            at("primary_metric"),
            "must be 1..=200 characters",
        ));
    }
    if !(def.practical_threshold.is_finite() && (0.0..10.0).contains(&def.practical_threshold)) {
        out.push(Diagnostic::new(
            at("practical_threshold"),
            "must be a relative change in [0, 10) (0.05 = 5 %)",
        ));
    }
    if !(def.confidence_level > 0.5 && def.confidence_level < 1.0) {
        out.push(Diagnostic::new(
            at("confidence_level"),
            "must be in (0.5, 1)",
        ));
    }
    if def.max_trials == Some(0) {
        out.push(Diagnostic::new(at("max_trials"), "must be at least 1"));
    }
    out
}

/// The placeholders a third-party adapter's command may hold.
pub const ADAPTER_PLACEHOLDERS: [&str; 3] = ["{program}", "{profile}", "{argv}"];

/// Every problem of one `[adapters.<name>]`.
pub fn adapter_diagnostics(name: &str, def: &AdapterDef) -> Vec<Diagnostic> {
    let at = |key: &str| format!("adapters.{name}.{key}");
    let mut out = Vec::new();
    if !is_name(name) || crate::services::adapters::ADAPTERS.contains(&name) {
        out.push(Diagnostic::new(
            format!("adapters.{name}"),
            "a name of 1..64 of A-Z a-z 0-9 _ . - that is not a built-in adapter (process, py-spy, viztracer, perf, nsys)",
        ));
    }
    if def.program.is_empty() || def.program.chars().any(char::is_whitespace) {
        out.push(Diagnostic::new(
            at("program"),
            "a program name or absolute path, no spaces",
        ));
    }
    check_text(&mut out, &at("program"), &def.program);
    if def.command.is_empty() || def.command.len() > MAX_ARGV {
        out.push(Diagnostic::new(at("command"), "must have 1..=256 entries"));
    }
    if def.command.iter().filter(|a| *a == "{argv}").count() != 1 {
        out.push(Diagnostic::new(
            at("command"),
            "must hold `{argv}` (the workload's argv) exactly once, as a whole entry",
        ));
    }
    for (i, arg) in def.command.iter().enumerate() {
        let key = at(&format!("command[{i}]"));
        check_text(&mut out, &key, arg);
        if arg == "{argv}" {
            continue;
        }
        let stripped = arg.replace("{program}", "").replace("{profile}", "");
        if stripped.contains('{') || stripped.contains('}') {
            out.push(Diagnostic::new(
                &key,
                "placeholders are {program}, {profile} and {argv} (a whole entry)",
            ));
        }
    }
    if def.profile.is_empty()
        || def.profile.contains('/')
        || def.profile.contains('\\')
        || def.profile.starts_with('.')
    {
        out.push(Diagnostic::new(
            at("profile"),
            "a plain file name (no folders)",
        ));
    }
    if let Some(kind) = &def.kind
        && kind != "auto"
        && flameox_extractors::formats::FORMATS
            .iter()
            .all(|f| f.name() != kind)
    {
        out.push(Diagnostic::new(
            at("kind"),
            format!("`{kind}` is not a format kind; `flameox capabilities` lists them"),
        ));
    }
    if let Some(dist) = &def.distribution
        && crate::services::capability_setup::requirement::parse(dist)
            .map(|r| !r.specifiers.is_empty() || r.name != *dist)
            .unwrap_or(true)
    {
        out.push(Diagnostic::new(
            at("distribution"),
            "a distribution name, without version specifiers",
        ));
    }
    out
}

/// Every problem of a whole configuration.
pub fn config_diagnostics(config: &ProjectConfig) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (name, def) in &config.workloads {
        out.extend(workload_diagnostics(name, def));
    }
    for (name, def) in &config.adapters {
        out.extend(adapter_diagnostics(name, def));
    }
    for (name, def) in &config.experiments {
        out.extend(experiment_diagnostics(name, def, &config.workloads));
    }
    out
}
