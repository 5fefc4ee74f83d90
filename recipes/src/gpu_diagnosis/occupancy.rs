//! Theoretical occupancy of a kernel shape: how many of its blocks fit on
//! one SM at once, and which SM resource stops the next one (warps,
//! registers, shared memory, or the SM's block slots) — the first answer
//! to "why is this kernel slow?" after "does it fill the device?".
//!
//! NVIDIA's allocation rules, from the SM limits the trace recorded
//! (Kineto `deviceProperties`, Nsight `TARGET_INFO_GPU`): registers are
//! allocated per warp in units of 256 and split over the SM's four
//! sub-partitions (two on compute capability 6.0); shared memory in units
//! of 128 B from 8.0 on (256 before), plus 1 KiB the runtime reserves per
//! block from 8.0 on; the SM's shared memory is taken at its largest carveout,
//! so the figure is an upper bound when a kernel ran with a smaller one.
//! Block slots per SM come from the trace (Nsight) or the compute
//! capability's table. AMD devices (wavefronts of 64, no register file
//! per SM in the trace) get no figure. Kineto's own `est. achieved
//! occupancy %` is min(these blocks, blocks per SM) over the SM's threads;
//! the corpus test checks the two agree on every kernel.

use serde::{Deserialize, Serialize};

/// The per-SM resources of one device, as the trace recorded them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SmLimits {
    /// Compute capability, major and minor.
    pub compute_capability: (i64, i64),
    pub max_warps_per_sm: i64,
    /// Block slots per SM; `None`: not recorded and not in the table.
    pub max_blocks_per_sm: Option<i64>,
    pub registers_per_sm: i64,
    /// Shared memory per SM at the largest carveout, bytes.
    pub shared_memory_per_sm: i64,
    pub warp_size: i64,
}

/// What stops one more block from fitting on an SM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OccupancyLimiter {
    Warps,
    Registers,
    SharedMemory,
    Blocks,
}

impl OccupancyLimiter {
    /// As a sentence says it: `limited by registers`.
    pub fn words(self) -> &'static str {
        match self {
            OccupancyLimiter::Warps => "warp slots",
            OccupancyLimiter::Registers => "registers",
            OccupancyLimiter::SharedMemory => "shared memory",
            OccupancyLimiter::Blocks => "block slots",
        }
    }
}

/// One shape's theoretical occupancy on one device.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Occupancy {
    /// Blocks resident on one SM at once.
    pub blocks_per_sm: i64,
    /// Resident warps over the SM's warp slots, in percent.
    pub pct: f64,
    pub limited_by: OccupancyLimiter,
}

/// Block slots per SM by compute capability (CUDA C++ Programming Guide,
/// "Compute Capabilities" table), for traces that do not record them.
fn blocks_per_sm_of(cc: (i64, i64)) -> Option<i64> {
    match cc {
        (5 | 6, _) | (7, 0 | 2) | (8, 0) | (9, 0) | (10..=12, _) => Some(32),
        (7, 5) => Some(16),
        (8, 6 | 7) => Some(16),
        (8, 9) => Some(24),
        _ => None,
    }
}

fn round_up(n: i64, unit: i64) -> i64 {
    if unit <= 0 {
        return n;
    }
    n.saturating_add(unit - 1) / unit * unit
}

impl SmLimits {
    /// Limits from recorded values; `None` when one the model needs is
    /// missing or not positive, or the device is not NVIDIA's (warp ≠ 32).
    pub fn new(
        compute_capability: (i64, i64),
        max_warps_per_sm: i64,
        max_blocks_per_sm: Option<i64>,
        registers_per_sm: i64,
        shared_memory_per_sm: i64,
        warp_size: i64,
    ) -> Option<SmLimits> {
        let positive = [max_warps_per_sm, registers_per_sm, shared_memory_per_sm];
        if warp_size != 32 || compute_capability.0 < 5 || positive.iter().any(|v| *v <= 0) {
            return None;
        }
        Some(SmLimits {
            compute_capability,
            max_warps_per_sm,
            max_blocks_per_sm: max_blocks_per_sm
                .filter(|b| *b > 0)
                .or_else(|| blocks_per_sm_of(compute_capability)),
            registers_per_sm,
            shared_memory_per_sm,
            warp_size,
        })
    }

    /// Register sub-partitions of an SM: a warp's registers come from one.
    fn sub_partitions(&self) -> i64 {
        if self.compute_capability == (6, 0) {
            2
        } else {
            4
        }
    }

    /// Shared memory per block as allocated: the kernel's, the runtime's
    /// reserve from 8.0 on, rounded up to the allocation unit.
    fn shared_memory_per_block(&self, kernel_bytes: i64) -> i64 {
        let (reserve, unit) = match self.compute_capability.0 {
            8.. => (1024, 128),
            _ => (0, 256),
        };
        round_up(kernel_bytes.max(0).saturating_add(reserve), unit)
    }

    /// The theoretical occupancy of blocks of `threads` threads using
    /// `registers` per thread and `shared_memory` bytes per block; `None`
    /// when no block fits (the launch could not have run as recorded) or
    /// the block slots are unknown.
    pub fn occupancy(
        &self,
        threads: i64,
        registers: Option<i64>,
        shared_memory: Option<i64>,
    ) -> Option<Occupancy> {
        let warps = (threads.max(1) + self.warp_size - 1) / self.warp_size;
        let mut limits = vec![
            (OccupancyLimiter::Warps, self.max_warps_per_sm / warps),
            (OccupancyLimiter::Blocks, self.max_blocks_per_sm?),
        ];
        if let Some(r) = registers.filter(|r| *r > 0) {
            let per_warp = round_up(r.saturating_mul(self.warp_size), 256);
            let parts = self.sub_partitions();
            let warps_fit = self.registers_per_sm / parts / per_warp * parts;
            limits.push((OccupancyLimiter::Registers, warps_fit / warps));
        }
        let per_block = self.shared_memory_per_block(shared_memory.unwrap_or(0));
        if per_block > 0 {
            limits.push((
                OccupancyLimiter::SharedMemory,
                self.shared_memory_per_sm / per_block,
            ));
        }
        // The fewest blocks wins; on a tie the order of the enum names it.
        let (limited_by, blocks) = limits
            .into_iter()
            .min_by_key(|(limiter, blocks)| (*blocks, *limiter))?;
        (blocks > 0).then(|| Occupancy {
            blocks_per_sm: blocks,
            pct: (blocks * warps) as f64 * 100.0 / self.max_warps_per_sm as f64,
            limited_by,
        })
    }

    /// `cc 8.0: 64 warps, 32 blocks, 65536 registers, 167936 B shared
    /// memory per SM` — the basis an answer states once per device.
    pub fn describe(&self) -> String {
        let (major, minor) = self.compute_capability;
        let blocks = self
            .max_blocks_per_sm
            .map(|b| format!("{b} blocks, "))
            .unwrap_or_default();
        format!(
            "cc {major}.{minor}: {} warps, {blocks}{} registers, {} B shared memory per SM",
            self.max_warps_per_sm, self.registers_per_sm, self.shared_memory_per_sm
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a100() -> SmLimits {
        SmLimits::new((8, 0), 64, None, 65536, 167936, 32).unwrap_or_else(|| panic!("A100"))
    }

    fn occ(threads: i64, regs: i64, smem: i64) -> (i64, OccupancyLimiter) {
        let o = a100()
            .occupancy(threads, Some(regs), Some(smem))
            .unwrap_or_else(|| panic!("{threads} {regs} {smem}"));
        (o.blocks_per_sm, o.limited_by)
    }

    /// Shapes from the AlexNet A100 trace with Kineto's own estimate.
    #[test]
    fn alexnet_shapes_match_kinetos_estimate() {
        use OccupancyLimiter::*;
        // 47 registers: 1,536 per warp, 10 warps per sub-partition → 5 blocks (62.5 %, Kineto 63).
        assert_eq!(occ(256, 47, 0), (5, Registers));
        // 160 registers, 16 KiB: 3 blocks (18.75 %, Kineto 19).
        assert_eq!(occ(128, 160, 16384), (3, Registers));
        assert_eq!(occ(128, 40, 0), (12, Registers));
        assert_eq!(occ(128, 18, 0), (16, Warps));
        // 64 registers and 35,904 B: registers allow 2, shared memory 4.
        assert_eq!(occ(512, 64, 35904), (2, Registers));
        assert_eq!(occ(256, 122, 24576), (2, Registers));
        let o = a100().occupancy(256, Some(47), Some(0)).map(|o| o.pct);
        assert_eq!(o, Some(62.5));
    }

    #[test]
    fn shared_memory_and_block_slots_limit_too() {
        use OccupancyLimiter::*;
        // 48 KiB + the 1 KiB reserve: 3 blocks of 167,936 B.
        assert_eq!(occ(128, 32, 49152), (3, SharedMemory));
        // 32-thread blocks: 64 fit by warps, 32 slots.
        assert_eq!(occ(32, 16, 0), (32, Blocks));
        // More shared memory than the SM has: nothing fits.
        assert_eq!(a100().occupancy(128, Some(32), Some(200_000)), None);
    }

    #[test]
    fn non_nvidia_and_unknown_devices_get_no_limits() {
        assert!(SmLimits::new((9, 4), 32, None, 65536, 65536, 64).is_none());
        assert!(SmLimits::new((8, 0), 64, None, 0, 167936, 32).is_none());
        let unknown = SmLimits::new((13, 0), 64, None, 65536, 167936, 32);
        let o = unknown.and_then(|l| l.occupancy(256, Some(32), Some(0)));
        assert_eq!(o, None, "no block-slot figure for an unknown capability");
    }
}
