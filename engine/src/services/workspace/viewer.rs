//! Opening an artifact in its native viewer (`flameox open --launch`).
//!
//! Perfetto UI and speedscope run in the browser and can fetch a trace
//! from a URL, so launching means: serve the stored original bytes once on
//! 127.0.0.1 with the CORS header the viewer's origin needs, and hand out
//! the viewer's deep link. Perfetto UI only accepts `?url=` from
//! `http://127.0.0.1:9001` (its content security policy), so that port is
//! fixed for it. Nothing leaves the machine; the server stops after one
//! successful download or at its deadline.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::error::{ErrorCode, FlameoxError, Result};
use crate::store;
use crate::workspace::Workspace;

/// The port Perfetto UI fetches `?url=` traces from.
pub const PERFETTO_UI_PORT: u16 = 9001;
const MAX_REQUEST_HEAD: usize = 16 * 1024;

/// A viewer that can be pointed at a local URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub viewer: &'static str,
    /// The path the bytes are served under (`/name`).
    pub path: String,
    origin: &'static str,
    port: u16,
    payload: PathBuf,
}

impl Launch {
    /// The deep link that makes the viewer fetch the served bytes.
    pub fn url(&self, port: u16) -> String {
        let local = format!("http://127.0.0.1:{port}{}", self.path);
        match self.viewer {
            "Perfetto UI" => format!("https://ui.perfetto.dev/#!/?url={local}"),
            _ => format!("https://www.speedscope.app/#profileURL={}", percent(&local)),
        }
    }

    /// Binds the local server (Perfetto UI: port 9001; else any free port).
    pub fn bind(&self) -> Result<TcpListener> {
        TcpListener::bind(("127.0.0.1", self.port)).map_err(|e| {
            FlameoxError::new(
                ErrorCode::CapabilityUnavailable,
                format!("cannot listen on 127.0.0.1:{}: {e}", self.port),
            )
            .remedy("stop whatever uses the port, or open the file in the viewer by hand")
        })
    }
}

fn percent(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// What `--launch` would serve for `artifact_id`, or why it cannot.
pub fn prepare_launch(ws: &Workspace, target: &str) -> Result<Launch> {
    let artifact_id = artifact_of(ws, target)?;
    let record = store::read_artifact(ws, &artifact_id)?;
    let (viewer, origin, port) = match record.kind.as_str() {
        "chrome_json" | "perfetto_protobuf" => {
            ("Perfetto UI", "https://ui.perfetto.dev", PERFETTO_UI_PORT)
        }
        "speedscope_json" | "folded_stacks" | "chrome_cpuprofile" | "gecko_profile" => {
            ("speedscope", "https://www.speedscope.app", 0)
        }
        other => {
            return Err(FlameoxError::new(
                ErrorCode::CapabilityUnavailable,
                format!("no browser viewer opens {other} artifacts from a URL"),
            )
            .detail("kind", other.to_owned())
            .remedy("flameox analyze hotspots <run> --flamegraph out.svg"));
        }
    };
    let name: String = record
        .original_name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    // A store-backed workspace may hold only the record of an artifact
    // another workspace imported.
    crate::shared_store::ensure_payload(ws, &record)?;
    Ok(Launch {
        viewer,
        path: format!("/{}", if name.is_empty() { "trace" } else { &name }),
        origin,
        port,
        payload: store::payload_path(ws, &record),
    })
}

/// Serves the payload until one complete download or `deadline`; returns
/// the bytes sent (0 when nobody fetched it in time).
pub fn serve(listener: &TcpListener, launch: &Launch, deadline: Duration) -> Result<u64> {
    let until = Instant::now() + deadline;
    listener
        .set_nonblocking(true)
        .map_err(|e| FlameoxError::internal(format!("listener: {e}")))?;
    while Instant::now() < until {
        match listener.accept() {
            Ok((stream, _)) => {
                if let Ok(Some(sent)) = answer(stream, launch) {
                    return Ok(sent);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => return Err(FlameoxError::internal(format!("accepting: {e}"))),
        }
    }
    Ok(0)
}

/// Answers one request; `Some(bytes)` when the payload was sent.
fn answer(stream: TcpStream, launch: &Launch) -> io::Result<Option<u64>> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut head = String::new();
    while !head.ends_with("\r\n\r\n") && head.len() < MAX_REQUEST_HEAD {
        if reader.read_line(&mut head)? == 0 {
            break;
        }
    }
    let mut words = head.split_whitespace();
    let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let cors = format!(
        "Access-Control-Allow-Origin: {}\r\nAccess-Control-Allow-Methods: GET, OPTIONS\r\n\
         Access-Control-Allow-Headers: *\r\n",
        launch.origin
    );
    let mut out = stream;
    match (method, path == launch.path) {
        ("OPTIONS", _) => {
            write!(
                out,
                "HTTP/1.1 204 No Content\r\n{cors}Content-Length: 0\r\n\r\n"
            )?;
            Ok(None)
        }
        ("GET", true) => {
            let mut file = File::open(&launch.payload)?;
            let len = file.metadata()?.len();
            write!(
                out,
                "HTTP/1.1 200 OK\r\n{cors}Content-Type: application/octet-stream\r\n\
                 Content-Length: {len}\r\nConnection: close\r\n\r\n"
            )?;
            let sent = io::copy(&mut file, &mut out)?;
            out.flush()?;
            Ok((sent == len).then_some(sent))
        }
        _ => {
            write!(
                out,
                "HTTP/1.1 404 Not Found\r\n{cors}Content-Length: 0\r\n\r\n"
            )?;
            Ok(None)
        }
    }
}

/// The artifact a viewer opens for `target`: an artifact id as given, or
/// the one artifact of a run (`latest`, a run id or its prefix). A run of
/// several artifacts (ranks) is refused with their ids, one per viewer.
pub fn artifact_of(ws: &Workspace, target: &str) -> Result<String> {
    if target.starts_with("sha256:") || !crate::runs::is_run_reference(target) {
        return Ok(target.to_owned());
    }
    let run = crate::runs::read_run(ws, target)?;
    match run.artifacts.as_slice() {
        [one] => Ok(one.artifact_id.clone()),
        many => Err(crate::FlameoxError::invalid_argument(
            "target",
            format!(
                "run {} has {} artifacts and a viewer opens one: name one of {}",
                run.run_id,
                many.len(),
                many.iter()
                    .take(8)
                    .map(|a| a.artifact_id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn the_payload_is_served_once_with_the_viewers_origin() {
        let dir = tempfile::tempdir().expect("tempdir");
        let payload = dir.path().join("p");
        std::fs::write(&payload, b"trace bytes").expect("write");
        let launch = Launch {
            viewer: "speedscope",
            path: "/p.json".into(),
            origin: "https://www.speedscope.app",
            port: 0,
            payload,
        };
        let listener = launch.bind().expect("bind");
        let port = listener.local_addr().expect("addr").port();
        assert!(
            launch
                .url(port)
                .contains("profileURL=http%3A%2F%2F127.0.0.1%3A")
        );
        let client = std::thread::spawn(move || {
            let get = |path: &str| {
                let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
                write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").expect("send");
                let mut reply = String::new();
                s.read_to_string(&mut reply).expect("read");
                reply
            };
            (get("/other"), get("/p.json"))
        });
        let sent = serve(&listener, &launch, Duration::from_secs(20)).expect("serve");
        let (missing, found) = client.join().expect("client");
        assert!(missing.starts_with("HTTP/1.1 404"));
        assert!(found.starts_with("HTTP/1.1 200"));
        assert!(found.contains("Access-Control-Allow-Origin: https://www.speedscope.app"));
        assert!(found.ends_with("trace bytes"));
        assert_eq!(sent, 11);
    }
}
