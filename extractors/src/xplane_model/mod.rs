//! An XSpace (`*.xplane.pb`) decoded in place into a name-resolved model
//! ([`space`]) with each event classified by the XLA/TSL conventions
//! ([`kinds`], [`classify`]); [`crate::xplane`] turns it into evidence.

pub mod classify;
#[cfg(test)]
mod classify_tests;
#[cfg(test)]
mod corpus_tests;
pub mod decode;
mod decode_events;
#[cfg(test)]
mod decode_tests;
pub mod fields;
pub mod kinds;
pub mod notes;
pub mod proto;
pub mod space;
pub mod summary;
