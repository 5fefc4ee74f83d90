//! Capture plans held in memory between calls (an MCP server's life, a command's run). A plan id is 256 random
//! bits (64 hex digits), valid for a short time measured on the monotonic
//! clock, usable once (it is removed before any process starts), and lost on
//! restart. At most [`MAX_PLANS`] are held; planning past that drops the
//! plan closest to expiry. Execution still re-plans and compares the binding
//! digest, so a plan whose workload, parameters, program or adapter changed
//! is refused even before it expires.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::capture::CapturePlan;
use crate::error::{ErrorCode, FlameoxError};
use crate::fsutil::random_bytes;

/// How long a plan stays valid by default.
pub const DEFAULT_PLAN_TTL: Duration = Duration::from_secs(600);
/// Plans held at once.
pub const MAX_PLANS: usize = 64;

/// The in-memory plan table.
pub struct PlanStore {
    plans: Mutex<HashMap<String, (CapturePlan, Instant)>>,
    ttl: Duration,
}

fn invalid(message: &str) -> FlameoxError {
    FlameoxError::new(ErrorCode::InvalidCapturePlan, message)
        .remedy("make a new plan with plan_capture, then execute it once")
        .recover_with(
            "plan_capture",
            serde_json::json!({}),
            "flameox capture plan",
        )
}

impl PlanStore {
    pub fn new(ttl: Duration) -> PlanStore {
        PlanStore {
            plans: Mutex::new(HashMap::new()),
            ttl,
        }
    }

    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Stores a plan under a fresh random id.
    pub fn insert(&self, plan: CapturePlan) -> Result<String, FlameoxError> {
        let id = hex_id(random_bytes::<32>()?);
        let mut plans = self
            .plans
            .lock()
            .map_err(|_| FlameoxError::internal("plan table poisoned"))?;
        let now = Instant::now();
        plans.retain(|_, (_, expires)| *expires > now);
        while plans.len() >= MAX_PLANS {
            let soonest = plans
                .iter()
                .min_by_key(|(_, (_, expires))| *expires)
                .map(|(k, _)| k.clone());
            match soonest {
                Some(k) => plans.remove(&k),
                None => break,
            };
        }
        plans.insert(id.clone(), (plan, now + self.ttl));
        Ok(id)
    }

    /// Removes and returns a plan: unknown, used and expired ids all fail.
    pub fn take(&self, id: &str) -> Result<CapturePlan, FlameoxError> {
        let mut plans = self
            .plans
            .lock()
            .map_err(|_| FlameoxError::internal("plan table poisoned"))?;
        match plans.remove(id) {
            None => Err(invalid(
                "no such capture plan: unknown, already executed, dropped, or made before a restart",
            )),
            Some((_, expires)) if Instant::now() >= expires => {
                Err(invalid("the capture plan expired"))
            }
            Some((plan, _)) => Ok(plan),
        }
    }

    pub fn len(&self) -> usize {
        self.plans.lock().map(|p| p.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn hex_id(bytes: [u8; 32]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
