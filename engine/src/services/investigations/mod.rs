//! Investigation memory: the question an agent is answering, the runs and
//! records it is about, and the hypotheses it tests — kept in the
//! workspace as revisioned records ([`crate::revisions`]) so that a new
//! conversation resumes from `list_investigations` alone.

pub mod finding;
pub mod hypothesis;
pub mod investigation;
pub mod record_rules;
pub mod references;
pub mod report;
pub mod report_markdown;
