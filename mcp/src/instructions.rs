//! The `instructions` string of `initialize`: purpose, first-run sequence,
//! paging rule and today's UTC date. Its size is budgeted by a test.

/// Renders the instructions with today's UTC date.
pub fn instructions() -> String {
    let today = time::OffsetDateTime::now_utc().date();
    format!(
        "flameox answers performance questions from traces stored in this project's .flameox workspace. \
First run: initialize_workspace (once per project), then import_artifact with a trace path, then analyze_hotspots on the run_id it returns; \
drill down with get_frame_callers, get_frame_callees, get_stack_examples and get_trace_window. \
Results are bounded: each page says returned of total; pass next_cursor back as cursor for the next page. \
An empty answer carries evidence.status and, when something can fix it, next_tool and next_arguments. \
Today (UTC) is {today}."
    )
}
