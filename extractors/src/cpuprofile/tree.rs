//! The V8 call tree: typed `.cpuprofile` structs, parent links (from
//! `children`, or `parent` as Chrome's trace `ProfileChunk` writes them),
//! and one stack per node, with the synthetic `(root)` dropped.

use std::collections::HashMap;

use serde::Deserialize;

use crate::api::LimitationLog;
use crate::json_doc::{Int, lenient_int};
use crate::stacks::StackAggregator;

use super::{ROOT, UNKNOWN_NODE};

#[derive(Debug, Deserialize)]
pub(super) struct CpuProfile {
    #[serde(default)]
    pub(super) nodes: Option<Vec<Node>>,
    #[serde(rename = "startTime", default, deserialize_with = "lenient_int")]
    pub(super) start_time: Option<i64>,
    #[serde(rename = "endTime", default, deserialize_with = "lenient_int")]
    pub(super) end_time: Option<i64>,
    #[serde(default)]
    pub(super) samples: Option<Vec<Int>>,
    #[serde(rename = "timeDeltas", default)]
    pub(super) time_deltas: Option<Vec<Int>>,
}

#[derive(Debug, Deserialize)]
pub(super) struct Node {
    pub(super) id: Int,
    #[serde(rename = "callFrame", default)]
    pub(super) call_frame: Option<CallFrame>,
    #[serde(rename = "hitCount", default, deserialize_with = "lenient_int")]
    pub(super) hit_count: Option<i64>,
    #[serde(default)]
    pub(super) children: Option<Vec<Int>>,
    #[serde(default, deserialize_with = "lenient_int")]
    pub(super) parent: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct CallFrame {
    #[serde(rename = "functionName", default)]
    pub(super) function_name: Option<String>,
    #[serde(default)]
    pub(super) url: Option<String>,
    #[serde(rename = "lineNumber", default, deserialize_with = "lenient_int")]
    pub(super) line_number: Option<i64>,
}

/// (function, file, 1-based line, language) of a V8 call frame.
pub(super) fn frame_of(cf: &CallFrame) -> (&str, Option<&str>, Option<i64>, &'static str) {
    let name = cf.function_name.as_deref().unwrap_or("");
    let url = cf.url.as_deref().filter(|u| !u.is_empty());
    let line = cf
        .line_number
        .filter(|l| *l >= 0)
        .map(|l| l.saturating_add(1));
    let vm_state = name.starts_with('(') && name.ends_with(')');
    let language = match url {
        Some(_) => "javascript",
        None if vm_state => "unknown",
        None => "native",
    };
    let name = if name.is_empty() { "(anonymous)" } else { name };
    (name, url, line, language)
}

/// Node index by id and stack id per node (`None` for a dropped `(root)`).
pub(super) fn call_tree(
    nodes: &[Node],
    agg: &mut StackAggregator,
    log: &mut LimitationLog,
) -> (HashMap<i64, usize>, Vec<Option<u32>>) {
    let mut index = HashMap::with_capacity(nodes.len());
    for (i, n) in nodes.iter().enumerate() {
        if index.insert(n.id.0, i).is_some() {
            log.note("duplicate_node_id", || {
                format!("node id {} appears twice; the last one is used", n.id.0)
            });
        }
    }
    if nodes.iter().any(|n| n.call_frame.is_none()) {
        log.note("node_without_call_frame", || {
            format!("a node has no callFrame; it is called `{UNKNOWN_NODE}`")
        });
    }
    let mut parent = parents(nodes, &index, log);
    let stack_of = node_stacks(nodes, &mut parent, agg, log);
    (index, stack_of)
}

/// Parent index per node: from `parent` when any node has one, else from
/// the `children` lists.
fn parents(
    nodes: &[Node],
    index: &HashMap<i64, usize>,
    log: &mut LimitationLog,
) -> Vec<Option<usize>> {
    let mut parent = vec![None; nodes.len()];
    let by_parent_field = nodes.iter().any(|n| n.parent.is_some());
    for (i, node) in nodes.iter().enumerate() {
        let links: Vec<(usize, i64)> = if by_parent_field {
            node.parent.map(|p| (i, p)).into_iter().collect()
        } else {
            let kids = node.children.as_deref().unwrap_or(&[]);
            kids.iter().map(|c| (i, c.0)).collect()
        };
        for (at, other) in links {
            let Some(&j) = index.get(&other) else {
                log.note("unknown_child_id", || {
                    format!(
                        "node {} links to node id {other}, which does not exist; link ignored",
                        node.id.0
                    )
                });
                continue;
            };
            let (child, par) = if by_parent_field { (at, j) } else { (j, at) };
            if parent[child].is_some() {
                log.note("node_with_two_parents", || {
                    format!(
                        "node {} is listed under two parents; the first is kept",
                        nodes[child].id.0
                    )
                });
                continue;
            }
            parent[child] = Some(par);
        }
    }
    parent
}

/// Stack id per node (`None` for a dropped `(root)`), computed top-down
/// without recursion; a parent cycle is cut (limitation `node_cycle`).
fn node_stacks(
    nodes: &[Node],
    parent: &mut [Option<usize>],
    agg: &mut StackAggregator,
    log: &mut LimitationLog,
) -> Vec<Option<u32>> {
    const TODO: u8 = 0;
    const BUSY: u8 = 1;
    const DONE: u8 = 2;
    let mut state = vec![TODO; nodes.len()];
    let mut stack_of: Vec<Option<u32>> = vec![None; nodes.len()];
    let mut path = Vec::new();
    for start in 0..nodes.len() {
        path.clear();
        let mut i = start;
        while state[i] == TODO {
            state[i] = BUSY;
            path.push(i);
            match parent[i] {
                Some(p) if state[p] == BUSY => {
                    log.note("node_cycle", || {
                        format!(
                            "node {} is its own ancestor; the cycle is cut above it",
                            nodes[i].id.0
                        )
                    });
                    parent[i] = None;
                    break;
                }
                Some(p) => i = p,
                None => break,
            }
        }
        for &n in path.iter().rev() {
            let cf = nodes[n].call_frame.as_ref();
            let (name, file, line, language) =
                cf.map_or((UNKNOWN_NODE, None, None, "unknown"), frame_of);
            let above = parent[n].and_then(|p| stack_of[p]);
            stack_of[n] = if parent[n].is_none() && name == ROOT {
                None
            } else {
                let frame = agg.frame(name, file, line, None, language, cf.is_some());
                Some(agg.stack(above, frame))
            };
            state[n] = DONE;
        }
    }
    stack_of
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_frames() {
        let cf = |name: &str, url: &str, line: i64| CallFrame {
            function_name: Some(name.into()),
            url: Some(url.into()),
            line_number: Some(line),
        };
        assert_eq!(
            frame_of(&cf("fib", "file:///w.js", 4)),
            ("fib", Some("file:///w.js"), Some(5), "javascript")
        );
        assert_eq!(
            frame_of(&cf("", "node:internal/x", 0)),
            (
                "(anonymous)",
                Some("node:internal/x"),
                Some(1),
                "javascript"
            )
        );
        assert_eq!(
            frame_of(&cf("(garbage collector)", "", -1)),
            ("(garbage collector)", None, None, "unknown")
        );
        assert_eq!(
            frame_of(&cf("lstat", "", -1)),
            ("lstat", None, None, "native")
        );
    }
}
