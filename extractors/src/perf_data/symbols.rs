//! Function names for user-space frames, read from the mapped ELF file on
//! this machine — only when the file is there and its build id is the one
//! perf recorded (or perf recorded none), so a rebuilt library never names
//! frames wrongly. A separate debug file found by build id under
//! `/usr/lib/debug/.build-id/` is preferred (its `.symtab` has the local
//! functions a stripped library lacks); otherwise the file's own `.symtab`,
//! else its `.dynsym`. Names are not demangled.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol, SymbolKind};

/// Files larger than this are not read for symbols.
const MAX_ELF_BYTES: u64 = 1 << 30;
/// Modules whose symbols are looked for (a file naming many cannot make
/// the decoder read half the disk).
const MAX_MODULES: usize = 4096;

/// Why a module has no symbols (or where they came from).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SymbolSource {
    /// From the debug file found by build id.
    DebugFile(PathBuf),
    /// From the mapped file itself.
    MappedFile,
    /// Not a path on this machine (`[vdso]`, `//anon`, …) or not a file.
    NotFound,
    /// The file here has another build id than the one recorded.
    BuildIdMismatch,
    /// The file is not a readable ELF (or too large).
    Unreadable(String),
}

#[derive(Debug, Clone)]
struct Sym {
    start: u64,
    size: u64,
    name: Arc<str>,
    /// Preference among symbols at one address (higher wins).
    rank: (bool, bool, bool, std::cmp::Reverse<usize>, usize),
}

/// Function symbols of one ELF file and its `PT_LOAD` segments (to turn a
/// file offset into the address symbols use).
#[derive(Debug, Default)]
pub struct ElfSymbols {
    syms: Vec<Sym>,
    /// `(file offset, virtual address, file size)` per loadable segment.
    segments: Vec<(u64, u64, u64)>,
    /// The file's own build id.
    pub build_id: Option<Vec<u8>>,
}

fn function_symbols<'d>(file: &object::File<'d>) -> Vec<Sym> {
    // Untyped labels count when they sit in `.text` (as perf counts them).
    let text_section = file.section_by_name(".text").map(|s| s.index());
    let mut out = collect_functions(file.symbols(), text_section);
    if out.is_empty() {
        out = collect_functions(file.dynamic_symbols(), text_section);
    }
    out
}

fn collect_functions<'d, 'f>(
    symbols: object::SymbolIterator<'d, 'f>,
    text_section: Option<object::SectionIndex>,
) -> Vec<Sym> {
    let mut out = Vec::new();
    for sym in symbols {
        let is_label = sym.kind() == SymbolKind::Unknown
            && text_section.is_some()
            && sym.section_index() == text_section;
        if !(sym.kind() == SymbolKind::Text || is_label) || sym.is_undefined() || sym.address() == 0
        {
            continue;
        }
        let Ok(name) = sym.name() else { continue };
        if name.is_empty() {
            continue;
        }
        let leading = name.bytes().take_while(|&b| b == b'_').count();
        out.push(Sym {
            start: sym.address(),
            size: sym.size(),
            name: Arc::from(name),
            // perf's preference: sized, not weak, global, fewer leading
            // underscores, longer name.
            rank: (
                sym.size() != 0,
                !sym.is_weak(),
                sym.is_global(),
                std::cmp::Reverse(leading),
                name.len(),
            ),
        });
    }
    out
}

fn read_elf(path: &Path) -> Result<Vec<u8>, String> {
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    if meta.len() > MAX_ELF_BYTES {
        return Err(format!("{} bytes is over the symbol-file cap", meta.len()));
    }
    std::fs::read(path).map_err(|e| e.to_string())
}

/// Build ids are compared on the shorter length, the rest being zero
/// padding in perf's 20/24-byte fields.
pub fn same_build_id(recorded: &[u8], actual: &[u8]) -> bool {
    let n = recorded.len().min(actual.len());
    n > 0
        && recorded.get(..n) == actual.get(..n)
        && recorded.iter().skip(n).all(|&b| b == 0)
        && actual.iter().skip(n).all(|&b| b == 0)
}

fn debug_file_path(build_id: &[u8]) -> Option<PathBuf> {
    let (first, rest) = build_id.split_first()?;
    let hex: String = rest.iter().map(|b| format!("{b:02x}")).collect();
    Some(PathBuf::from(format!(
        "/usr/lib/debug/.build-id/{first:02x}/{hex}.debug"
    )))
}

impl ElfSymbols {
    /// Loads the symbols of the file at `path` if it is there and its
    /// build id matches `recorded` (any file when nothing was recorded).
    pub fn load(
        path: &Path,
        recorded: Option<&[u8]>,
    ) -> Result<(ElfSymbols, SymbolSource), SymbolSource> {
        if !path.is_absolute() {
            return Err(SymbolSource::NotFound);
        }
        let data = match read_elf(path) {
            Ok(d) => d,
            Err(_) if !path.exists() => return Err(SymbolSource::NotFound),
            Err(e) => return Err(SymbolSource::Unreadable(e)),
        };
        let file =
            object::File::parse(&*data).map_err(|e| SymbolSource::Unreadable(e.to_string()))?;
        let actual = file.build_id().ok().flatten();
        if let Some(rec) = recorded.filter(|r| r.iter().any(|&b| b != 0)) {
            match actual {
                Some(a) if same_build_id(rec, a) => {}
                _ => return Err(SymbolSource::BuildIdMismatch),
            }
        }
        let segments = file
            .segments()
            .map(|s| {
                let (off, size) = s.file_range();
                (off, s.address(), size)
            })
            .collect();
        let from_debug = actual.and_then(debug_file_path).and_then(|p| {
            let bytes = read_elf(&p).ok()?;
            let dbg = object::File::parse(&*bytes).ok()?;
            let id_ok = dbg
                .build_id()
                .ok()
                .flatten()
                .zip(actual)
                .is_some_and(|(d, a)| same_build_id(a, d));
            let syms = function_symbols(&dbg);
            (id_ok && !syms.is_empty()).then_some((syms, p))
        });
        let (syms, source) = match from_debug {
            Some((syms, p)) => (syms, SymbolSource::DebugFile(p)),
            None => (function_symbols(&file), SymbolSource::MappedFile),
        };
        let mut symbols = ElfSymbols::from_parts(syms, segments);
        symbols.build_id = actual.map(<[u8]>::to_vec);
        Ok((symbols, source))
    }

    fn from_parts(mut syms: Vec<Sym>, segments: Vec<(u64, u64, u64)>) -> ElfSymbols {
        syms.sort_by(|a, b| a.start.cmp(&b.start).then(b.rank.cmp(&a.rank)));
        syms.dedup_by_key(|s| s.start);
        ElfSymbols {
            syms,
            segments,
            build_id: None,
        }
    }

    /// The address symbols use for file offset `off`: through the loadable
    /// segment holding it (the offset itself in a file without segments).
    fn address_of_offset(&self, off: u64) -> Option<u64> {
        if self.segments.is_empty() {
            return Some(off);
        }
        self.segments
            .iter()
            .find(|(o, _, size)| off >= *o && off - o < *size)
            .map(|(o, vaddr, _)| vaddr.wrapping_add(off - o))
    }

    /// The function holding file offset `off`, and the offset into it.
    pub fn lookup_offset(&self, off: u64) -> Option<(Arc<str>, u64)> {
        let addr = self.address_of_offset(off)?;
        let i = self
            .syms
            .partition_point(|s| s.start <= addr)
            .checked_sub(1)?;
        let s = self.syms.get(i)?;
        let inside = if s.size != 0 {
            addr - s.start < s.size
        } else {
            self.syms.get(i + 1).is_none_or(|next| addr < next.start)
        };
        inside.then(|| (s.name.clone(), addr - s.start))
    }

    pub fn len(&self) -> usize {
        self.syms.len()
    }

    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }
}

/// Symbol tables by module path, each loaded once.
#[derive(Debug, Default)]
pub struct SymbolCache {
    modules: HashMap<Arc<str>, Option<Arc<ElfSymbols>>>,
    /// How each module's symbols were (not) found.
    pub sources: Vec<(String, SymbolSource)>,
}

impl SymbolCache {
    /// The symbols already loaded for `module`.
    pub fn loaded(&self, module: &str) -> Option<&ElfSymbols> {
        self.modules.get(module)?.as_deref()
    }

    /// The symbols of `module` (whose recorded build id `build_id` gives),
    /// loading them on first use.
    pub fn get<'b>(
        &mut self,
        module: &Arc<str>,
        build_id: impl FnOnce() -> Option<&'b [u8]>,
    ) -> Option<Arc<ElfSymbols>> {
        if let Some(s) = self.modules.get(module) {
            return s.clone();
        }
        let loaded = if self.modules.len() >= MAX_MODULES {
            Err(SymbolSource::Unreadable(
                "too many modules: symbols not loaded".into(),
            ))
        } else {
            ElfSymbols::load(Path::new(&**module), build_id())
        };
        let (value, source) = match loaded {
            Ok((syms, source)) => (Some(Arc::new(syms)), source),
            Err(source) => (None, source),
        };
        self.sources.push((module.to_string(), source));
        self.modules.insert(module.clone(), value.clone());
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sym(start: u64, size: u64, name: &str, global: bool) -> Sym {
        let leading = name.bytes().take_while(|&b| b == b'_').count();
        Sym {
            start,
            size,
            name: Arc::from(name),
            rank: (
                size != 0,
                true,
                global,
                std::cmp::Reverse(leading),
                name.len(),
            ),
        }
    }

    #[test]
    fn lookup_uses_sizes_segments_and_preference() {
        let s = ElfSymbols::from_parts(
            vec![
                sym(0x1100, 0x10, "__alias", true),
                sym(0x1100, 0x10, "main", true),
                sym(0x1200, 0, "tail", false),
                sym(0x1300, 0x8, "last", false),
            ],
            vec![(0x0, 0x0, 0x100), (0x100, 0x1100, 0x1000)],
        );
        assert_eq!(s.len(), 3);
        let at = |off| s.lookup_offset(off).map(|(n, o)| (n.to_string(), o));
        // File offset 0x100 is address 0x1100.
        assert_eq!(at(0x104), Some(("main".into(), 4)));
        assert_eq!(at(0x118), None, "past main's size");
        assert_eq!(
            at(0x2f0),
            Some(("tail".into(), 0xf0)),
            "sizeless: up to the next"
        );
        assert_eq!(at(0x304), Some(("last".into(), 4)));
        assert_eq!(at(0x30c), None, "past last's size");
        assert_eq!(at(0x50), None, "before any symbol");
        assert_eq!(at(0x2000), None, "in no segment");
    }

    #[test]
    fn build_ids_compare_on_their_common_length() {
        assert!(same_build_id(&[1, 2, 3, 0, 0], &[1, 2, 3]));
        assert!(!same_build_id(&[1, 2, 4], &[1, 2, 3]));
        assert!(!same_build_id(&[], &[1]));
        assert!(!same_build_id(&[1, 2, 3, 9], &[1, 2, 3]));
    }

    /// This test binary, a function in it with an address of its own, and
    /// that function's file offset.
    fn own_function() -> Option<(PathBuf, Option<Vec<u8>>, String, u64)> {
        let exe = std::env::current_exe().ok()?;
        let data = std::fs::read(&exe).ok()?;
        let file = object::File::parse(&*data).ok()?;
        let id = file.build_id().ok().flatten().map(<[u8]>::to_vec);
        let text: Vec<_> = file
            .symbols()
            .filter(|s| s.kind() == SymbolKind::Text && s.size() > 16 && s.address() != 0)
            .collect();
        let sym = text.iter().find(|s| {
            s.name()
                .is_ok_and(|n| n.contains("flameox") || n.contains("perf_data"))
                && text.iter().filter(|o| o.address() == s.address()).count() == 1
        })?;
        let seg = file.segments().find(|g| {
            let (off, size) = g.file_range();
            size > 0
                && sym.address() >= g.address()
                && sym.address() - g.address() < size
                && off <= g.address()
        })?;
        let offset = sym.address() - seg.address() + seg.file_range().0;
        Some((exe, id, sym.name().ok()?.to_owned(), offset))
    }

    #[test]
    fn a_local_file_names_frames_only_when_its_build_id_matches() {
        let Some((exe, id, name, offset)) = own_function() else {
            eprintln!("no usable function symbol in the test binary: skipped");
            return;
        };
        let resolved = |recorded: Option<&[u8]>| {
            ElfSymbols::load(&exe, recorded)
                .map(|(s, _)| s.lookup_offset(offset).map(|(n, at)| (n.to_string(), at)))
        };
        assert_eq!(
            resolved(None).ok(),
            Some(Some((name.clone(), 0))),
            "no build id recorded"
        );
        assert_eq!(
            resolved(Some(&[0x5a; 20])).err(),
            Some(SymbolSource::BuildIdMismatch)
        );
        if let Some(id) = id {
            assert_eq!(
                resolved(Some(&id)).ok(),
                Some(Some((name, 0))),
                "build id matches"
            );
        }
    }

    #[test]
    fn missing_and_relative_paths_are_not_found() {
        assert_eq!(
            ElfSymbols::load(Path::new("[vdso]"), None).err(),
            Some(SymbolSource::NotFound)
        );
        assert_eq!(
            ElfSymbols::load(Path::new("/nonexistent/flameox/lib.so"), None).err(),
            Some(SymbolSource::NotFound)
        );
    }
}
