//! Turns a sample's call chain (addresses interleaved with
//! `PERF_CONTEXT_*` markers) into frames: each address is looked up in the
//! kernel's maps or in its process's maps (by the context it was recorded
//! in), giving the module and the offset in it, and — where the module's
//! symbols can be trusted — the function name.

use std::sync::Arc;

use super::address_space::AddressSpaces;
use super::features::PerfMeta;
use super::kernel_symbols::KernelSymbols;
use super::records::{MISC_CPUMODE_MASK, MISC_GUEST_KERNEL, MISC_KERNEL};
use super::sample::{
    CONTEXT_GUEST, CONTEXT_GUEST_KERNEL, CONTEXT_GUEST_USER, CONTEXT_HV, CONTEXT_KERNEL,
    CONTEXT_MAX, CONTEXT_USER,
};
use super::symbols::SymbolCache;

/// One frame of a call chain, innermost first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub ip: u64,
    /// Recorded in kernel (or hypervisor / guest-kernel) context.
    pub kernel: bool,
    /// The mapped file holding `ip` (`[kernel.kallsyms]` for the kernel
    /// image); `None` when no recorded mapping holds it.
    pub module: Option<Arc<str>>,
    /// `ip`'s offset in `module`'s file (perf's `map_ip`: for the kernel
    /// image this is the unrelocated address).
    pub offset_in_module: Option<u64>,
    /// The function, when the module's symbols could be trusted.
    pub symbol: Option<Arc<str>>,
    pub symbol_offset: Option<u64>,
}

impl Frame {
    /// `symbol`, else `module+0xoffset`, else `0xip`.
    pub fn label(&self) -> String {
        match (&self.symbol, &self.module, self.offset_in_module) {
            (Some(s), _, _) => s.to_string(),
            (None, Some(m), Some(off)) => format!("{m}+{off:#x}"),
            _ => format!("{:#x}", self.ip),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    Kernel,
    User,
    Hypervisor,
    GuestKernel,
    GuestUser,
}

/// Resolves addresses; holds the symbol caches across samples.
pub struct FrameResolver {
    symbols: Option<SymbolCache>,
    kernel_symbols: Option<KernelSymbols>,
}

impl FrameResolver {
    /// `resolve_symbols == false`: modules and offsets only.
    pub fn new(resolve_symbols: bool, kernel_symbols: Option<KernelSymbols>) -> Self {
        FrameResolver {
            symbols: resolve_symbols.then(SymbolCache::default),
            kernel_symbols,
        }
    }

    /// How each module's symbols were found (or not).
    pub fn symbol_cache(&self) -> Option<&SymbolCache> {
        self.symbols.as_ref()
    }

    fn frame(
        &mut self,
        spaces: &AddressSpaces,
        meta: &PerfMeta,
        pid: Option<i32>,
        ip: u64,
        ctx: Context,
    ) -> Frame {
        let kernel = matches!(
            ctx,
            Context::Kernel | Context::Hypervisor | Context::GuestKernel
        );
        let mut f = Frame {
            ip,
            kernel,
            module: None,
            offset_in_module: None,
            symbol: None,
            symbol_offset: None,
        };
        let mapping = match ctx {
            Context::Kernel => spaces.find(pid, ip, true),
            Context::User => spaces.find(pid, ip, false),
            _ => None,
        };
        let Some(m) = mapping else { return f };
        let off = m.file_offset(ip);
        f.module = Some(m.module.clone());
        f.offset_in_module = Some(off);
        let named = if ctx == Context::Kernel {
            self.kernel_symbols.as_ref().and_then(|k| k.lookup(ip))
        } else if let Some(cache) = self.symbols.as_mut() {
            let recorded = || {
                m.build_id
                    .as_deref()
                    .or_else(|| meta.build_id_of(&m.module))
            };
            cache
                .get(&m.module, recorded)
                .and_then(|s| s.lookup_offset(off))
        } else {
            None
        };
        if let Some((name, at)) = named {
            f.symbol = Some(name);
            f.symbol_offset = Some(at);
        }
        f
    }

    /// The frames of a sample: its call chain, or its `ip` alone when no
    /// chain was recorded. `misc` is the sample record's header `misc`.
    pub fn resolve(
        &mut self,
        spaces: &AddressSpaces,
        meta: &PerfMeta,
        pid: Option<i32>,
        misc: u16,
        ip: Option<u64>,
        callchain: &[u64],
    ) -> Vec<Frame> {
        let mut ctx = match misc & MISC_CPUMODE_MASK {
            MISC_KERNEL => Context::Kernel,
            MISC_GUEST_KERNEL => Context::GuestKernel,
            3 => Context::Hypervisor,
            5 => Context::GuestUser,
            _ => Context::User,
        };
        if callchain.is_empty() {
            return ip
                .map(|ip| vec![self.frame(spaces, meta, pid, ip, ctx)])
                .unwrap_or_default();
        }
        let mut out = Vec::with_capacity(callchain.len());
        for &ip in callchain {
            if ip >= CONTEXT_MAX {
                ctx = match ip {
                    CONTEXT_KERNEL => Context::Kernel,
                    CONTEXT_USER => Context::User,
                    CONTEXT_HV => Context::Hypervisor,
                    CONTEXT_GUEST | CONTEXT_GUEST_KERNEL => Context::GuestKernel,
                    CONTEXT_GUEST_USER => Context::GuestUser,
                    _ => ctx,
                };
                continue;
            }
            out.push(self.frame(spaces, meta, pid, ip, ctx));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf_data::records::MmapRecord;

    #[test]
    fn markers_switch_context_and_are_not_frames() {
        let mut spaces = AddressSpaces::default();
        let mm = |pid: i32, start, name: &str| MmapRecord {
            pid,
            tid: pid,
            start,
            len: 0x1000,
            pgoff: 0x200,
            filename: name.into(),
            build_id: None,
            prot: None,
            data: false,
            cpumode: if pid == -1 { 1 } else { 2 },
        };
        spaces.mmap(&mm(-1, 0xffff_1000, "[kernel.kallsyms]_text"));
        spaces.mmap(&mm(7, 0x1000, "/no/such/lib.so"));
        let mut r = FrameResolver::new(true, None);
        let chain = [
            CONTEXT_KERNEL,
            0xffff_1010,
            CONTEXT_USER,
            0x1020,
            0x9999,
            CONTEXT_MAX + 5,
        ];
        let frames = r.resolve(&spaces, &PerfMeta::default(), Some(7), 1, None, &chain);
        let labels: Vec<String> = frames.iter().map(Frame::label).collect();
        assert_eq!(
            labels,
            vec!["[kernel.kallsyms]+0x210", "/no/such/lib.so+0x220", "0x9999"]
        );
        assert_eq!(
            frames.iter().map(|f| f.kernel).collect::<Vec<_>>(),
            vec![true, false, false]
        );
        let single = r.resolve(&spaces, &PerfMeta::default(), Some(7), 2, Some(0x1004), &[]);
        assert_eq!(single.len(), 1);
        assert_eq!(single[0].offset_in_module, Some(0x204));
    }
}
