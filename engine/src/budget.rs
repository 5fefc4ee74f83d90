//! What a query used when it overran its budget.
//!
//! DataFusion's memory pool says only "failed to allocate" in text. The
//! [`MeteredPool`] wraps the session's pool and records, as numbers, the
//! largest reservation total it saw and the last request it refused, so a
//! `QUERY_BUDGET_EXCEEDED` error can report what was used next to the budget
//! (the spec's "the budget, what was used, and the narrower call").

use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use datafusion::common::Result as DfResult;
use datafusion::execution::memory_pool::{
    MemoryConsumer, MemoryLimit, MemoryPool, MemoryReservation,
};

use crate::error::{ErrorCode, FlameoxError};

/// An allocation the pool refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// Bytes the whole pool held when the request came.
    pub held_bytes: u64,
    /// Bytes the operator asked for on top.
    pub requested_bytes: u64,
    /// The operator that asked (e.g. `GroupedHashAggregateStream[0]`).
    pub consumer: String,
}

/// A memory pool that remembers its peak and its last refusal.
#[derive(Debug)]
pub struct MeteredPool {
    inner: std::sync::Arc<dyn MemoryPool>,
    peak: AtomicUsize,
    last_refusal: Mutex<Option<Refusal>>,
}

impl MeteredPool {
    pub fn new(inner: std::sync::Arc<dyn MemoryPool>) -> Self {
        MeteredPool {
            inner,
            peak: AtomicUsize::new(0),
            last_refusal: Mutex::new(None),
        }
    }

    /// The most bytes reserved at once since the last [`MeteredPool::reset_peak`].
    pub fn peak_bytes(&self) -> u64 {
        self.peak.load(Ordering::Relaxed) as u64
    }

    /// Starts a new measurement (the pool is shared by the calls of one
    /// cached session, so with concurrent calls the peak is the session's).
    pub fn reset_peak(&self) {
        self.peak.store(self.inner.reserved(), Ordering::Relaxed);
    }

    /// The last request the pool refused, if any.
    pub fn last_refusal(&self) -> Option<Refusal> {
        self.last_refusal.lock().ok().and_then(|r| r.clone())
    }

    fn note_reserved(&self) {
        self.peak
            .fetch_max(self.inner.reserved(), Ordering::Relaxed);
    }
}

impl fmt::Display for MeteredPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "metered({})", self.inner)
    }
}

impl MemoryPool for MeteredPool {
    fn name(&self) -> &str {
        "metered"
    }

    fn register(&self, consumer: &MemoryConsumer) {
        self.inner.register(consumer)
    }

    fn unregister(&self, consumer: &MemoryConsumer) {
        self.inner.unregister(consumer)
    }

    fn grow(&self, reservation: &MemoryReservation, additional: usize) {
        self.inner.grow(reservation, additional);
        self.note_reserved();
    }

    fn shrink(&self, reservation: &MemoryReservation, shrink: usize) {
        self.inner.shrink(reservation, shrink)
    }

    fn try_grow(&self, reservation: &MemoryReservation, additional: usize) -> DfResult<()> {
        let held = self.inner.reserved();
        let outcome = self.inner.try_grow(reservation, additional);
        match &outcome {
            Ok(()) => self.note_reserved(),
            Err(_) => {
                if let Ok(mut last) = self.last_refusal.lock() {
                    *last = Some(Refusal {
                        held_bytes: held as u64,
                        requested_bytes: additional as u64,
                        consumer: reservation.consumer().name().to_owned(),
                    });
                }
            }
        }
        outcome
    }

    fn reserved(&self) -> usize {
        self.inner.reserved()
    }

    fn memory_limit(&self) -> MemoryLimit {
        self.inner.memory_limit()
    }
}

const NARROW: &str = "narrow the call: a time window, one thread, or a smaller scope";

/// The memory pool refused an allocation: the budget and what was used.
pub fn memory_exceeded(
    budget_bytes: u64,
    pool: &MeteredPool,
    engine_message: String,
) -> FlameoxError {
    let mut err = FlameoxError::new(
        ErrorCode::QueryBudgetExceeded,
        "the query needed more memory than its budget",
    )
    .detail("budget", "memory")
    .detail("memory_budget_bytes", budget_bytes)
    .detail("memory_peak_bytes", pool.peak_bytes());
    if let Some(refusal) = pool.last_refusal() {
        err = err
            .detail("memory_held_bytes", refusal.held_bytes)
            .detail("memory_requested_bytes", refusal.requested_bytes)
            .detail(
                "memory_needed_bytes",
                refusal.held_bytes.saturating_add(refusal.requested_bytes),
            )
            .detail("memory_consumer", refusal.consumer);
    }
    err.detail("engine_message", engine_message).remedy(NARROW)
}

/// The deadline passed: the budget, the time spent and the memory held.
pub fn deadline_exceeded(
    deadline: Duration,
    configured: Duration,
    elapsed: Duration,
    pool: &MeteredPool,
) -> FlameoxError {
    let mut err = FlameoxError::new(
        ErrorCode::QueryBudgetExceeded,
        format!(
            "the query ran past its {} ms deadline",
            deadline.as_millis()
        ),
    )
    .detail("budget", "deadline")
    .detail("deadline_ms", deadline.as_millis() as u64)
    .detail("configured_deadline_ms", configured.as_millis() as u64)
    .detail("elapsed_ms", elapsed.as_millis() as u64)
    .detail("memory_peak_bytes", pool.peak_bytes())
    .remedy(NARROW);
    if deadline < configured {
        err = err.remedy(format!(
            "or allow more time: --timeout up to {} s (the configured query.timeout_ms)",
            configured.as_secs_f64()
        ));
    }
    err
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::execution::memory_pool::GreedyMemoryPool;

    use super::*;

    #[test]
    fn the_pool_records_its_peak_and_the_refused_request() {
        let pool = Arc::new(MeteredPool::new(Arc::new(GreedyMemoryPool::new(1000))));
        let dyn_pool: Arc<dyn MemoryPool> = pool.clone();
        let a = MemoryConsumer::new("scan").register(&dyn_pool);
        a.try_grow(600).expect("fits");
        assert!(a.try_grow(500).is_err());
        a.shrink(100);
        assert_eq!(pool.peak_bytes(), 600);
        let refusal = pool.last_refusal().expect("refusal recorded");
        assert_eq!(refusal.held_bytes, 600);
        assert_eq!(refusal.requested_bytes, 500);
        assert_eq!(refusal.consumer, "scan");
        let err = memory_exceeded(1000, &pool, "text".into());
        assert_eq!(err.code, ErrorCode::QueryBudgetExceeded);
        assert_eq!(err.details["memory_needed_bytes"], 1100);
        pool.reset_peak();
        assert_eq!(pool.peak_bytes(), 500);
    }
}
