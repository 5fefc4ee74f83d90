//! The mutation campaign of `docs/reliability.md`: damaged copies of every
//! corpus file and generator output, imported through the real `flameox`
//! binary, each required to end within a limit with a documented exit code,
//! no panic or signal, bounded memory, nothing half-published, and a
//! workspace that `validate --full` finds clean.

pub mod campaign;
pub mod child;
pub mod mutate;
pub mod plan;
pub mod report;
pub mod seeds;
pub mod verdict;
