//! Names for kernel frames from this machine's `/proc/kallsyms` — only when
//! the running kernel is the one recorded: the build id perf stored for
//! `[kernel.kallsyms]` must equal the one in `/sys/kernel/notes`. Any other
//! kernel (or unreadable/zeroed kallsyms) leaves kernel frames as
//! `[kernel.kallsyms]+0x…`.

use std::sync::Arc;

use super::symbols::same_build_id;

/// How kernel frames were (or were not) given names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelSymbolStatus {
    NotRequested,
    /// The file records no build id for `[kernel.kallsyms]`.
    NoRecordedBuildId,
    /// `/sys/kernel/notes` is unreadable or has no GNU build id.
    RunningBuildIdUnknown,
    /// The recording's kernel is not the running one (hex build ids).
    BuildIdMismatch {
        recorded: String,
        running: String,
    },
    /// `/proc/kallsyms` is unreadable or its addresses are hidden.
    KallsymsUnusable(String),
    Loaded {
        symbols: usize,
    },
}

/// Kernel text symbols sorted by address.
#[derive(Debug, Default)]
pub struct KernelSymbols {
    syms: Vec<(u64, Arc<str>)>,
}

/// Gap past the last symbol still attributed to it.
const LAST_SYMBOL_SPAN: u64 = 1 << 20;

impl KernelSymbols {
    /// Reads `/proc/kallsyms` text (`address type name [module]` lines),
    /// keeping text (`t`/`T`) symbols.
    pub fn parse_kallsyms(text: &str) -> KernelSymbols {
        let mut syms: Vec<(u64, Arc<str>)> = text
            .lines()
            .filter_map(|line| {
                let mut parts = line.split_whitespace();
                let addr = u64::from_str_radix(parts.next()?, 16).ok()?;
                let kind = parts.next()?;
                let name = parts.next()?;
                (addr != 0 && (kind == "t" || kind == "T")).then(|| (addr, Arc::from(name)))
            })
            .collect();
        syms.sort_by_key(|(a, _)| *a);
        syms.dedup_by_key(|(a, _)| *a);
        KernelSymbols { syms }
    }

    pub fn len(&self) -> usize {
        self.syms.len()
    }

    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }

    /// The symbol holding `ip` and the offset into it.
    pub fn lookup(&self, ip: u64) -> Option<(Arc<str>, u64)> {
        let i = self
            .syms
            .partition_point(|(a, _)| *a <= ip)
            .checked_sub(1)?;
        let (start, name) = self.syms.get(i)?;
        let off = ip - start;
        if self.syms.get(i + 1).is_none() && off >= LAST_SYMBOL_SPAN {
            return None;
        }
        Some((name.clone(), off))
    }
}

/// The GNU build id in an ELF note blob (`/sys/kernel/notes`), read in
/// this machine's byte order.
pub fn gnu_build_id_from_notes(notes: &[u8]) -> Option<Vec<u8>> {
    let mut rest = notes;
    let word = |b: &[u8], at: usize| -> Option<usize> {
        let bytes: [u8; 4] = b.get(at..at + 4)?.try_into().ok()?;
        usize::try_from(u32::from_ne_bytes(bytes)).ok()
    };
    while rest.len() >= 12 {
        let namesz = word(rest, 0)?;
        let descsz = word(rest, 4)?;
        let kind = word(rest, 8)?;
        let name_end = 12usize.checked_add(namesz)?;
        let desc_start = name_end.checked_add(3)? & !3;
        let desc_end = desc_start.checked_add(descsz)?;
        let name = rest.get(12..name_end)?;
        let desc = rest.get(desc_start..desc_end)?;
        if kind == 3 && name == b"GNU\0" {
            return Some(desc.to_vec());
        }
        let next = desc_end.checked_add(3)? & !3;
        rest = rest.get(next..)?;
    }
    None
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Loads kallsyms when the recorded kernel build id is the running one's.
pub fn load_kernel_symbols(recorded: Option<&[u8]>) -> (Option<KernelSymbols>, KernelSymbolStatus) {
    let Some(recorded) = recorded.filter(|r| r.iter().any(|&b| b != 0)) else {
        return (None, KernelSymbolStatus::NoRecordedBuildId);
    };
    let running = std::fs::read("/sys/kernel/notes")
        .ok()
        .and_then(|n| gnu_build_id_from_notes(&n));
    let Some(running) = running else {
        return (None, KernelSymbolStatus::RunningBuildIdUnknown);
    };
    if !same_build_id(recorded, &running) {
        let status = KernelSymbolStatus::BuildIdMismatch {
            recorded: hex(recorded),
            running: hex(&running),
        };
        return (None, status);
    }
    match std::fs::read_to_string("/proc/kallsyms") {
        Ok(text) => {
            let syms = KernelSymbols::parse_kallsyms(&text);
            if syms.is_empty() {
                let why = "no non-zero text addresses (kptr_restrict?)".to_owned();
                (None, KernelSymbolStatus::KallsymsUnusable(why))
            } else {
                let status = KernelSymbolStatus::Loaded {
                    symbols: syms.len(),
                };
                (Some(syms), status)
            }
        }
        Err(e) => (None, KernelSymbolStatus::KallsymsUnusable(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kallsyms_lookup() {
        let k = KernelSymbols::parse_kallsyms(
            "ffffffff81000000 T _text\nffffffff81000080 T entry_SYSCALL_64\n\
             ffffffff81000100 D some_data\n0000000000000000 T hidden\nffffffff81000200 t tail [mod]\ngarbage\n",
        );
        assert_eq!(k.len(), 3);
        let at = |ip| k.lookup(ip).map(|(n, o)| (n.to_string(), o));
        assert_eq!(
            at(0xffffffff81000090),
            Some(("entry_SYSCALL_64".into(), 0x10))
        );
        assert_eq!(at(0xffffffff81000210), Some(("tail".into(), 0x10)));
        assert_eq!(at(0xffffffff91000000), None);
        assert_eq!(at(0x10), None);
    }

    #[test]
    fn notes_yield_the_gnu_build_id() {
        let mut n = Vec::new();
        // A Xen note first, then GNU.
        for (name, kind, desc) in [
            (&b"Xen\0"[..], 6u32, &[1u8, 2, 3][..]),
            (b"GNU\0", 3, &[0xaa; 20]),
        ] {
            n.extend((name.len() as u32).to_ne_bytes());
            n.extend((desc.len() as u32).to_ne_bytes());
            n.extend(kind.to_ne_bytes());
            n.extend(name);
            n.extend(desc);
            n.resize(n.len().div_ceil(4) * 4, 0);
        }
        assert_eq!(gnu_build_id_from_notes(&n), Some(vec![0xaa; 20]));
        assert_eq!(gnu_build_id_from_notes(&n[..30]), None);
        assert_eq!(gnu_build_id_from_notes(&[0xff; 12]), None);
    }

    #[test]
    fn the_running_kernels_own_build_id_loads_kallsyms() {
        let Some(running) = std::fs::read("/sys/kernel/notes")
            .ok()
            .and_then(|n| gnu_build_id_from_notes(&n))
        else {
            eprintln!("no /sys/kernel/notes build id here: skipped");
            return;
        };
        let (syms, status) = load_kernel_symbols(Some(&running));
        match status {
            KernelSymbolStatus::Loaded { symbols } => {
                assert_eq!(syms.map(|s| s.len()), Some(symbols));
                assert!(symbols > 0);
            }
            KernelSymbolStatus::KallsymsUnusable(_) => assert!(syms.is_none()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_foreign_kernel_is_not_symbolized() {
        let (syms, status) = load_kernel_symbols(Some(&[0x5a; 20]));
        assert!(syms.is_none());
        assert!(!matches!(status, KernelSymbolStatus::Loaded { .. }));
        assert_eq!(
            load_kernel_symbols(None).1,
            KernelSymbolStatus::NoRecordedBuildId
        );
    }
}
