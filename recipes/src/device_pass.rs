//! Device activity (kernels, memcpy, memset) read once into plain Rust rows,
//! for the analyses whose per-stream running maxima, interval unions and
//! correlation lookups are cheaper as sorted passes than as DataFusion
//! plans at 10 M events (a window sort per question, a range join of every
//! row with every chunk, a GROUP BY over a million correlation ids — see
//! `docs/performance.md`, "GPU analyses at 10 M events").
//!
//! Strings (artifact ids, names, kinds) are interned once per dictionary
//! value, so a row is a few integers; answers compare the strings
//! themselves wherever order matters.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::logical_expr::{Expr, col};
use datafusion::prelude::{DataFrame, SessionContext};
use futures::StreamExt;

use crate::accelerator::{device_activity_rows, events};
use crate::common::{ArtifactScope, RecipeResult, as_int64, as_utf8, column, string_at};
pub use crate::time_accounting::intervals::{covered, union_segments};

/// Strings seen in the rows, each stored once; rows hold their ids.
#[derive(Debug, Default)]
pub struct Interner {
    ids: HashMap<String, u32>,
    strings: Vec<String>,
    /// The dictionaries (values arrays) seen last, with the id of each
    /// value filled on its first use: batches of one column chunk share a
    /// dictionary, so a value is looked up once per chunk, not per batch.
    dictionaries: Vec<(ArrayRef, Vec<u32>)>,
}

/// A dictionary value not looked up yet / a null dictionary value.
const UNSEEN: u32 = u32::MAX;
const NULL_VALUE: u32 = u32::MAX - 1;
/// Dictionaries remembered (a few columns interleave).
const DICTIONARIES_KEPT: usize = 8;

impl Interner {
    pub fn get(&self, id: u32) -> &str {
        self.strings.get(id as usize).map_or("", String::as_str)
    }

    pub fn id(&mut self, text: &str) -> u32 {
        if let Some(&id) = self.ids.get(text) {
            return id;
        }
        let id = self.strings.len() as u32;
        self.strings.push(text.to_owned());
        self.ids.insert(text.to_owned(), id);
        id
    }

    /// The id of an existing string (None when never interned).
    pub fn find(&self, text: &str) -> Option<u32> {
        self.ids.get(text).copied()
    }

    /// Orders two ids by their strings (byte order, as DataFusion sorts).
    pub fn cmp(&self, a: u32, b: u32) -> Ordering {
        if a == b {
            Ordering::Equal
        } else {
            self.get(a).cmp(self.get(b))
        }
    }

    /// Position in `dictionaries` of `values`, added when new.
    fn dictionary(&mut self, values: &ArrayRef) -> usize {
        if let Some(at) = self
            .dictionaries
            .iter()
            .position(|(v, _)| Arc::ptr_eq(v, values))
        {
            return at;
        }
        if self.dictionaries.len() >= DICTIONARIES_KEPT {
            self.dictionaries.remove(0);
        }
        self.dictionaries
            .push((Arc::clone(values), vec![UNSEEN; values.len()]));
        self.dictionaries.len() - 1
    }

    /// Ids of a string-like column's cells: a dictionary column interns
    /// each distinct value once per dictionary, not once per row.
    pub fn column(&mut self, array: &dyn Array) -> RecipeResult<Vec<Option<u32>>> {
        if let DataType::Dictionary(_, _) = array.data_type() {
            let dict = array.as_any_dictionary();
            let at = self.dictionary(dict.values());
            let keys = dict.normalized_keys();
            let mut out = Vec::with_capacity(array.len());
            for (i, key) in keys.iter().enumerate().take(array.len()) {
                if array.is_null(i) {
                    out.push(None);
                    continue;
                }
                let seen = self.dictionaries[at]
                    .1
                    .get(*key)
                    .copied()
                    .unwrap_or(NULL_VALUE);
                let id = if seen == UNSEEN {
                    let id = string_at(self.dictionaries[at].0.as_ref(), *key)
                        .map_or(NULL_VALUE, |text| self.id(&text));
                    self.dictionaries[at].1[*key] = id;
                    id
                } else {
                    seen
                };
                out.push((id != NULL_VALUE).then_some(id));
            }
            return Ok(out);
        }
        let plain = as_utf8(array)?;
        let plain = plain.as_string::<i32>();
        Ok((0..plain.len())
            .map(|i| (!plain.is_null(i)).then(|| self.id(plain.value(i))))
            .collect())
    }
}

/// An integer column's cells (any integer type; nulls as None).
pub fn ints(array: &dyn Array) -> RecipeResult<Vec<Option<i64>>> {
    let cast = as_int64(array)?;
    let values = cast.as_primitive::<Int64Type>();
    Ok((0..values.len())
        .map(|i| (!values.is_null(i)).then(|| values.value(i)))
        .collect())
}

/// Runs `each` on every batch of `df` as it streams (nothing is collected).
pub async fn for_each_batch(
    df: DataFrame,
    mut each: impl FnMut(&RecordBatch) -> RecipeResult<()>,
) -> RecipeResult<()> {
    let mut stream = df.execute_stream().await?;
    while let Some(batch) = stream.next().await {
        each(&batch?)?;
    }
    Ok(())
}

/// One kernel, memcpy or memset (terminated: `dur_ns ≥ 0`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceOp {
    pub artifact: u32,
    pub device: Option<i64>,
    pub stream: Option<i64>,
    pub pid: Option<i64>,
    pub event_id: i64,
    pub ts: i64,
    pub end: i64,
    pub name: u32,
    pub kind: u32,
    pub correlation: Option<i64>,
}

impl DeviceOp {
    /// Stream order: artifact, device, stream, then `(ts_ns, event_id)`.
    pub fn stream_order(&self) -> (u32, Option<i64>, Option<i64>, i64, i64) {
        (
            self.artifact,
            self.device,
            self.stream,
            self.ts,
            self.event_id,
        )
    }

    /// Device order: artifact, device, then `(ts_ns, event_id)`.
    pub fn device_order(&self) -> (u32, Option<i64>, i64, i64) {
        (self.artifact, self.device, self.ts, self.event_id)
    }
}

/// The device activity of a scope with its strings.
#[derive(Debug, Default)]
pub struct DeviceOps {
    pub rows: Vec<DeviceOp>,
    pub strings: Interner,
}

impl DeviceOps {
    /// Kernels, memcpy and memset in `scope` ([`device_activity_rows`]).
    pub async fn read(ctx: &SessionContext, scope: &ArtifactScope) -> RecipeResult<DeviceOps> {
        let df = events(ctx, scope, device_activity_rows(), None)
            .await?
            .select(device_columns())?;
        let mut out = DeviceOps::default();
        for_each_batch(df, |batch| out.push_batch(batch)).await?;
        Ok(out)
    }

    fn push_batch(&mut self, batch: &RecordBatch) -> RecipeResult<()> {
        let artifact = self.strings.column(column(batch, "artifact_id")?)?;
        let name = self.strings.column(column(batch, "name")?)?;
        let kind = self.strings.column(column(batch, "kind")?)?;
        let device = ints(column(batch, "device")?)?;
        let stream = ints(column(batch, "stream")?)?;
        let pid = ints(column(batch, "pid")?)?;
        let event_id = ints(column(batch, "event_id")?)?;
        let ts = ints(column(batch, "ts_ns")?)?;
        let dur = ints(column(batch, "dur_ns")?)?;
        let correlation = ints(column(batch, "correlation_id")?)?;
        let empty = self.strings.id("");
        for i in 0..batch.num_rows() {
            let start = ts[i].unwrap_or(0);
            self.rows.push(DeviceOp {
                artifact: artifact[i].unwrap_or(empty),
                device: device[i],
                stream: stream[i],
                pid: pid[i],
                event_id: event_id[i].unwrap_or(0),
                ts: start,
                end: start + dur[i].unwrap_or(0),
                name: name[i].unwrap_or(empty),
                kind: kind[i].unwrap_or(empty),
                correlation: correlation[i],
            });
        }
        Ok(())
    }

    /// Sorts the rows by `key` and yields each run of rows sharing `group`.
    pub fn groups<K: Ord, G: PartialEq>(
        &mut self,
        key: impl Fn(&DeviceOp) -> K,
        group: impl Fn(&DeviceOp) -> G,
    ) -> Vec<&[DeviceOp]> {
        self.rows.sort_unstable_by_key(|r| key(r));
        self.rows.chunk_by(|a, b| group(a) == group(b)).collect()
    }
}

fn device_columns() -> Vec<Expr> {
    [
        "artifact_id",
        "device",
        "stream",
        "pid",
        "event_id",
        "name",
        "kind",
        "ts_ns",
        "dur_ns",
        "correlation_id",
    ]
    .into_iter()
    .map(col)
    .collect()
}

/// The running maximum of earlier ends in a sorted run, and the smallest
/// name among the rows that reached it (the activity a gap follows).
#[derive(Debug, Default, Clone, Copy)]
pub struct RunningEnd {
    pub end: Option<i64>,
    pub name: Option<u32>,
}

impl RunningEnd {
    pub fn add(&mut self, end: i64, name: u32, strings: &Interner) {
        match self.end {
            Some(e) if e > end => {}
            Some(e) if e == end => {
                if self
                    .name
                    .is_none_or(|n| strings.cmp(name, n) == Ordering::Less)
                {
                    self.name = Some(name);
                }
            }
            _ => {
                self.end = Some(end);
                self.name = Some(name);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dictionary_cells_intern_to_the_same_ids_as_plain_cells() {
        use datafusion::arrow::array::{DictionaryArray, StringArray};
        use datafusion::arrow::datatypes::Int32Type;
        let dict: DictionaryArray<Int32Type> = vec![Some("b"), None, Some("a"), Some("b")]
            .into_iter()
            .collect();
        let mut strings = Interner::default();
        let first = strings.column(&dict).expect("dictionary");
        // The same dictionary again (a later batch of the chunk): cached ids.
        let again = strings.column(&dict).expect("dictionary");
        let plain = strings
            .column(&StringArray::from(vec![Some("a"), Some("b"), None]))
            .expect("plain");
        let (a, b) = (strings.find("a"), strings.find("b"));
        assert_eq!(first, vec![b, None, a, b]);
        assert_eq!(again, first);
        assert_eq!(plain, vec![a, b, None]);
        assert_ne!(a, b);
    }

    #[test]
    fn running_end_keeps_the_smallest_name_reaching_the_maximum() {
        let mut strings = Interner::default();
        let (b, a, c) = (strings.id("b"), strings.id("a"), strings.id("c"));
        let mut run = RunningEnd::default();
        run.add(10, b, &strings);
        run.add(10, a, &strings);
        run.add(5, c, &strings);
        assert_eq!((run.end, run.name), (Some(10), Some(a)));
        run.add(11, c, &strings);
        assert_eq!((run.end, run.name), (Some(11), Some(c)));
    }
}
