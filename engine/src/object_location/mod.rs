//! Where bytes live when they are not a local path: an `s3://`, `gs://`,
//! `az://` (`abfs[s]://`) or `http[s]://` URL, turned into an
//! `object_store` store and the object path inside it.
//!
//! Credentials come from each cloud's standard places, read by
//! `object_store`'s builders (`AWS_*`, `GOOGLE_*` and gcloud's application
//! default credentials, `AZURE_*` and the Azure CLI), plus the AWS shared
//! configuration files ([`aws_shared_config`]). They are handed to the
//! store and never recorded or printed: a location is shown and recorded as
//! [`ObjectLocation::display`] (no user info, no query string), and every
//! message about it goes through [`ObjectLocation::redact`].

pub mod aws_shared_config;

use std::sync::Arc;
use std::time::Duration;

use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
use object_store::http::HttpBuilder;
use object_store::path::Path as ObjectPath;
use object_store::{ClientConfigKey, ObjectStore, RetryConfig};
use url::Url;

use crate::error::{FlameoxError, Result};

/// The store family a URL names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    S3,
    GoogleCloudStorage,
    Azure,
    Http,
}

impl StoreKind {
    fn of_scheme(scheme: &str) -> Option<StoreKind> {
        Some(match scheme {
            "s3" | "s3a" => StoreKind::S3,
            "gs" => StoreKind::GoogleCloudStorage,
            "az" | "abfs" | "abfss" | "azure" | "adl" => StoreKind::Azure,
            "http" | "https" => StoreKind::Http,
            _ => return None,
        })
    }

    /// Where this store family's credentials come from (for remedies).
    pub fn credentials_hint(self) -> &'static str {
        match self {
            StoreKind::S3 => {
                "AWS credentials come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (or \
                 AWS_PROFILE and ~/.aws/credentials), the region from AWS_REGION, a \
                 non-AWS endpoint from AWS_ENDPOINT_URL"
            }
            StoreKind::GoogleCloudStorage => {
                "Google credentials come from GOOGLE_APPLICATION_CREDENTIALS or \
                 `gcloud auth application-default login`"
            }
            StoreKind::Azure => {
                "Azure credentials come from AZURE_STORAGE_ACCOUNT_NAME with \
                 AZURE_STORAGE_ACCOUNT_KEY, a SAS token, a service principal, or `az login` \
                 with AZURE_USE_AZURE_CLI=true"
            }
            StoreKind::Http => "the URL must be readable with a plain GET",
        }
    }
}

/// The URL schemes flameox reads from, for messages.
pub const SCHEMES: &str = "s3://, gs://, az://, abfs(s)://, http(s)://";

/// A parsed remote location.
#[derive(Debug, Clone)]
pub struct ObjectLocation {
    pub kind: StoreKind,
    /// The URL as it may be shown and recorded: no user info, no query.
    pub display: String,
    pub store: Arc<dyn ObjectStore>,
    /// The object, or the prefix, inside the store (empty for an HTTP URL,
    /// whose store is the URL itself).
    pub path: ObjectPath,
    /// The URL ends with `/`: it names a folder (prefix), not an object.
    pub names_prefix: bool,
    /// S3 only: no key pair, web identity or container credentials were
    /// configured, so `object_store` asks the instance metadata service.
    pub credentials_missing: bool,
    /// Strings of the URL that must never appear in a message.
    secrets: Vec<String>,
}

/// Whether an import argument is a URL rather than a local path: it starts
/// with `scheme://`.
pub fn looks_like_url(text: &str) -> bool {
    let Some((scheme, _)) = text.split_once("://") else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// How long a connection may take to open; a request's whole body may take
/// `REQUEST_TIMEOUT` before `object_store` resumes it from where it stopped.
const CONNECT_TIMEOUT: &str = "10s";
const REQUEST_TIMEOUT: &str = "10m";

/// `builder` with both timeouts set through its own `with_config` (each
/// store's builder names client keys its own way).
fn with_timeouts<B>(builder: B, set: impl Fn(B, ClientConfigKey, &str) -> B) -> B {
    let builder = set(builder, ClientConfigKey::Timeout, REQUEST_TIMEOUT);
    set(builder, ClientConfigKey::ConnectTimeout, CONNECT_TIMEOUT)
}

/// Retries of one request (and resumptions of one body): a few, within
/// half a minute, so an unreachable endpoint is answered in seconds
/// rather than `object_store`'s default three minutes.
fn retry() -> RetryConfig {
    RetryConfig {
        max_retries: 5,
        retry_timeout: Duration::from_secs(30),
        ..RetryConfig::default()
    }
}

impl ObjectLocation {
    /// Parses `text` and builds its store from the process environment.
    pub fn parse(text: &str) -> Result<ObjectLocation> {
        ObjectLocation::parse_with_env(text, &|key| std::env::var(key).ok())
    }

    /// [`Self::parse`] with the environment given (tests).
    pub fn parse_with_env(
        text: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ObjectLocation> {
        let url = Url::parse(text)
            .map_err(|e| FlameoxError::invalid_argument("path", format!("not a valid URL: {e}")))?;
        let kind = StoreKind::of_scheme(url.scheme()).ok_or_else(|| {
            FlameoxError::invalid_argument(
                "path",
                format!("flameox does not read `{}://` URLs", url.scheme()),
            )
            .remedy(format!("use one of {SCHEMES}, or a local path"))
        })?;
        let mut secrets = Vec::new();
        if let Some(query) = url.query().filter(|q| !q.is_empty()) {
            secrets.push(query.to_owned());
        }
        if let Some(password) = url.password().filter(|p| !p.is_empty()) {
            secrets.push(password.to_owned());
        }
        if kind == StoreKind::Http && !url.username().is_empty() {
            secrets.push(url.username().to_owned());
        }
        let display = display_of(&url, kind);
        let names_prefix = url.path().ends_with('/') || url.path().is_empty();
        let mut credentials_missing = false;
        let built = match kind {
            StoreKind::S3 => s3_store(&url, env).map(|(store, missing)| {
                credentials_missing = missing;
                store
            }),
            StoreKind::GoogleCloudStorage => with_timeouts(
                GoogleCloudStorageBuilder::from_env()
                    .with_url(url.as_str())
                    .with_retry(retry()),
                |b, key, value| b.with_config(GoogleConfigKey::Client(key), value),
            )
            .build()
            .map(|s| Arc::new(s) as Arc<dyn ObjectStore>),
            StoreKind::Azure => with_timeouts(
                MicrosoftAzureBuilder::from_env()
                    .with_url(url.as_str())
                    .with_retry(retry()),
                |b, key, value| b.with_config(AzureConfigKey::Client(key), value),
            )
            .build()
            .map(|s| Arc::new(s) as Arc<dyn ObjectStore>),
            StoreKind::Http => with_timeouts(
                HttpBuilder::new()
                    .with_url(url.as_str())
                    .with_retry(retry()),
                |b, key, value| b.with_config(key, value),
            )
            .with_config(
                ClientConfigKey::AllowHttp,
                (url.scheme() == "http").to_string(),
            )
            .build()
            .map(|s| Arc::new(s) as Arc<dyn ObjectStore>),
        };
        let partial = ObjectLocation {
            kind,
            display,
            store: Arc::new(object_store::memory::InMemory::new()),
            path: ObjectPath::default(),
            names_prefix,
            credentials_missing: false,
            secrets,
        };
        let store = built.map_err(|e| {
            FlameoxError::invalid_argument(
                "path",
                format!(
                    "cannot use {}: {}",
                    partial.display,
                    partial.redact(&e.to_string())
                ),
            )
            .remedy(kind.credentials_hint())
        })?;
        let path = match kind {
            // The HTTP store's base is the whole URL (query included, so a
            // presigned URL works); the object is the base itself.
            StoreKind::Http => ObjectPath::default(),
            _ => ObjectPath::from_url_path(url.path()).map_err(|e| {
                FlameoxError::invalid_argument(
                    "path",
                    format!("{} is not a valid object path: {e}", partial.display),
                )
            })?,
        };
        Ok(ObjectLocation {
            store,
            path,
            credentials_missing,
            ..partial
        })
    }

    /// `message` with every secret part of the URL replaced.
    pub fn redact(&self, message: &str) -> String {
        self.secrets.iter().fold(message.to_owned(), |m, s| {
            m.replace(s.as_str(), "<redacted>")
        })
    }

    /// The name a single object is stored under: its last path segment.
    pub fn file_name(&self) -> String {
        let last = self
            .display
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or_default();
        if last.is_empty() || self.display.ends_with("://") {
            "download".to_owned()
        } else {
            last.to_owned()
        }
    }
}

/// The URL without user info, query or fragment.
fn display_of(url: &Url, kind: StoreKind) -> String {
    let mut shown = url.clone();
    shown.set_query(None);
    shown.set_fragment(None);
    if kind == StoreKind::Http {
        let _ = shown.set_username("");
    }
    let _ = shown.set_password(None);
    shown.to_string()
}

/// An S3 store: the environment first, then the AWS shared configuration
/// files; an `http://` endpoint (a local S3 such as MinIO or moto) is
/// allowed without a second switch, as the AWS CLI does. Also says
/// whether no credentials were configured at all.
fn s3_store(
    url: &Url,
    env: &dyn Fn(&str) -> Option<String>,
) -> object_store::Result<(Arc<dyn ObjectStore>, bool)> {
    let mut builder = with_timeouts(
        AmazonS3Builder::from_env()
            .with_url(url.as_str())
            .with_retry(retry()),
        |b, key, value| b.with_config(AmazonS3ConfigKey::Client(key), value),
    );
    let profile = aws_shared_config::load_profile(env);
    let fallbacks = [
        (AmazonS3ConfigKey::AccessKeyId, profile.access_key_id),
        (
            AmazonS3ConfigKey::SecretAccessKey,
            profile.secret_access_key,
        ),
        (AmazonS3ConfigKey::Token, profile.session_token),
        (AmazonS3ConfigKey::Region, profile.region),
        (AmazonS3ConfigKey::Endpoint, profile.endpoint_url),
    ];
    // Keys from the files only count as a pair: a key id from the
    // environment with a secret from a file would sign as nobody.
    let keys_from_env = builder
        .get_config_value(&AmazonS3ConfigKey::AccessKeyId)
        .is_some();
    for (key, value) in fallbacks {
        let is_credential = matches!(
            key,
            AmazonS3ConfigKey::AccessKeyId
                | AmazonS3ConfigKey::SecretAccessKey
                | AmazonS3ConfigKey::Token
        );
        if is_credential && keys_from_env {
            continue;
        }
        if let Some(value) = value
            && builder.get_config_value(&key).is_none()
        {
            builder = builder.with_config(key, value);
        }
    }
    if builder
        .get_config_value(&AmazonS3ConfigKey::Endpoint)
        .is_some_and(|e| e.starts_with("http://"))
    {
        builder = builder.with_config(
            AmazonS3ConfigKey::Client(ClientConfigKey::AllowHttp),
            "true",
        );
    }
    let missing = builder
        .get_config_value(&AmazonS3ConfigKey::AccessKeyId)
        .is_none()
        && [
            "AWS_WEB_IDENTITY_TOKEN_FILE",
            "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
            "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        ]
        .iter()
        .all(|var| env(var).is_none());
    Ok((Arc::new(builder.build()?), missing))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn urls_are_told_from_paths() {
        for url in ["s3://b/k", "gs://b/", "https://h/x.json", "az://c/p"] {
            assert!(looks_like_url(url), "{url}");
        }
        for path in ["trace.json", "./s3:/b", "/tmp/x://y", "C:\\x", "1s3://x"] {
            assert!(!looks_like_url(path), "{path}");
        }
    }

    #[test]
    fn secrets_are_neither_shown_nor_kept_in_messages() {
        let url = "https://user:pw@example.com/traces/rank0.json?X-Amz-Signature=abc123&X-Amz-Credential=AKIA";
        let location = ObjectLocation::parse_with_env(url, &no_env).unwrap();
        assert_eq!(location.display, "https://example.com/traces/rank0.json");
        assert_eq!(location.file_name(), "rank0.json");
        let message = format!("GET {url} failed");
        let redacted = location.redact(&message);
        assert!(!redacted.contains("abc123"), "{redacted}");
        assert!(!redacted.contains("pw@"), "{redacted}");
        assert!(!location.names_prefix);
    }

    #[test]
    fn s3_urls_name_a_bucket_and_a_key_or_a_prefix() {
        let object =
            ObjectLocation::parse_with_env("s3://bucket/runs/job%201/rank0.json", &no_env).unwrap();
        assert_eq!(object.kind, StoreKind::S3);
        assert_eq!(object.path.as_ref(), "runs/job 1/rank0.json");
        assert!(!object.names_prefix);
        assert_eq!(object.file_name(), "rank0.json");
        let prefix = ObjectLocation::parse_with_env("s3://bucket/runs/", &no_env).unwrap();
        assert!(prefix.names_prefix);
        assert_eq!(prefix.file_name(), "runs");
        let bucket = ObjectLocation::parse_with_env("s3://bucket", &no_env).unwrap();
        assert!(bucket.names_prefix);
        assert_eq!(bucket.file_name(), "bucket");
    }

    #[test]
    fn unknown_schemes_are_refused_with_the_ones_read() {
        let err = ObjectLocation::parse_with_env("ftp://h/x", &no_env).unwrap_err();
        assert_eq!(err.code, crate::error::ErrorCode::InvalidArguments);
        assert!(
            err.remediation.iter().any(|r| r.contains("s3://")),
            "{err:?}"
        );
    }
}
