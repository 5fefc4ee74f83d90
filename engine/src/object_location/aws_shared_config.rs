//! The AWS shared configuration files (`~/.aws/credentials`, `~/.aws/config`)
//! that every AWS tool reads, which `object_store` does not: without them a
//! user whose `aws s3 ls` works would still need to export keys by hand.
//!
//! Only what a request needs is read — the profile's access key, secret,
//! session token, region and endpoint — and only as a fallback behind the
//! environment (the environment always wins, as in the AWS CLI). Values are
//! handed to the store builder and never stored or printed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The settings of one profile, from both files.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct AwsProfile {
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    pub session_token: Option<String>,
    pub region: Option<String>,
    pub endpoint_url: Option<String>,
}

/// Reads the profile named by `AWS_PROFILE` (or `default`) from the files
/// named by `AWS_SHARED_CREDENTIALS_FILE` / `AWS_CONFIG_FILE` (or the ones
/// under `~/.aws`). Missing or unreadable files read as empty.
pub fn load_profile(env: &dyn Fn(&str) -> Option<String>) -> AwsProfile {
    let profile = env("AWS_PROFILE").unwrap_or_else(|| "default".to_owned());
    let home = env("HOME").map(PathBuf::from);
    let file = |var: &str, name: &str| -> Option<PathBuf> {
        env(var)
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".aws").join(name)))
    };
    let credentials = file("AWS_SHARED_CREDENTIALS_FILE", "credentials")
        .map(|p| read_ini(&p))
        .unwrap_or_default();
    let config = file("AWS_CONFIG_FILE", "config")
        .map(|p| read_ini(&p))
        .unwrap_or_default();
    // `credentials` names sections by profile; `config` as `profile NAME`
    // except for `default`.
    let config_section = if profile == "default" {
        "default".to_owned()
    } else {
        format!("profile {profile}")
    };
    let from_credentials = credentials.get(&profile);
    let from_config = config.get(&config_section);
    let value = |key: &str| {
        from_credentials
            .and_then(|s| s.get(key))
            .or_else(|| from_config.and_then(|s| s.get(key)))
            .cloned()
    };
    AwsProfile {
        access_key_id: value("aws_access_key_id"),
        secret_access_key: value("aws_secret_access_key"),
        session_token: value("aws_session_token"),
        region: value("region"),
        endpoint_url: value("endpoint_url"),
    }
}

type Sections = BTreeMap<String, BTreeMap<String, String>>;

fn read_ini(path: &Path) -> Sections {
    // A credentials file is a few hundred bytes; a huge one is not read.
    const LARGEST: u64 = 1024 * 1024;
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() && meta.len() <= LARGEST => {}
        _ => return Sections::new(),
    }
    std::fs::read_to_string(path)
        .map(|text| parse_ini(&text))
        .unwrap_or_default()
}

/// The INI dialect of the AWS files: `[section]`, `key = value`, `#` and
/// `;` comments; indented lines (nested `s3 =` blocks) are skipped.
fn parse_ini(text: &str) -> Sections {
    let mut sections = Sections::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if line.starts_with([' ', '\t']) {
            continue;
        }
        let line = line.trim();
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let name = name.split_whitespace().collect::<Vec<_>>().join(" ");
            sections.entry(name.clone()).or_default();
            current = Some(name);
            continue;
        }
        let (Some(section), Some((key, value))) = (&current, line.split_once('=')) else {
            continue;
        };
        let value = value.trim();
        if value.is_empty() {
            continue;
        }
        sections
            .entry(section.clone())
            .or_default()
            .insert(key.trim().to_ascii_lowercase(), value.to_owned());
    }
    sections
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &[(&str, String)]) -> impl Fn(&str) -> Option<String> + use<> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn the_named_profile_comes_from_both_files_and_credentials_win() {
        let dir = tempfile::tempdir().unwrap();
        let credentials = dir.path().join("credentials");
        let config = dir.path().join("config");
        std::fs::write(
            &credentials,
            "[default]\naws_access_key_id = DEF\naws_secret_access_key = defsecret\n\n\
             # ci\n[ci]\naws_access_key_id=CIKEY\naws_secret_access_key = cisecret\n\
             aws_session_token = tok\n",
        )
        .unwrap();
        std::fs::write(
            &config,
            "[default]\nregion = eu-west-1\n[profile ci]\nregion = us-east-2\n\
             endpoint_url = http://127.0.0.1:9000\naws_access_key_id = IGNORED\ns3 =\n  addressing_style = path\n",
        )
        .unwrap();
        let files = [
            (
                "AWS_SHARED_CREDENTIALS_FILE",
                credentials.display().to_string(),
            ),
            ("AWS_CONFIG_FILE", config.display().to_string()),
        ];
        let default = load_profile(&env_of(&files));
        assert_eq!(default.access_key_id.as_deref(), Some("DEF"));
        assert_eq!(default.region.as_deref(), Some("eu-west-1"));
        assert_eq!(default.session_token, None);

        let mut with_profile = files.to_vec();
        with_profile.push(("AWS_PROFILE", "ci".to_owned()));
        let ci = load_profile(&env_of(&with_profile));
        assert_eq!(ci.access_key_id.as_deref(), Some("CIKEY"));
        assert_eq!(ci.secret_access_key.as_deref(), Some("cisecret"));
        assert_eq!(ci.session_token.as_deref(), Some("tok"));
        assert_eq!(ci.region.as_deref(), Some("us-east-2"));
        assert_eq!(ci.endpoint_url.as_deref(), Some("http://127.0.0.1:9000"));
    }

    #[test]
    fn missing_files_and_unknown_profiles_read_as_empty() {
        let dir = tempfile::tempdir().unwrap();
        let env = env_of(&[
            ("HOME", dir.path().display().to_string()),
            ("AWS_PROFILE", "nope".to_owned()),
        ]);
        assert_eq!(load_profile(&env), AwsProfile::default());
    }
}
