//! Classification of synthetic planes: names of planes, lines and runtime
//! calls, device activity with its stream and correlation id, host events
//! by their stats.

use prost::Message;

use super::classify::{DeviceActivity, EventClass, PlaneClassifier};
use super::decode::decode_space;
use super::kinds::{LineKind, PlaneKind, RuntimeCall};
use super::proto::{
    EventMetadataEntry, StatMetadataEntry, XEvent, XEventData, XEventMetadata, XLine, XPlane,
    XSpace, XStat, XStatMetadata, XStatValue,
};
use super::space::Line;
use super::summary::SpaceSummary;

#[test]
fn plane_names_follow_the_xplane_schema() {
    let cases = [
        ("/host:CPU", PlaneKind::HostThreads),
        ("/host:CUPTI", PlaneKind::HostApiTrace),
        ("/host:ROCTRACER", PlaneKind::HostApiTrace),
        ("/host:metadata", PlaneKind::HostMetadata),
        ("/host:python-tracer", PlaneKind::HostPythonTracer),
        ("/host:tfstreamz", PlaneKind::HostOther),
        ("/device:GPU:3", PlaneKind::Gpu { ordinal: Some(3) }),
        ("/device:GPU:", PlaneKind::Gpu { ordinal: None }),
        (
            "/device:TPU:1 SparseCore 0",
            PlaneKind::Tpu { ordinal: Some(1) },
        ),
        ("/device:CUSTOM:Megascale Trace", PlaneKind::CustomDevice),
        ("Task Environment", PlaneKind::TaskEnvironment),
        ("chrome", PlaneKind::Other),
    ];
    for (name, kind) in cases {
        assert_eq!(PlaneKind::of_name(name), kind, "{name}");
    }
    assert!(PlaneKind::CustomDevice.is_device());
    assert!(!PlaneKind::HostThreads.is_device());
}

#[test]
fn line_names_follow_the_xplane_schema() {
    let line = |id: i64, name: &str| Line {
        id,
        name: name.to_string().into(),
        ..Default::default()
    };
    let gpu = PlaneKind::Gpu { ordinal: Some(0) };
    let cases = [
        (
            line(2, "Stream #12(MemcpyH2D,Kernel)"),
            LineKind::Stream {
                stream_id: Some(12),
            },
        ),
        (line(2, "Stream #"), LineKind::Stream { stream_id: Some(2) }),
        (line(0, "XLA Ops"), LineKind::XlaOps),
        (line(0, "Async XLA Ops"), LineKind::AsyncXlaOps),
        (line(0, "XLA Modules"), LineKind::XlaModules),
        (line(0, "Steps"), LineKind::Steps),
        (line(0, "Launch Stats"), LineKind::LaunchStats),
        (line(0, "Framework Ops"), LineKind::FrameworkOps),
        (line(0, "_counters_"), LineKind::Counters),
        (line(0, "mystery"), LineKind::Other),
    ];
    for (l, kind) in &cases {
        assert_eq!(LineKind::of(gpu, l), *kind, "{}", l.name);
    }
    // On a host plane every line is a thread, whatever its name.
    assert_eq!(
        LineKind::of(PlaneKind::HostThreads, &line(0, "Steps")),
        LineKind::HostThread
    );
    assert_eq!(
        LineKind::of(PlaneKind::TaskEnvironment, &line(0, "x")),
        LineKind::Other
    );
}

#[test]
fn runtime_calls_are_told_by_name() {
    let cases = [
        ("hipLaunchKernel", RuntimeCall::KernelLaunch),
        ("hipModuleLaunchKernel", RuntimeCall::KernelLaunch),
        ("cuLaunchKernelEx", RuntimeCall::KernelLaunch),
        ("cudaGraphLaunch", RuntimeCall::GraphLaunch),
        ("hipMemcpyDtoHAsync", RuntimeCall::Memcpy),
        ("hipMemsetAsync", RuntimeCall::Memset),
        ("cuStreamSynchronize", RuntimeCall::Synchronize),
        ("cuMemAlloc_v2", RuntimeCall::Memory),
        ("cuCtxGetDevice", RuntimeCall::Other),
    ];
    for (name, call) in cases {
        assert_eq!(RuntimeCall::of_name(name), call, "{name}");
    }
}

fn stat(id: i64, value: XStatValue) -> XStat {
    XStat {
        metadata_id: id,
        value: Some(value),
    }
}

fn plane(name: &str, lines: Vec<XLine>, events: &[&str], stats: &[&str]) -> XPlane {
    XPlane {
        name: name.into(),
        lines,
        event_metadata: (1..)
            .zip(events)
            .map(|(key, name)| EventMetadataEntry {
                key,
                value: Some(XEventMetadata {
                    id: key,
                    name: name.to_string(),
                    ..Default::default()
                }),
            })
            .collect(),
        stat_metadata: (1..)
            .zip(stats)
            .map(|(key, name)| StatMetadataEntry {
                key,
                value: Some(XStatMetadata {
                    id: key,
                    name: name.to_string(),
                    description: String::new(),
                }),
            })
            .collect(),
        ..Default::default()
    }
}

fn line(id: i64, name: &str, events: Vec<(i64, Vec<XStat>)>) -> XLine {
    XLine {
        id,
        name: name.into(),
        events: events
            .into_iter()
            .map(|(metadata_id, stats)| XEvent {
                metadata_id,
                data: Some(XEventData::OffsetPs(0)),
                duration_ps: 1,
                stats,
            })
            .collect(),
        ..Default::default()
    }
}

#[test]
fn events_are_classified_by_line_and_stats() {
    // Stats: 1 correlation_id, 2 memcpy_details, 3 hlo_op, 4 step_num,
    // 5 group_id, 6 device_ordinal, 7 stream.
    let stats = [
        "correlation_id",
        "memcpy_details",
        "hlo_op",
        "step_num",
        "group_id",
        "device_ordinal",
        "stream",
    ];
    let gpu_lines = vec![
        line(
            4,
            "Stream #4(Kernel,Memcpy)",
            vec![
                (1, vec![stat(1, XStatValue::Uint64Value(9))]),
                (2, vec![stat(2, XStatValue::StrValue("kind:HtoD".into()))]),
                (3, vec![stat(7, XStatValue::Int64Value(8))]),
            ],
        ),
        line(
            0,
            "XLA Ops",
            vec![(1, vec![stat(3, XStatValue::RefValue(3))])],
        ),
        line(0, "XLA Modules", vec![(1, vec![])]),
        line(
            0,
            "Steps",
            vec![(4, vec![stat(5, XStatValue::Int64Value(2))])],
        ),
    ];
    let gpu = plane(
        "/device:GPU:1",
        gpu_lines,
        &["k", "x", "Memset", "17"],
        &stats,
    );
    let host_lines = vec![line(
        1,
        "python",
        vec![
            (1, vec![stat(1, XStatValue::Uint64Value(9))]),
            (2, vec![stat(4, XStatValue::StrValue("3".into()))]),
            (
                3,
                vec![
                    stat(3, XStatValue::StrValue("dot".into())),
                    stat(6, XStatValue::Int64Value(0)),
                ],
            ),
            (4, vec![]),
            (5, vec![]),
        ],
    )];
    let host = plane(
        "/host:CPU",
        host_lines,
        &["hipLaunchKernel", "train", "dot.1", "$a.py:1 f", "TraceMe"],
        &stats,
    );
    let bytes = XSpace {
        planes: vec![gpu, host],
        ..Default::default()
    }
    .encode_to_vec();
    let space = decode_space(&bytes).unwrap();
    let classes: Vec<Vec<EventClass>> = space
        .planes
        .iter()
        .map(|p| {
            let c = PlaneClassifier::new(p);
            p.lines
                .iter()
                .flat_map(|l| l.events.iter().map(move |e| (l, e)))
                .map(|(l, e)| c.classify(l, c.line_kind(l), e).class)
                .collect()
        })
        .collect();
    let device = |correlation_id, stream_id| DeviceActivity {
        device_ordinal: Some(1),
        stream_id: Some(stream_id),
        correlation_id,
        context_id: None,
    };
    assert_eq!(
        classes[0],
        [
            EventClass::DeviceKernel(device(Some(9), 4)),
            EventClass::DeviceMemcpy(device(None, 4)),
            EventClass::DeviceMemset(device(None, 8)),
            EventClass::XlaOp {
                device_ordinal: Some(1),
                on_host: false
            },
            EventClass::XlaModule {
                device_ordinal: Some(1)
            },
            EventClass::Step {
                step_num: Some(17),
                device_ordinal: Some(1)
            },
        ]
    );
    assert_eq!(
        classes[1],
        [
            EventClass::HostRuntimeCall {
                correlation_id: 9,
                call: RuntimeCall::KernelLaunch
            },
            EventClass::Step {
                step_num: Some(3),
                device_ordinal: None
            },
            EventClass::XlaOp {
                device_ordinal: Some(0),
                on_host: true
            },
            EventClass::HostPython,
            EventClass::HostSlice,
        ]
    );
    // The XLA op's hlo_op is a reference resolved to its text; the step's
    // group id is read.
    let gpu = &space.planes[0];
    let c = PlaneClassifier::new(gpu);
    let ops = &gpu.lines[1];
    assert_eq!(
        c.classify(ops, LineKind::XlaOps, &ops.events[0]).hlo_op,
        Some("hlo_op")
    );
    let steps = &gpu.lines[3];
    assert_eq!(
        c.classify(steps, LineKind::Steps, &steps.events[0])
            .group_id,
        Some(2)
    );
    let summary = SpaceSummary::of(&space);
    assert_eq!(summary.events(), 11);
    assert_eq!(summary.planes[1].classes().get("host_python"), Some(&1));
    assert_eq!(
        summary.planes[0].lines[0].classes.get("device_kernel"),
        Some(&1)
    );
}
