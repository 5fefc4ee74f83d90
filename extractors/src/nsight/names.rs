//! Names and kinds of Nsight rows: the enum names nsys stores as numbers
//! (copy kinds, memory kinds, synchronization types), and the per-reader
//! caches that classify each distinct name and build each distinct label
//! once instead of once per row (classification alone was ~3 % of an
//! import when done per row).

use super::*;

/// What a cached row name is built from: the table it names rows of and
/// up to three of its enum columns.
pub(super) type LabelKey = (&'static str, Option<i64>, Option<i64>, Option<i64>);

impl Reader<'_> {
    /// The kind of the row named `name` (an interned id) under `category`,
    /// classified once per distinct pair; `api` drops nsys's `_v<digits>`
    /// suffix first.
    pub(super) fn kind_of(
        &mut self,
        category: &'static str,
        cat: u32,
        name: u32,
        api: bool,
    ) -> EventKind {
        if let Some(&kind) = self.kinds.get(&(cat, name)) {
            return kind;
        }
        let text = self.p.strings.get(name);
        let text = if api { api_base(text) } else { text };
        let kind = classify(Some(category), text, false).kind;
        self.kinds.insert((cat, name), kind);
        kind
    }

    /// The interned row name for `key`, built by `make` the first time.
    pub(super) fn label(&mut self, key: LabelKey, make: impl FnOnce() -> String) -> u32 {
        if let Some(&name) = self.labels.get(&key) {
            return name;
        }
        let name = self.p.strings.intern(&make());
        self.labels.insert(key, name);
        name
    }
}

/// An API name without the `_v<digits>` version suffix nsys appends
/// (`cudaGraphLaunch_v10000` → `cudaGraphLaunch`), for classification.
pub fn api_base(name: &str) -> &str {
    match name.rfind("_v") {
        Some(at) if name.len() > at + 2 && name[at + 2..].bytes().all(|b| b.is_ascii_digit()) => {
            &name[..at]
        }
        _ => name,
    }
}

/// `ENUM_CUDA_MEMCPY_OPER` short names.
pub(super) fn copy_kind(k: Option<i64>) -> &'static str {
    match k {
        Some(1) => "HtoD",
        Some(2) => "DtoH",
        Some(3) => "HtoA",
        Some(4) => "AtoH",
        Some(5) => "AtoA",
        Some(6) => "AtoD",
        Some(7) => "DtoA",
        Some(8) => "DtoD",
        Some(9) => "HtoH",
        Some(10) => "PtoP",
        Some(11) => "Unified HtoD",
        Some(12) => "Unified DtoH",
        Some(13) => "Unified DtoD",
        _ => "Unknown",
    }
}

/// `ENUM_CUDA_MEM_KIND` names.
pub(super) fn mem_kind(k: i64) -> &'static str {
    match k {
        0 => "Pageable",
        1 => "Pinned",
        2 => "Device",
        3 => "Array",
        4 => "Managed",
        5 => "Device Static",
        6 => "Managed Static",
        _ => "Unknown",
    }
}

/// `ENUM_CUPTI_SYNC_TYPE` names.
pub(super) fn sync_name(k: Option<i64>) -> &'static str {
    match k {
        Some(1) => "Event sync",
        Some(2) => "Stream wait sync",
        Some(3) => "Stream sync",
        Some(4) => "Context sync",
        _ => "Synchronization",
    }
}
