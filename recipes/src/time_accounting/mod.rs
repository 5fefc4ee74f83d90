//! One time-accounting model behind every analysis: what busy, idle, self,
//! waiting and untraced time are, over which named span, for threads and
//! for devices. The summary, the thread list, the GPU analyses and the text
//! lines take their figures from here, so no two answers define "busy"
//! differently (docs/recipes.md, "Time accounting").
//!
//! - **Span**: always named ([`spans::SpanName`]): the trace, a device's
//!   active span, the profiler steps, a phase or a window.
//! - **Thread busy**: the union of the slices on the thread's own tracks
//!   (async tracks never count); it equals the sum of the slices' self
//!   times. **Waiting**: the union of slices whose frame is a wait
//!   ([`frame_roles`]). **Untraced**: span − busy, "in no traced call".
//!   A thread known only from samples has no busy time (unknown, not 0).
//! - **Device busy**: the union of kernels, copies and memsets over all of
//!   a device's streams; **idle** = span − busy, split into before the
//!   first activity, starved, stalled and unlinked gaps, and after the last
//!   activity ([`devices`]). Per-stream figures are never summed.
//! - **On CPU** and **runnable**: the kernel scheduler's view of a thread
//!   in system traces ([`scheduler`]): it ran on a CPU, or was ready and
//!   waited for one. Not busy: a thread may run without a traced call and
//!   sit in a traced call while off CPU.

pub mod devices;
pub mod frame_roles;
pub mod intervals;
pub mod scheduler;
pub mod spans;
pub mod threads;

pub use devices::{DeviceTime, GapClass, IdleBreakdown, StreamTime};
pub use frame_roles::FrameRole;
pub use spans::{NamedSpan, SpanName};
