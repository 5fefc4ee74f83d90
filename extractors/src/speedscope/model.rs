//! The speedscope file schema (<https://www.speedscope.app/file-format-schema.json>)
//! as typed serde structs.
//!
//! Every field is optional or lenient here; what is missing or malformed is
//! decided (error or limitation) by the extractor, not by serde. Profiles are
//! not an internally tagged enum on purpose: serde buffers such enums into
//! an untyped tree, which is what this reader avoids. Sampled stacks are
//! interned into a [`StackTrie`] while they are read, so memory follows
//! distinct stacks rather than samples × depth.

use std::collections::HashMap;
use std::fmt;

use serde::de::{DeserializeSeed, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

use crate::json_doc::{Decimal, lenient_int};

/// The whole file. Unknown keys (`activeProfileIndex`, `version`, …) are
/// skipped.
#[derive(Debug, Deserialize)]
pub(crate) struct SpeedscopeFile {
    #[serde(default)]
    pub shared: Option<Shared>,
    #[serde(default)]
    pub profiles: Option<Vec<Profile>>,
    #[serde(default)]
    pub exporter: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct Shared {
    #[serde(default)]
    pub frames: Vec<FrameDef>,
}

/// `shared.frames[i]`. `col` is not kept (frames have no column).
#[derive(Debug, Deserialize)]
pub(crate) struct FrameDef {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub file: Option<String>,
    #[serde(default, deserialize_with = "lenient_int")]
    pub line: Option<i64>,
}

/// One profile: `type` is `sampled` (samples + weights) or `evented`
/// (open/close events).
#[derive(Debug, Deserialize)]
pub(crate) struct Profile {
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub unit: Option<String>,
    #[serde(rename = "endValue", default)]
    pub end_value: Option<Decimal>,
    #[serde(default)]
    pub samples: Option<StackTrie>,
    #[serde(default)]
    pub weights: Option<Vec<Decimal>>,
    #[serde(default)]
    pub events: Option<Vec<Event>>,
}

/// An evented profile's `{"type": "O"|"C", "frame": i, "at": t}`.
#[derive(Debug, Deserialize)]
pub(crate) struct Event {
    #[serde(rename = "type")]
    pub kind: String,
    pub frame: i64,
    pub at: Decimal,
}

/// Marks "no parent" / "empty stack".
pub(crate) const NO_NODE: u32 = u32::MAX;

/// A sampled profile's `samples` (arrays of frame indices, root first) as a
/// prefix tree of frame indices plus one leaf node per sample. A node's
/// parent always has a smaller index.
#[derive(Debug, Default)]
pub(crate) struct StackTrie {
    /// (parent node or [`NO_NODE`], frame index as written).
    pub nodes: Vec<(u32, i64)>,
    /// The leaf node of each sample ([`NO_NODE`] for an empty stack).
    pub leaves: Vec<u32>,
    index: HashMap<(u32, i64), u32>,
}

impl StackTrie {
    fn child(&mut self, parent: u32, frame: i64) -> Option<u32> {
        if let Some(&n) = self.index.get(&(parent, frame)) {
            return Some(n);
        }
        let n = u32::try_from(self.nodes.len())
            .ok()
            .filter(|n| *n != NO_NODE)?;
        self.nodes.push((parent, frame));
        self.index.insert((parent, frame), n);
        Some(n)
    }
}

impl<'de> Deserialize<'de> for StackTrie {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Samples;
        impl<'de> Visitor<'de> for Samples {
            type Value = StackTrie;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of stacks (arrays of frame indices)")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<StackTrie, A::Error> {
                let mut trie = StackTrie::default();
                while let Some(leaf) = seq.next_element_seed(OneStack(&mut trie))? {
                    trie.leaves.push(leaf);
                }
                trie.index = HashMap::new();
                Ok(trie)
            }
        }
        d.deserialize_seq(Samples)
    }
}

/// Reads one stack into the trie and yields its leaf node.
struct OneStack<'t>(&'t mut StackTrie);

impl<'de> DeserializeSeed<'de> for OneStack<'_> {
    type Value = u32;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<u32, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for OneStack<'_> {
    type Value = u32;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of integer frame indices")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<u32, A::Error> {
        let mut node = NO_NODE;
        while let Some(frame) = seq.next_element::<i64>()? {
            node = self
                .0
                .child(node, frame)
                .ok_or_else(|| serde::de::Error::custom("more than 2^32 distinct stack nodes"))?;
        }
        Ok(node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_become_a_prefix_tree() {
        let t: StackTrie = serde_json::from_str("[[0,1,2],[0,1,2],[0,1],[],[3]]").unwrap();
        assert_eq!(t.nodes, vec![(NO_NODE, 0), (0, 1), (1, 2), (NO_NODE, 3)]);
        assert_eq!(t.leaves, vec![2, 2, 1, NO_NODE, 3]);
        assert!(serde_json::from_str::<StackTrie>("[[0,1.5]]").is_err());
        assert!(serde_json::from_str::<StackTrie>("[0]").is_err());
    }
}
