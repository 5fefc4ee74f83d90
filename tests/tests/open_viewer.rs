//! `flameox open`: the viewer plan names the right viewer, and `--launch`
//! serves the stored original bytes once to the viewer's origin (a test
//! client plays the browser; `xdg-open` may be absent) — never with
//! `--json`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Stdio;

use flameox_tests::{Project, corpus};

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn open_plans_and_launch_serves_the_original_bytes() {
    let project = Project::new();
    let folded = corpus().join("stacks/pyspy_workload.folded.txt");
    let imported = project.json(&["import", folded.to_str().expect("utf-8")]);
    let artifact = imported["artifact_id"]
        .as_str()
        .expect("artifact")
        .to_owned();
    let plan = project.json(&["open", &artifact]);
    assert_eq!(plan["viewer"], "speedscope");

    let perfetto = corpus().join("perfetto/perfetto_pybuilder_trackevent.pftrace");
    let other = project.json(&["import", perfetto.to_str().expect("utf-8")]);
    let plan = project.json(&["open", other["artifact_id"].as_str().expect("artifact")]);
    assert_eq!(plan["viewer"], "Perfetto UI");
    // A run of one artifact opens as that artifact: `latest`, or its id.
    assert_eq!(project.json(&["open", "latest"]), plan);
    let run = other["run_id"].as_str().expect("run id");
    assert_eq!(project.json(&["open", run]), plan);

    // Seed: "It never launches a browser when --json is active": refused
    // before anything is served, pointing at the plan.
    let refused = project.run(&["open", &artifact, "--launch", "--json"]);
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    let err: serde_json::Value = serde_json::from_slice(&refused.stdout).expect("json error");
    assert_eq!(err["code"], "INVALID_ARGUMENTS", "{err}");
    assert_eq!(
        err["recovery"]["next_tool"], "get_native_viewer_plan",
        "{err}"
    );
    assert!(refused.stderr.is_empty(), "nothing served: {refused:?}");

    let mut child = project
        .command(&["open", &artifact, "--launch", "--wait", "60"])
        .env("PATH", "/nonexistent")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn open --launch");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let first = lines.next().expect("a line").expect("utf-8");
    // "serving /name on 127.0.0.1:PORT for 60 s; open:"
    let port: u16 = first
        .split("127.0.0.1:")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("port in {first}"));
    let path = first.split_whitespace().nth(1).expect("path").to_owned();
    let link = lines.next().expect("url line").expect("utf-8");
    assert!(link.contains("speedscope.app/#profileURL="), "{link}");

    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    write!(stream, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").expect("request");
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply).expect("reply");
    let split = reply
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("head");
    let head = String::from_utf8_lossy(&reply[..split]);
    assert!(head.contains("Access-Control-Allow-Origin: https://www.speedscope.app"));
    assert_eq!(&reply[split + 4..], std::fs::read(&folded).expect("corpus"));

    let out = child.wait_with_output().expect("exit");
    assert!(out.status.success());
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        said.trim_end(),
        format!("speedscope fetched {} bytes", reply.len() - split - 4)
    );
}
