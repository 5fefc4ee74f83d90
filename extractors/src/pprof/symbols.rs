//! Resolving pprof ids and string indices: locations → frames, labels →
//! threads.
//!
//! Everything in a pprof profile points somewhere else (sample → location →
//! line → function → string table). Any of those references can dangle in a
//! broken or hand-made file; each dangling reference is answered by a rule
//! and counted as a limitation here, never a panic.

use std::borrow::Cow;
use std::collections::BTreeSet;

use crate::FastHashMap;

use super::proto::{Function, Label, Location, Mapping, Profile};
use crate::api::LimitationLog;
use crate::stacks::{StackAggregator, ThreadInfo};

/// Most distinct label keys listed in the summary metadata.
const MAX_LABEL_KEYS: usize = 64;

/// Id and string lookups over one decoded profile, with a per-location
/// cache of the frames it expands to.
pub struct Symbols<'p> {
    strings: Vec<Cow<'p, str>>,
    functions: FastHashMap<u64, &'p Function>,
    mappings: FastHashMap<u64, &'p Mapping>,
    locations: FastHashMap<u64, &'p Location>,
    /// Frame ids per location id, outermost (the caller) first.
    frames_of: FastHashMap<u64, Vec<u32>>,
    /// Frames are Go code (`language = go`).
    pub go: bool,
    /// Locations resolved to at least one unsymbolized frame.
    pub unsymbolized_locations: u64,
    /// Locations with more than one line (inlined calls expanded).
    pub inlined_locations: u64,
    /// Distinct label keys seen (bounded).
    pub label_keys: BTreeSet<String>,
}

fn index_by_id<'p, T>(
    items: &'p [T],
    id: impl Fn(&T) -> u64,
    what: &'static str,
    log: &mut LimitationLog,
) -> FastHashMap<u64, &'p T> {
    let mut map = FastHashMap::with_capacity_and_hasher(items.len(), Default::default());
    for item in items {
        let key = id(item);
        if map.contains_key(&key) {
            log.note("duplicate_id", || {
                format!("{what} id {key} is declared more than once; the first is used")
            });
            continue;
        }
        map.insert(key, item);
    }
    map
}

/// The last path element of a mapping file name (`/usr/lib/libc.so.6` →
/// `libc.so.6`); `None` for an empty name.
pub fn basename(path: &str) -> Option<&str> {
    let base = path.rsplit(['/', '\\']).next().unwrap_or(path);
    (!base.is_empty()).then_some(base)
}

impl<'p> Symbols<'p> {
    pub fn new(profile: &'p Profile, log: &mut LimitationLog) -> Self {
        let strings = profile
            .string_table
            .iter()
            .map(|bytes| {
                let s = String::from_utf8_lossy(bytes);
                if matches!(s, Cow::Owned(_)) {
                    log.note("invalid_utf8_replaced", || {
                        "a string-table entry has invalid UTF-8; replaced with U+FFFD".to_owned()
                    });
                }
                s
            })
            .collect();
        Symbols {
            strings,
            functions: index_by_id(&profile.function, |f| f.id, "function", log),
            mappings: index_by_id(&profile.mapping, |m| m.id, "mapping", log),
            locations: index_by_id(&profile.location, |l| l.id, "location", log),
            frames_of: FastHashMap::default(),
            go: false,
            unsymbolized_locations: 0,
            inlined_locations: 0,
            label_keys: BTreeSet::new(),
        }
    }

    /// String `index`; "" (and a limitation) when it is out of range.
    pub fn string(&self, index: i64, log: &mut LimitationLog) -> &str {
        match usize::try_from(index)
            .ok()
            .and_then(|i| self.strings.get(i))
        {
            Some(s) => s,
            None => {
                let len = self.strings.len();
                log.note("string_index_out_of_range", || {
                    format!(
                        "string index {index} is outside the {len}-entry string table; read as \"\""
                    )
                });
                ""
            }
        }
    }

    /// Whether the functions look like Go: a `runtime.*` function in a
    /// `.go` file (every Go goroutine starts in `runtime.main` or
    /// `runtime.goexit`).
    pub fn looks_like_go(&self, log: &mut LimitationLog) -> bool {
        self.functions.values().any(|f| {
            self.string(f.name, log).starts_with("runtime.")
                && self.string(f.filename, log).ends_with(".go")
        })
    }

    /// The frames of location `id`, outermost first: its lines in reverse
    /// (pprof puts the innermost inlined function at `line[0]`), or one
    /// `0x<address>` frame when it has no line information.
    pub fn frames(
        &mut self,
        id: u64,
        agg: &mut StackAggregator,
        log: &mut LimitationLog,
    ) -> &[u32] {
        if !self.frames_of.contains_key(&id) {
            let frames = self.resolve(id, agg, log);
            self.frames_of.insert(id, frames);
        }
        self.frames_of.get(&id).map_or(&[], Vec::as_slice)
    }

    fn resolve(&mut self, id: u64, agg: &mut StackAggregator, log: &mut LimitationLog) -> Vec<u32> {
        let Some(loc) = self.locations.get(&id).copied() else {
            log.note("location_id_not_found", || {
                format!("a sample refers to location {id}, which the profile does not declare; kept as one unknown frame")
            });
            let name = format!("[unknown location {id}]");
            return vec![agg.frame(&name, None, None, None, "unknown", false)];
        };
        let module = match loc.mapping_id {
            0 => None,
            m => match self.mappings.get(&m) {
                Some(mapping) => basename(self.string(mapping.filename, log)).map(str::to_owned),
                None => {
                    log.note("mapping_id_not_found", || {
                        format!("location {id} refers to mapping {m}, which the profile does not declare")
                    });
                    None
                }
            },
        };
        let module = module.as_deref();
        let native = if self.go {
            "go"
        } else if loc.mapping_id != 0 || loc.address != 0 {
            "native"
        } else {
            "unknown"
        };
        let address = format!("0x{:x}", loc.address);
        if loc.line.len() > 1 {
            self.inlined_locations += 1;
        }
        let mut unsymbolized = loc.line.is_empty();
        let mut out = Vec::with_capacity(loc.line.len().max(1));
        for line in loc.line.iter().rev() {
            let number = (line.line > 0).then_some(line.line);
            let function = match line.function_id {
                0 => None,
                f => {
                    let found = self.functions.get(&f).copied();
                    if found.is_none() {
                        log.note("function_id_not_found", || {
                            format!("location {id} refers to function {f}, which the profile does not declare; named by address")
                        });
                    }
                    found
                }
            };
            let (name, file) = match function {
                Some(f) => {
                    let name = match self.string(f.name, log) {
                        "" => self.string(f.system_name, log),
                        name => name,
                    };
                    (name, self.string(f.filename, log))
                }
                None => ("", ""),
            };
            let file = (!file.is_empty()).then_some(file);
            let language = if file.is_some_and(|f| f.ends_with(".go")) {
                "go"
            } else {
                native
            };
            let frame = if name.is_empty() {
                unsymbolized = true;
                agg.frame(&address, file, number, module, language, false)
            } else {
                agg.frame(name, file, number, module, language, true)
            };
            out.push(frame);
        }
        if loc.line.is_empty() {
            out.push(agg.frame(&address, None, None, module, native, false));
        }
        if unsymbolized {
            self.unsymbolized_locations += 1;
        }
        out
    }

    /// The thread a sample's labels name: numeric `tid` / `thread_id` /
    /// `thread` → tid, numeric `pid` / `process_id` → pid, string `thread` /
    /// `thread_name` → thread name, string `process_name` → process name, and
    /// numeric `goroutine` → thread name `goroutine N` (Go has no thread
    /// ids; a goroutine id is not an OS thread). `None` when none is present.
    pub fn thread(&mut self, labels: &[Label], log: &mut LimitationLog) -> Option<ThreadInfo> {
        let mut info = ThreadInfo::default();
        let mut goroutine = None;
        for label in labels {
            let key = self.string(label.key, log).to_owned();
            let text = match label.str {
                0 => None,
                s => Some(self.string(s, log).to_owned()).filter(|t| !t.is_empty()),
            };
            match (key.as_str(), text) {
                ("tid" | "thread_id" | "thread", None) => info.tid = Some(label.num),
                ("pid" | "process_id", None) => info.pid = Some(label.num),
                ("thread" | "thread_name", Some(t)) => info.thread_name = Some(t),
                ("process_name", Some(t)) => info.process_name = Some(t),
                ("goroutine", None) => goroutine = Some(label.num),
                _ => {}
            }
            if self.label_keys.len() < MAX_LABEL_KEYS {
                self.label_keys.insert(key);
            }
        }
        if info.thread_name.is_none()
            && let Some(g) = goroutine
        {
            info.thread_name = Some(format!("goroutine {g}"));
        }
        (info != ThreadInfo::default()).then_some(info)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basenames() {
        assert_eq!(basename("/usr/lib/libc.so.6"), Some("libc.so.6"));
        assert_eq!(basename("C:\\bin\\app.exe"), Some("app.exe"));
        assert_eq!(basename("[vdso]"), Some("[vdso]"));
        assert_eq!(basename(""), None);
        assert_eq!(basename("/dir/"), None);
    }
}
