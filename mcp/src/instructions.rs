//! The `instructions` string of `initialize`: purpose, first-run sequence,
//! paging rule and today's UTC date. Its size is budgeted by a test.

/// Renders the instructions with today's UTC date.
pub fn instructions() -> String {
    let today = time::OffsetDateTime::now_utc().date();
    format!(
        "flameox answers performance questions from traces stored in this project's .flameox workspace. \
First run: initialize_workspace (once), import_artifact with a trace path, then summarize_target with target set to the run_id it returns. \
`target` names what is read (run id, unique prefix, `latest`, or artifact id); `base` the other side of a comparison. \
Drill down with list_threads, get_frame_instances, get_frame_callers and get_trace_window. \
Pages: pass next_cursor back as cursor. \
An empty answer carries evidence.status and, when something can fix it, next_tool and next_arguments. \
Today (UTC) is {today}."
    )
}
