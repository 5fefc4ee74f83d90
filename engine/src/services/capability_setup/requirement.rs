//! Python distribution requirements as a workload declares them
//! (`name[extras] >=1.0, <2 ; marker`) and whether an installed version
//! satisfies them. Versions compare by PEP 440's release segments, then
//! dev < pre (a, b, rc) < final < post; local labels (`+cpu`) are ignored.
//! Environment markers are not evaluated: a requirement with one is
//! checked as if its marker held, and the check says so.

use std::cmp::Ordering;

/// One declared requirement, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Requirement {
    /// The distribution name as declared.
    pub name: String,
    /// PEP 503 normalized name (lowercase, runs of `-_.` as `-`).
    pub normalized: String,
    /// (operator, version) pairs, all of which must hold.
    pub specifiers: Vec<(String, String)>,
    /// The declared text after `;`, if any (not evaluated).
    pub marker: Option<String>,
}

/// PEP 503 name normalization.
pub fn normalize_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut separator = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            separator = true;
        } else {
            if separator && !out.is_empty() {
                out.push('-');
            }
            separator = false;
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

const OPERATORS: [&str; 8] = ["===", "~=", "==", "!=", "<=", ">=", "<", ">"];

/// Parses `name[extras] spec, spec ; marker`; `Err` says what is wrong.
pub fn parse(text: &str) -> Result<Requirement, String> {
    let (body, marker) = match text.split_once(';') {
        Some((b, m)) => (b.trim(), Some(m.trim().to_owned())),
        None => (text.trim(), None),
    };
    let name_end = body
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        .unwrap_or(body.len());
    let name = &body[..name_end];
    if name.is_empty() {
        return Err(format!("`{text}` does not start with a distribution name"));
    }
    let mut rest = body[name_end..].trim_start();
    if let Some(after) = rest.strip_prefix('[') {
        let close = after
            .find(']')
            .ok_or_else(|| format!("`{text}`: extras are not closed with `]`"))?;
        rest = after[close + 1..].trim_start();
    }
    if rest.starts_with('@') {
        return Err(format!(
            "`{text}`: direct URLs are not allowed; name a version on the package index"
        ));
    }
    let mut specifiers = Vec::new();
    for part in rest.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let op = OPERATORS
            .iter()
            .find(|op| part.starts_with(**op))
            .ok_or_else(|| format!("`{part}` in `{text}` is not a version specifier"))?;
        let version = part[op.len()..].trim();
        if version.is_empty()
            || !version.chars().all(|c| {
                c.is_ascii_alphanumeric() || matches!(c, '.' | '*' | '+' | '-' | '_' | '!')
            })
        {
            return Err(format!("`{part}` in `{text}` has no valid version"));
        }
        specifiers.push(((*op).to_owned(), version.to_owned()));
    }
    Ok(Requirement {
        name: name.to_owned(),
        normalized: normalize_name(name),
        specifiers,
        marker,
    })
}

/// A version reduced to what ordering needs.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Version {
    epoch: u64,
    release: Vec<u64>,
    /// (rank, number): dev = 0, a = 1, b = 2, rc = 3, final = 4, post = 5.
    stage: (u8, u64),
}

fn parse_version(text: &str) -> Option<Version> {
    let text = text.trim().to_ascii_lowercase();
    let text = text.split('+').next().unwrap_or("");
    let text = text.strip_prefix('v').unwrap_or(text);
    let (epoch, text) = match text.split_once('!') {
        Some((e, rest)) => (e.parse().ok()?, rest),
        None => (0, text),
    };
    let release_end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let release: Vec<u64> = text[..release_end]
        .trim_end_matches('.')
        .split('.')
        .map(|s| s.parse().ok())
        .collect::<Option<_>>()?;
    let suffix = text[release_end..].trim_start_matches(['.', '-', '_']);
    let stage = if suffix.is_empty() {
        (4, 0)
    } else {
        let letters_end = suffix
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(suffix.len());
        let number = suffix[letters_end..]
            .trim_start_matches(['.', '-', '_'])
            .parse()
            .unwrap_or(0);
        let rank = match &suffix[..letters_end] {
            "dev" => 0,
            "a" | "alpha" => 1,
            "b" | "beta" => 2,
            "rc" | "c" | "pre" | "preview" => 3,
            "post" | "rev" | "r" => 5,
            _ => return None,
        };
        (rank, number)
    };
    Some(Version {
        epoch,
        release,
        stage,
    })
}

fn compare(a: &Version, b: &Version) -> Ordering {
    let width = a.release.len().max(b.release.len());
    let at = |v: &Version, i: usize| v.release.get(i).copied().unwrap_or(0);
    a.epoch
        .cmp(&b.epoch)
        .then_with(|| {
            (0..width)
                .map(|i| at(a, i).cmp(&at(b, i)))
                .find(|o| *o != Ordering::Equal)
                .unwrap_or(Ordering::Equal)
        })
        .then(a.stage.cmp(&b.stage))
}

/// Whether `installed` matches the prefix `pattern` of an `==X.Y.*`.
fn prefix_matches(installed: &Version, pattern: &str) -> bool {
    let Some(prefix) = parse_version(pattern.trim_end_matches(".*")) else {
        return false;
    };
    installed.epoch == prefix.epoch
        && prefix
            .release
            .iter()
            .enumerate()
            .all(|(i, p)| installed.release.get(i).copied().unwrap_or(0) == *p)
}

/// Whether one specifier holds for `installed`; `None` when a version
/// cannot be read.
fn holds(installed: &Version, op: &str, version: &str) -> Option<bool> {
    if op == "===" {
        return Some(false);
    }
    if version.ends_with(".*") {
        let matched = prefix_matches(installed, version);
        return match op {
            "==" => Some(matched),
            "!=" => Some(!matched),
            _ => None,
        };
    }
    let wanted = parse_version(version)?;
    let order = compare(installed, &wanted);
    Some(match op {
        "==" => order == Ordering::Equal,
        "!=" => order != Ordering::Equal,
        "<=" => order != Ordering::Greater,
        ">=" => order != Ordering::Less,
        "<" => order == Ordering::Less,
        ">" => order == Ordering::Greater,
        "~=" => {
            // ~=X.Y.Z is >=X.Y.Z, ==X.Y.*
            let mut prefix = wanted.release.clone();
            prefix.pop();
            if prefix.is_empty() {
                return None;
            }
            let prefix_text: Vec<String> = prefix.iter().map(u64::to_string).collect();
            order != Ordering::Less && prefix_matches(installed, &prefix_text.join("."))
        }
        _ => return None,
    })
}

impl Requirement {
    /// Whether `installed` (a version string) satisfies every specifier;
    /// `Err` when a version cannot be compared.
    pub fn satisfied_by(&self, installed: &str) -> Result<bool, String> {
        if self.specifiers.iter().any(|(op, _)| op == "===") {
            return Ok(self
                .specifiers
                .iter()
                .all(|(op, v)| op == "===" && v == installed));
        }
        let version = parse_version(installed)
            .ok_or_else(|| format!("installed version `{installed}` is not a PEP 440 version"))?;
        for (op, wanted) in &self.specifiers {
            match holds(&version, op, wanted) {
                Some(true) => {}
                Some(false) => return Ok(false),
                None => return Err(format!("`{op}{wanted}` cannot be compared")),
            }
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_extras_specifiers_and_markers() {
        let r = parse("Foo_Bar.baz[cli] >=1.0, <2 ; python_version>'3.8'").unwrap();
        assert_eq!(r.name, "Foo_Bar.baz");
        assert_eq!(r.normalized, "foo-bar-baz");
        assert_eq!(
            r.specifiers,
            vec![(">=".into(), "1.0".into()), ("<".into(), "2".into())]
        );
        assert_eq!(r.marker.as_deref(), Some("python_version>'3.8'"));
        assert!(parse("pkg @ https://x/y.whl").is_err());
        assert!(parse(">=1").is_err());
        assert!(parse("pkg ~ 1").is_err());
        assert!(parse("definitely-not-installed-pkg>=1.0").is_ok());
    }

    #[test]
    fn versions_compare_by_release_then_stage() {
        let r = |s: &str| parse(s).unwrap();
        assert!(r("x>=1.0").satisfied_by("1.0").unwrap());
        assert!(r("x>=1.0").satisfied_by("1.10").unwrap());
        assert!(!r("x>=1.10").satisfied_by("1.9").unwrap());
        assert!(!r("x>=1.0").satisfied_by("1.0rc1").unwrap());
        assert!(r("x>1.0").satisfied_by("1.0.post1").unwrap());
        assert!(r("x==1.0").satisfied_by("1.0.0").unwrap());
        assert!(r("x==2.1.*").satisfied_by("2.1.7").unwrap());
        assert!(!r("x==2.1.*").satisfied_by("2.2").unwrap());
        assert!(r("x~=2.2").satisfied_by("2.9").unwrap());
        assert!(!r("x~=2.2").satisfied_by("3.0").unwrap());
        assert!(!r("x~=1.4.5").satisfied_by("1.5.0").unwrap());
        assert!(r("x!=1.5,<2").satisfied_by("1.6+cpu").unwrap());
        assert!(r("x").satisfied_by("0.0.1").unwrap());
        assert!(r("x>=1").satisfied_by("not a version").is_err());
    }
}
