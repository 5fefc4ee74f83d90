//! A real S3 API on loopback for the object-store tests: moto's server
//! (`moto[server]`, installed by `.ci/run` into the profilers virtualenv),
//! one process per test on a free port, killed when dropped. Buckets and
//! objects are made with plain HTTP requests (moto does not check request
//! signatures), so the tests need no S3 client of their own; flameox reads
//! them through `object_store` exactly as it reads AWS.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const DEFAULT_VENV: &str = "/var/tmp/flameox-profilers-venv";

/// A running moto server.
pub struct S3Server {
    child: Child,
    port: u16,
    /// A home without `~/.aws`, so nothing of the machine's leaks in.
    home: tempfile::TempDir,
}

impl S3Server {
    /// Starts moto; `None` (the test skips, saying why) when no virtualenv
    /// has it and neither CI nor `FLAMEOX_PROFILERS_VENV` asks for it.
    pub fn start() -> Option<S3Server> {
        let configured = std::env::var_os("FLAMEOX_PROFILERS_VENV");
        let required = configured.is_some() || std::env::var_os("CI").is_some();
        let bin = PathBuf::from(configured.unwrap_or_else(|| DEFAULT_VENV.into()))
            .join("bin/moto_server");
        if !bin.is_file() {
            assert!(
                !required,
                "moto_server not found at {}: .ci/run installs moto[server] into FLAMEOX_PROFILERS_VENV",
                bin.display()
            );
            eprintln!(
                "SKIPPED: no moto_server at {} (CI always has it)",
                bin.display()
            );
            return None;
        }
        let port = free_port();
        let child = Command::new(&bin)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting moto_server");
        let server = S3Server {
            child,
            port,
            home: tempfile::tempdir().expect("temp home"),
        };
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "moto_server did not listen on port {port} within 30 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(server)
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The environment a flameox process reads the server with.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL", self.endpoint()),
            ("AWS_ACCESS_KEY_ID", "testing".into()),
            ("AWS_SECRET_ACCESS_KEY", "testing-secret-value".into()),
            ("AWS_REGION", "us-east-1".into()),
            ("HOME", self.home.path().display().to_string()),
        ]
    }

    /// Applies [`Self::env`] to a command, clearing any other AWS setting.
    pub fn configure(&self, cmd: &mut Command) {
        for (key, _) in std::env::vars() {
            if key.starts_with("AWS_") {
                cmd.env_remove(key);
            }
        }
        for (key, value) in self.env() {
            cmd.env(key, value);
        }
    }

    pub fn create_bucket(&self, bucket: &str) {
        let status = self.request("PUT", &format!("/{bucket}"), &[], "");
        assert_eq!(status, 200, "creating bucket {bucket}");
    }

    pub fn put(&self, bucket: &str, key: &str, body: &[u8]) {
        let status = self.request("PUT", &format!("/{bucket}/{key}"), body, "");
        assert_eq!(status, 200, "putting {bucket}/{key}");
    }

    /// An object anyone may GET without signing (`public-read`), for the
    /// plain HTTP(S) import.
    pub fn put_public(&self, bucket: &str, key: &str, body: &[u8]) {
        let status = self.request(
            "PUT",
            &format!("/{bucket}/{key}"),
            body,
            "x-amz-acl: public-read\r\n",
        );
        assert_eq!(status, 200, "putting {bucket}/{key}");
    }

    /// The keys under `prefix` in `bucket`, sorted (one listing page of
    /// up to 1,000 keys: enough for a test).
    pub fn keys(&self, bucket: &str, prefix: &str) -> Vec<String> {
        let (status, body) = self.exchange(
            "GET",
            &format!("/{bucket}?list-type=2&prefix={prefix}"),
            &[],
            "",
        );
        assert_eq!(status, 200, "listing {bucket}/{prefix}");
        let text = String::from_utf8_lossy(&body);
        let mut keys: Vec<String> = text
            .split("<Key>")
            .skip(1)
            .filter_map(|part| part.split("</Key>").next())
            .map(str::to_owned)
            .collect();
        keys.sort();
        keys
    }

    /// An object's bytes, read as a signed-in client (moto refuses an
    /// anonymous GET of a private object, and checks no signature).
    pub fn get(&self, bucket: &str, key: &str) -> Vec<u8> {
        let (status, body) = self.exchange(
            "GET",
            &format!("/{bucket}/{key}"),
            &[],
            "Authorization: AWS4-HMAC-SHA256 Credential=testing/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00\r\n",
        );
        assert_eq!(status, 200, "getting {bucket}/{key}");
        body
    }

    /// One HTTP/1.1 request with extra header lines; returns the status code.
    pub fn request(&self, method: &str, path: &str, body: &[u8], headers: &str) -> u16 {
        self.exchange(method, path, body, headers).0
    }

    /// One HTTP/1.1 request; returns the status code and the body.
    pub fn exchange(&self, method: &str, path: &str, body: &[u8], headers: &str) -> (u16, Vec<u8>) {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).expect("connecting to moto");
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
            self.port,
            body.len()
        );
        stream.write_all(head.as_bytes()).expect("request head");
        stream.write_all(body).expect("request body");
        let mut response = Vec::new();
        stream.read_to_end(&mut response).expect("response");
        let split = response
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or(response.len());
        let head = String::from_utf8_lossy(&response[..split]);
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let mut payload = response.get(split + 4..).unwrap_or_default().to_vec();
        if head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked")
        {
            payload = dechunk(&payload);
        }
        (status, payload)
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The body of a chunked HTTP/1.1 response.
fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(line_end) = body.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&body[..line_end])
            .ok()
            .and_then(|s| usize::from_str_radix(s.split(';').next().unwrap_or("").trim(), 16).ok())
            .unwrap_or(0);
        if size == 0 {
            break;
        }
        let start = line_end + 2;
        let end = (start + size).min(body.len());
        out.extend_from_slice(&body[start..end]);
        body = body.get(end + 2..).unwrap_or_default();
    }
    out
}

/// A port nothing listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}
