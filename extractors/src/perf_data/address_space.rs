//! What was mapped where, and what each thread was called, as the records
//! replayed in time order say: per-process memory maps (`MMAP`/`MMAP2`,
//! copied to a child process on `FORK`, a new mapping replacing what it
//! overlaps), the kernel's maps (`pid == -1`), and thread names from `COMM`
//! (inherited on `FORK`). Samples' addresses are resolved against this.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::records::{CommRecord, MISC_GUEST_KERNEL, MISC_KERNEL, MmapRecord, TaskRecord};

/// One mapping: `[start, end)` holds the file `module` from offset `pgoff`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    pub pgoff: u64,
    /// The file as recorded, `[kernel.kallsyms]` for the kernel image.
    pub module: Arc<str>,
    /// From an `MMAP2` carrying one.
    pub build_id: Option<Arc<[u8]>>,
}

impl Mapping {
    /// `ip`'s offset in the mapped file (perf's `map_ip`).
    pub fn file_offset(&self, ip: u64) -> u64 {
        ip.wrapping_sub(self.start).wrapping_add(self.pgoff)
    }
}

/// Non-overlapping mappings keyed by start address.
#[derive(Debug, Clone, Default)]
struct MapSet(BTreeMap<u64, Mapping>);

impl MapSet {
    fn insert(&mut self, m: Mapping) {
        // Cut what the new mapping covers out of the old ones: the one
        // starting at or before it, and those starting inside it (at most
        // one partial overlap at each end, so this stays O(log n + cut)).
        let before = self
            .0
            .range(..=m.start)
            .next_back()
            .filter(|(_, old)| old.end > m.start)
            .map(|(&s, _)| s);
        let inside: Vec<u64> = self
            .0
            .range(m.start..m.end)
            .map(|(&s, _)| s)
            .filter(|&s| Some(s) != before)
            .collect();
        for s in before.into_iter().chain(inside) {
            let Some(old) = self.0.remove(&s) else {
                continue;
            };
            if old.start < m.start {
                self.0.insert(
                    old.start,
                    Mapping {
                        end: m.start,
                        ..old.clone()
                    },
                );
            }
            if old.end > m.end {
                let cut = m.end - old.start;
                self.0.insert(
                    m.end,
                    Mapping {
                        start: m.end,
                        pgoff: old.pgoff.wrapping_add(cut),
                        ..old
                    },
                );
            }
        }
        self.0.insert(m.start, m);
    }

    fn find(&self, ip: u64) -> Option<&Mapping> {
        let (_, m) = self.0.range(..=ip).next_back()?;
        (ip < m.end).then_some(m)
    }

    fn len(&self) -> usize {
        self.0.len()
    }
}

/// A thread as the records describe it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadInfo {
    pub pid: Option<i32>,
    /// The latest name (`COMM`, or the parent's at `FORK`).
    pub comm: Option<Arc<str>>,
    /// The name came from an exec.
    pub comm_from_exec: bool,
    /// Every name the thread had, with the time it took it.
    pub comm_history: Vec<(Option<u64>, Arc<str>)>,
    pub parent_tid: Option<i32>,
    pub fork_ns: Option<u64>,
    pub exit_ns: Option<u64>,
}

/// Memory maps and thread names, updated record by record.
#[derive(Debug, Default)]
pub struct AddressSpaces {
    processes: HashMap<i32, MapSet>,
    kernel: MapSet,
    pub threads: BTreeMap<i32, ThreadInfo>,
    interned: HashMap<String, Arc<str>>,
    /// Mappings copied at forks so far (capped: see [`MAX_FORK_COPIES`]).
    fork_copies: usize,
    /// Forks whose maps were not copied because the cap was reached.
    pub forks_without_maps: u64,
}

/// Mappings copied from parent to child processes over the whole file; a
/// damaged file of many forks of a many-mapping process cannot make the
/// copying quadratic.
pub const MAX_FORK_COPIES: usize = 20_000_000;

/// The name perf gives the kernel image's mapping.
pub const KERNEL_MODULE: &str = "[kernel.kallsyms]";
/// The name perf shows for a kernel mapping: `[kernel.kallsyms]` for the
/// image (recorded as `[kernel.kallsyms]_text` or similar), `[name]` for a
/// module file (`/lib/modules/…/nf-tables.ko.zst` → `[nf_tables]`).
pub fn kernel_module_name(filename: &str) -> String {
    if filename.starts_with(KERNEL_MODULE) {
        return KERNEL_MODULE.to_owned();
    }
    let base = filename.rsplit('/').next().unwrap_or(filename);
    match base.find(".ko") {
        Some(end) if filename.starts_with('/') => {
            format!("[{}]", base.get(..end).unwrap_or(base).replace('-', "_"))
        }
        _ => filename.to_owned(),
    }
}

/// Cap on distinct module names kept (a damaged file cannot grow it).
const MAX_INTERNED: usize = 1 << 16;

impl AddressSpaces {
    fn intern(&mut self, s: &str) -> Arc<str> {
        if let Some(a) = self.interned.get(s) {
            return a.clone();
        }
        let a: Arc<str> = Arc::from(s);
        if self.interned.len() < MAX_INTERNED {
            self.interned.insert(s.to_owned(), a.clone());
        }
        a
    }

    pub fn mmap(&mut self, rec: &MmapRecord) {
        if rec.data || rec.len == 0 {
            return;
        }
        let kernel =
            rec.pid == -1 || rec.cpumode == MISC_KERNEL || rec.cpumode == MISC_GUEST_KERNEL;
        let name = if kernel {
            kernel_module_name(&rec.filename)
        } else {
            rec.filename.clone()
        };
        let mapping = Mapping {
            start: rec.start,
            end: rec.start.saturating_add(rec.len),
            pgoff: rec.pgoff,
            module: self.intern(&name),
            build_id: rec.build_id.as_deref().map(Arc::from),
        };
        if kernel {
            self.kernel.insert(mapping);
        } else {
            self.processes.entry(rec.pid).or_default().insert(mapping);
        }
    }

    pub fn comm(&mut self, rec: &CommRecord, ts: Option<u64>) {
        let name = self.intern(&rec.comm);
        let t = self.threads.entry(rec.tid).or_default();
        t.pid = Some(rec.pid);
        t.comm = Some(name.clone());
        t.comm_from_exec = rec.exec;
        if t.comm_history.len() < 64 {
            t.comm_history.push((ts, name));
        }
    }

    pub fn fork(&mut self, rec: &TaskRecord) {
        let parent = self.threads.get(&rec.ptid).cloned().unwrap_or_default();
        let t = self.threads.entry(rec.tid).or_default();
        t.pid = Some(rec.pid);
        t.parent_tid = Some(rec.ptid);
        t.fork_ns = Some(rec.time);
        t.exit_ns = None;
        if let Some(name) = parent.comm {
            t.comm = Some(name.clone());
            t.comm_from_exec = false;
            if t.comm_history.len() < 64 {
                t.comm_history.push((Some(rec.time), name));
            }
        }
        // A new process starts with a copy of its parent's maps; a new
        // thread shares its process's.
        if rec.pid != rec.ppid
            && let Some(maps) = self.processes.get(&rec.ppid)
        {
            match self.fork_copies.checked_add(maps.len()) {
                Some(n) if n <= MAX_FORK_COPIES => {
                    self.fork_copies = n;
                    let maps = maps.clone();
                    self.processes.insert(rec.pid, maps);
                }
                _ => self.forks_without_maps += 1,
            }
        }
    }

    pub fn exit(&mut self, rec: &TaskRecord) {
        self.threads.entry(rec.tid).or_default().exit_ns = Some(rec.time);
    }

    /// The mapping holding `ip`: a kernel mapping when `kernel`, else one
    /// of process `pid`'s.
    pub fn find(&self, pid: Option<i32>, ip: u64, kernel: bool) -> Option<&Mapping> {
        if kernel {
            return self.kernel.find(ip);
        }
        self.processes.get(&pid?)?.find(ip)
    }

    /// The name of thread `tid` now.
    pub fn thread_name(&self, tid: i32) -> Option<Arc<str>> {
        self.threads.get(&tid)?.comm.clone()
    }

    /// How many mappings are known (kernel, user).
    pub fn mapping_counts(&self) -> (usize, usize) {
        (
            self.kernel.len(),
            self.processes.values().map(MapSet::len).sum(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mm(pid: i32, start: u64, len: u64, pgoff: u64, name: &str) -> MmapRecord {
        MmapRecord {
            pid,
            tid: pid,
            start,
            len,
            pgoff,
            filename: name.into(),
            build_id: None,
            prot: None,
            data: false,
            cpumode: if pid == -1 { 1 } else { 2 },
        }
    }

    #[test]
    fn later_mappings_replace_what_they_overlap() {
        let mut a = AddressSpaces::default();
        a.mmap(&mm(5, 0x1000, 0x3000, 0, "/a"));
        a.mmap(&mm(5, 0x2000, 0x1000, 0x500, "/b"));
        fn f(a: &AddressSpaces, ip: u64) -> Option<(String, u64)> {
            a.find(Some(5), ip, false)
                .map(|m| (m.module.to_string(), m.file_offset(ip)))
        }
        assert_eq!(f(&a, 0x1800), Some(("/a".into(), 0x800)));
        assert_eq!(f(&a, 0x2010), Some(("/b".into(), 0x510)));
        assert_eq!(f(&a, 0x3010), Some(("/a".into(), 0x2010)));
        assert_eq!(f(&a, 0x4000), None);
        assert_eq!(a.find(Some(6), 0x1800, false), None);
        a.mmap(&mm(
            -1,
            0xffff_0000,
            0x100,
            0xffff_0000,
            "[kernel.kallsyms]_text",
        ));
        let k = a
            .find(None, 0xffff_0010, true)
            .map(|m| m.module.to_string());
        assert_eq!(k.as_deref(), Some(KERNEL_MODULE));
        assert_eq!(a.mapping_counts(), (1, 3));
        // One mapping over several: the middle ones go, the ends are cut.
        a.mmap(&mm(5, 0x1800, 0x2000, 0x9000, "/c"));
        assert_eq!(f(&a, 0x1700), Some(("/a".into(), 0x700)));
        assert_eq!(f(&a, 0x2010), Some(("/c".into(), 0x9810)));
        assert_eq!(f(&a, 0x3810), Some(("/a".into(), 0x2810)));
        assert_eq!(a.mapping_counts(), (1, 3));
    }

    #[test]
    fn kernel_mappings_are_named_as_perf_names_them() {
        assert_eq!(kernel_module_name("[kernel.kallsyms]_text"), KERNEL_MODULE);
        assert_eq!(
            kernel_module_name("/lib/modules/6.1/kernel/nf-tables.ko.zst"),
            "[nf_tables]"
        );
        assert_eq!(kernel_module_name("[bpf_prog]"), "[bpf_prog]");
    }

    #[test]
    fn fork_copies_maps_and_names() {
        let mut a = AddressSpaces::default();
        a.mmap(&mm(5, 0x1000, 0x1000, 0, "/a"));
        let comm = CommRecord {
            pid: 5,
            tid: 5,
            comm: "sh".into(),
            exec: true,
        };
        a.comm(&comm, Some(1));
        let fork = TaskRecord {
            pid: 9,
            ppid: 5,
            tid: 9,
            ptid: 5,
            time: 2,
        };
        a.fork(&fork);
        assert!(a.find(Some(9), 0x1800, false).is_some());
        assert_eq!(a.thread_name(9).as_deref(), Some("sh"));
        assert!(!a.threads[&9].comm_from_exec);
        a.mmap(&mm(9, 0x1000, 0x1000, 0, "/c"));
        assert_eq!(
            a.find(Some(5), 0x1800, false).map(|m| &*m.module),
            Some("/a")
        );
        a.exit(&fork);
        assert_eq!(a.threads[&9].exit_ns, Some(2));
    }
}
