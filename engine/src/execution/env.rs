//! The child environment policy and program lookup. A workload never
//! inherits flameox's whole environment: only a small allowlist passes
//! (PATH, HOME, USER, LOGNAME, SHELL-free locale and time zone variables,
//! TMPDIR), then the workload's declared `environment` is laid on top. So a
//! secret in the caller's environment (a token, a cloud key) does not reach
//! the workload unless the workload declares it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Variables passed through unchanged when set.
pub const ALLOWED_VARIABLES: &[&str] = &["PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "TMPDIR"];

/// Variables with this prefix pass too (`LC_ALL`, `LC_CTYPE`, …).
pub const ALLOWED_PREFIX: &str = "LC_";

/// Whether an inherited variable passes the allowlist.
pub fn is_allowed(name: &str) -> bool {
    ALLOWED_VARIABLES.contains(&name) || name.starts_with(ALLOWED_PREFIX)
}

/// flameox's own environment, filtered, plus `declared` (declared wins).
pub fn child_environment(declared: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    child_environment_from(std::env::vars(), declared)
}

/// `inherited` filtered by the allowlist, plus `declared` (declared wins).
pub fn child_environment_from(
    inherited: impl IntoIterator<Item = (String, String)>,
    declared: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = inherited
        .into_iter()
        .filter(|(name, _)| is_allowed(name))
        .collect();
    for (name, value) in declared {
        env.insert(name.clone(), value.clone());
    }
    env
}

/// Finds a program the way `execvp` would: a name with a `/` as given,
/// otherwise the first executable regular file on PATH.
pub fn resolve_program(program: &str) -> Option<PathBuf> {
    if program.is_empty() {
        return None;
    }
    if program.contains('/') {
        let path = PathBuf::from(program);
        return is_executable(&path).then_some(path);
    }
    let path_var = std::env::var_os("PATH")?;
    std::env::split_paths(&path_var)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

/// [`resolve_program`] for a workload that runs in `dir`: a relative path
/// with a `/` (`.venv/bin/python`) is taken from `dir`, as the workload's
/// own exec would, and returned absolute.
pub fn resolve_program_in(program: &str, dir: &Path) -> Option<PathBuf> {
    if program.contains('/') && Path::new(program).is_relative() {
        let path = dir.join(program);
        return is_executable(&path).then_some(path);
    }
    resolve_program(program)
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowlist_keeps_locale_and_path_but_not_secrets() {
        assert!(is_allowed("PATH") && is_allowed("LC_ALL") && is_allowed("TMPDIR"));
        assert!(!is_allowed("AWS_SECRET_ACCESS_KEY") && !is_allowed("LD_PRELOAD"));
        let declared = BTreeMap::from([("PATH".to_owned(), "/only".to_owned())]);
        assert_eq!(child_environment(&declared)["PATH"], "/only");
    }

    #[test]
    fn programs_resolve_on_path_or_by_slash() {
        assert!(resolve_program("sh").is_some());
        assert!(resolve_program("/bin/sh").is_some());
        assert!(resolve_program("no-such-program-flameox").is_none());
    }
}
