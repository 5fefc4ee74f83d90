//! The engine's operation catalog as subcommands: each operation's clap
//! command is built from its declaration (path, description, positional
//! arguments, and the input schema's properties as `--flags`), its
//! arguments are read back into the JSON the engine decodes, and its answer
//! is printed as the summary line and a table of the declared columns.

use std::io::Write;

use clap::{Arg, ArgAction, ArgMatches, Command};
use flameox_engine::FlameoxError;
use flameox_engine::error::Result;
use flameox_engine::operations::{Cell, Column, FlagValue, Operation, Session, catalog};
use flameox_engine::services::plans::{DEFAULT_PLAN_TTL, PlanStore};
use flameox_engine::{Workspace, WorkspaceLocator};
use serde_json::{Map, Value};

use crate::args::GlobalOptions;
use crate::render::{Table, bytes, duration_ns, thousands};
use crate::terminal::{CliProgressSource, block_on, call_options, locator};
use flameox_engine::operations::command_line::{command_line, flag_name};

/// A name clap keeps for the process's life (the tree is built once; clap
/// takes `&'static str` without its `string` feature).
fn leak(text: String) -> &'static str {
    Box::leak(text.into_boxed_str())
}

/// The clap command of one operation (its last path word).
/// Whether a global option sets this argument (the import's deadline is
/// `--timeout`): the command leaves it out.
fn set_by_global_option(op: &Operation, property: &str) -> bool {
    flameox_engine::operations::SET_BY_GLOBAL_OPTION
        .iter()
        .any(|(name, argument, _)| *name == op.name && *argument == property)
}

/// Whether the command leaves this argument out: a global option sets it,
/// or only an agent's session can fill it (a held plan id).
fn left_out(op: &Operation, property: &str) -> bool {
    set_by_global_option(op, property)
        || flameox_engine::operations::SESSION_ONLY_ARGUMENTS
            .iter()
            .any(|(name, argument)| *name == op.name && *argument == property)
}

/// A description written once for both surfaces, in the terminal's words:
/// an operation's MCP name (`compare_run_sets`) reads as its command
/// (`flameox analyze compare`).
fn in_cli_words(text: &str) -> String {
    let mut out = text.to_owned();
    for op in catalog().iter().filter(|op| op.has_command()) {
        let command = format!("`flameox {}`", op.cli.join(" "));
        let mut replaced = String::with_capacity(out.len());
        let mut rest = out.as_str();
        while let Some(at) = rest.find(op.name) {
            let end = at + op.name.len();
            let word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
            let bounded =
                !word(rest[..at].chars().next_back()) && !word(rest[end..].chars().next());
            replaced.push_str(&rest[..at]);
            replaced.push_str(if bounded { &command } else { op.name });
            rest = &rest[end..];
        }
        replaced.push_str(rest);
        out = replaced;
    }
    out
}

fn command_of(op: &'static Operation) -> Command {
    let schema = (op.schema)();
    let required: Vec<&str> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let name = op.cli.last().copied().unwrap_or(op.name);
    let example: Vec<String> = op
        .positional
        .iter()
        .filter(|p| required.contains(p))
        .map(|p| format!("<{p}>"))
        .collect();
    let about = format!(
        "{} Example: `flameox {}{}{}`",
        op.description,
        op.cli.join(" "),
        if example.is_empty() { "" } else { " " },
        example.join(" ")
    );
    let mut cmd = Command::new(name).about(in_cli_words(&about));
    for (command, alias) in flameox_engine::operations::CLI_ALIASES {
        if *command == op.cli {
            cmd = cmd.visible_alias(*alias);
        }
    }
    let Some(props) = schema["properties"].as_object() else {
        return cmd;
    };
    for (i, positional) in op.positional.iter().enumerate() {
        let help = props[*positional]["description"].as_str().unwrap_or("");
        let mut arg = Arg::new(*positional)
            .index(i + 1)
            .required(required.contains(positional))
            .value_name(leak(positional.to_uppercase()))
            .help(in_cli_words(help));
        if takes_many(&props[*positional]) {
            arg = arg.num_args(1..).action(ArgAction::Append);
        }
        cmd = cmd.arg(arg);
    }
    for (property, rule) in props {
        if op.positional.contains(&property.as_str()) || left_out(op, property) {
            continue;
        }
        let long = leak(flag_name(property));
        let id = leak(property.clone());
        let mut arg = Arg::new(id)
            .long(long)
            .help(in_cli_words(rule["description"].as_str().unwrap_or("")))
            .required(required.contains(&property.as_str()));
        for (operation, argument, alias) in flameox_engine::operations::CLI_FLAG_ALIASES {
            if *operation == op.name && argument == property {
                arg = arg.visible_alias(*alias);
            }
        }
        arg = match rule["type"].as_str() {
            Some("boolean") => arg.action(ArgAction::SetTrue),
            // `--parameters n=1024 --parameters mode=fast` (also `--param`,
            // the import's spelling).
            // (also `--param`, the import's spelling).
            Some("object") if property == "parameters" => arg
                .action(ArgAction::Append)
                .value_name("NAME=VALUE")
                .visible_alias("param"),
            Some("object") => arg.action(ArgAction::Append).value_name("NAME=VALUE"),
            // Repeated numbers: `--ranks 3 --ranks 17`.
            Some("array") if rule["items"]["type"] == "integer" => arg
                .action(ArgAction::Append)
                .value_parser(clap::value_parser!(i64))
                .value_name("N")
                .allow_negative_numbers(true),
            // Repeated: `--argv python3 --argv -c` (a value may start with -).
            Some("array") => arg
                .action(ArgAction::Append)
                .allow_hyphen_values(true)
                .value_name(leak(property.to_uppercase())),
            Some("integer") => arg
                .value_parser(clap::value_parser!(i64))
                .value_name("N")
                .allow_negative_numbers(true),
            Some("number") => arg
                .value_parser(clap::value_parser!(f64))
                .value_name("X")
                .allow_negative_numbers(true),
            _ => match rule["enum"].as_array() {
                Some(values) => {
                    let names: Vec<&'static str> = values
                        .iter()
                        .filter_map(|v| v.as_str().map(|s| leak(s.to_owned())))
                        .collect();
                    arg.value_parser(clap::builder::PossibleValuesParser::new(names))
                        .value_name(leak(property.to_uppercase()))
                }
                None => arg.value_name(leak(property.to_uppercase())),
            },
        };
        cmd = cmd.arg(arg);
    }
    for flag in op.terminal {
        let arg = Arg::new(flag.name).long(flag.name).help(flag.help);
        cmd = cmd.arg(match flag.value {
            FlagValue::Path => arg
                .value_name(flag.value_name)
                .value_parser(clap::value_parser!(std::path::PathBuf)),
            FlagValue::Switch | FlagValue::Sets { .. } => arg.action(ArgAction::SetTrue),
            FlagValue::Seconds => arg
                .value_name(flag.value_name)
                .value_parser(clap::value_parser!(u64)),
        });
    }
    cmd
}

/// A property that takes a list, or one value or a list (`["string", "array"]`).
fn takes_many(rule: &Value) -> bool {
    rule["type"] == "array"
        || rule["type"]
            .as_array()
            .is_some_and(|types| types.iter().any(|t| t == "array"))
}

/// Adds every catalogued operation to the command tree (under an existing
/// parent such as `stacks`, or at the top).
pub fn augment(mut root: Command) -> Command {
    for op in catalog().iter().filter(|op| op.has_command()) {
        let sub = command_of(op);
        root = match op.cli {
            [_] => root.subcommand(sub),
            [parent, _] => {
                if root.find_subcommand(parent).is_some() {
                    root.mut_subcommand(*parent, |p| p.subcommand(sub))
                } else {
                    let about = flameox_engine::operations::CLI_GROUPS
                        .iter()
                        .find(|(name, _)| name == parent)
                        .map_or("", |(_, about)| about);
                    root.subcommand(
                        Command::new(*parent)
                            .about(about)
                            .subcommand_required(true)
                            .subcommand(sub),
                    )
                }
            }
            _ => root,
        };
    }
    order_by_use(root)
}

/// Top-level commands in the order a newcomer meets them: start, ask,
/// drill down, keep, run workloads, connect, maintain. A command not named
/// here comes after these.
const BY_USE: &[&str] = &[
    "init",
    "import",
    "analyze",
    "threads",
    "stacks",
    "trace",
    "open",
    "runs",
    "artifacts",
    "status",
    "measurements",
    "evidence",
    "investigations",
    "hypotheses",
    "findings",
    "workload",
    "capture",
    "experiment",
    "setup",
    "mcp",
    "capabilities",
    "validate",
    "recover",
    "gc",
    "repair",
    "catalog",
    "config",
    "completions",
    "man",
    "cluster",
];

fn order_by_use(mut root: Command) -> Command {
    let names: Vec<String> = root
        .get_subcommands()
        .map(|c| c.get_name().to_owned())
        .collect();
    for name in names {
        let rank = BY_USE
            .iter()
            .position(|n| *n == name)
            .unwrap_or(BY_USE.len());
        root = root.mut_subcommand(name, |c| c.display_order(rank));
    }
    root
}

/// The catalogued operation the command line chose, with its matches.
pub fn chosen(matches: &ArgMatches) -> Option<(&'static Operation, &ArgMatches)> {
    catalog()
        .iter()
        .filter(|op| op.has_command())
        .find_map(|op| {
            let mut m = matches;
            for word in op.cli {
                match m.subcommand() {
                    Some((name, sub)) if name == *word => m = sub,
                    _ => return None,
                }
            }
            Some((op, m))
        })
}

/// The arguments as the JSON object the engine decodes.
fn arguments(op: &Operation, m: &ArgMatches) -> Result<Map<String, Value>> {
    let schema = (op.schema)();
    let mut args = Map::new();
    let Some(props) = schema["properties"].as_object() else {
        return Ok(args);
    };
    for (property, rule) in props {
        if left_out(op, property) {
            continue;
        }
        let many = || -> Vec<Value> {
            m.get_many::<String>(property)
                .into_iter()
                .flatten()
                .map(|s| Value::String(s.clone()))
                .collect()
        };
        let value = match rule["type"].as_str() {
            Some("boolean") => m.get_flag(property).then_some(Value::Bool(true)),
            Some("integer") => m.get_one::<i64>(property).map(|n| Value::from(*n)),
            Some("number") => m.get_one::<f64>(property).map(|n| Value::from(*n)),
            Some("array") if rule["items"]["type"] == "integer" => {
                let numbers: Vec<Value> = m
                    .get_many::<i64>(property)
                    .into_iter()
                    .flatten()
                    .map(|n| Value::from(*n))
                    .collect();
                (!numbers.is_empty()).then_some(Value::Array(numbers))
            }
            Some("array") => Some(Value::Array(many())).filter(|v| v != &Value::Array(vec![])),
            Some("object") => {
                let pairs: Vec<String> = m
                    .get_many::<String>(property)
                    .into_iter()
                    .flatten()
                    .cloned()
                    .collect();
                let strings = rule["additionalProperties"]["type"] == "string";
                let object = crate::params::parse_object(&pairs, strings)?;
                (!object.is_empty()).then_some(Value::Object(object))
            }
            _ if takes_many(rule) => {
                let values = many();
                match values.len() {
                    0 => None,
                    1 => values.into_iter().next(),
                    _ => Some(Value::Array(values)),
                }
            }
            _ => m
                .get_one::<String>(property)
                .map(|s| Value::String(s.clone())),
        };
        if let Some(v) = value {
            args.insert(property.clone(), v);
        }
    }
    for flag in op.terminal {
        if let FlagValue::Sets { argument, value } = flag.value
            && m.get_flag(flag.name)
        {
            args.insert(argument.to_owned(), Value::String(value.to_owned()));
        }
    }
    Ok(args)
}

fn cell(row: &Value, column: &Column, in_ns: bool) -> String {
    let value = &row[column.field];
    match (column.cell, value) {
        (Cell::Location, _) => crate::frame_cells::location(row),
        (_, Value::Null) => String::new(),
        (Cell::Measured, v) if in_ns => v.as_i64().map(duration_ns).unwrap_or_default(),
        (Cell::Measured, v) => v.as_i64().map(thousands).unwrap_or_else(|| v.to_string()),
        (Cell::Bytes, v) => v.as_u64().map(bytes).unwrap_or_default(),
        (Cell::Duration, v) => v.as_i64().map(duration_ns).unwrap_or_default(),
        (Cell::Integer, v) => v.as_i64().map(thousands).unwrap_or_else(|| v.to_string()),
        (Cell::Percent, v) => v.as_f64().map(|p| format!("{p:.1} %")).unwrap_or_default(),
        (Cell::Id, Value::String(s)) => s.clone(),
        (Cell::Id, v) => v.to_string(),
        (Cell::Frame, v) => crate::frame_cells::short_key(v.as_str().unwrap_or_default()),
        (Cell::Function, v) => crate::frame_cells::function(v.as_str().unwrap_or_default()),
        (Cell::Text, Value::String(s)) => one_line(s),
        (Cell::Text, Value::Array(items)) => {
            let words: Vec<String> = items
                .iter()
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                .collect();
            one_line(&words.join(", "))
        }
        (Cell::Text, v) => one_line(&v.to_string()),
    }
}

/// Whether a column says something: a cell not empty, a number not zero.
fn carries_something(rows: &[&Value], column: &Column, cells: &[String]) -> bool {
    let numeric = matches!(
        column.cell,
        Cell::Integer | Cell::Percent | Cell::Duration | Cell::Measured | Cell::Bytes
    );
    if numeric {
        rows.iter()
            .any(|row| row[column.field].as_f64().is_some_and(|v| v != 0.0))
    } else {
        cells.iter().any(|c| !c.is_empty())
    }
}

/// The answer's rows as a table of the operation's columns, leaving out
/// columns that carry nothing (`samples 0` on an instrumented trace).
fn rows_table(op: &Operation, result: &Value) -> Table {
    let in_ns = result["unit"] == "ns"
        || result["metric"]
            .as_str()
            .is_some_and(|m| m.ends_with("_ns"));
    let rows: Vec<&Value> = result[op.rows].as_array().into_iter().flatten().collect();
    let columns: Vec<(&Column, Vec<String>)> = op
        .columns
        .iter()
        .map(|c| {
            (
                c,
                rows.iter()
                    .map(|row| cell(row, c, in_ns))
                    .collect::<Vec<String>>(),
            )
        })
        .filter(|(c, cells)| rows.is_empty() || carries_something(&rows, c, cells))
        .collect();
    let headers: Vec<&str> = columns.iter().map(|(c, _)| c.header).collect();
    let kind_at = |want: fn(Cell) -> bool| -> Vec<usize> {
        columns
            .iter()
            .enumerate()
            .filter(|(_, (c, _))| want(c.cell))
            .map(|(i, _)| i)
            .collect()
    };
    let right = kind_at(|c| {
        matches!(
            c,
            Cell::Integer | Cell::Percent | Cell::Duration | Cell::Measured | Cell::Bytes
        )
    });
    let names = kind_at(|c| matches!(c, Cell::Text | Cell::Function));
    let paths = kind_at(|c| c == Cell::Location);
    let mut table = Table::new(&headers, &right)
        .shorten(&names)
        .shorten_paths(&paths);
    for i in 0..rows.len() {
        table.row(columns.iter().map(|(_, cells)| cells[i].clone()).collect());
    }
    table
}

/// Text on one line: a table cell never breaks the table.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Runs the operation the command line chose and prints its answer.
pub fn run(g: &GlobalOptions, op: &'static Operation, m: &ArgMatches) -> Result<()> {
    let args = Value::Object(arguments(op, m)?);
    // `open --launch` serves the artifact instead of printing the plan.
    if op.terminal.iter().any(|f| f.name == "launch") && m.get_flag("launch") {
        let wait = m.get_one::<u64>("wait").copied().unwrap_or(300);
        return crate::open::launch(g, args["target"].as_str().unwrap_or_default(), wait);
    }
    let files: Vec<(&str, std::path::PathBuf)> = op
        .terminal
        .iter()
        .filter(|f| f.value == FlagValue::Path)
        .filter_map(|f| {
            m.get_one::<std::path::PathBuf>(f.name)
                .map(|p| (f.name, p.clone()))
        })
        .collect();
    run_with(g, op, args, &files)
}

/// Runs a catalogued operation by name (a command kept under a second
/// path, e.g. `catalog validate`).
pub fn run_named(g: &GlobalOptions, name: &str, args: Value) -> Result<()> {
    let op = flameox_engine::operations::by_name(name)
        .ok_or_else(|| FlameoxError::internal(format!("no operation {name}")))?;
    run_with(g, op, args, &[])
}

fn run_with(
    g: &GlobalOptions,
    op: &'static Operation,
    args: Value,
    files: &[(&str, std::path::PathBuf)],
) -> Result<()> {
    let found: WorkspaceLocator = locator(g);
    let project_root = found.init_root()?;
    let open = move || Workspace::locate(&found);
    let progress = CliProgressSource::new(g);
    let plans = PlanStore::new(DEFAULT_PLAN_TTL);
    let session = Session {
        project_root: &project_root,
        open_workspace: &open,
        cache: None,
        options: call_options(g)?,
        progress: &progress,
        plans: &plans,
        confine_paths: false,
        // `--json` is read by a program (often an agent): the same budget
        // as MCP. A table for a person shows the whole default page.
        budgeted: g.json,
    };
    let answer = block_on(op.call(&session, args.clone()));
    progress.finish();
    let answer = answer??;
    if !files.is_empty() {
        let ws = session.workspace()?;
        let qc = session.query(&ws);
        crate::analyze::write_terminal_files(&qc, op.name, &args, &answer.result, files)?;
    }
    let out = if g.json {
        serde_json::to_string_pretty(&answer.result)
            .map_err(|e| FlameoxError::internal(e.to_string()))?
            + "\n"
    } else if g.quiet {
        String::new()
    } else if let Some(view) = crate::views::render(op.name, &answer.result) {
        let mut text = view?;
        for line in &answer.details {
            text.push_str(line);
            text.push('\n');
        }
        text + &next_page(op, &args, &answer.result)
    } else {
        let table = rows_table(op, &answer.result);
        let mut text = if table.is_empty() {
            format!("{}\n", answer.summary)
        } else {
            format!("{}\n\n{}", answer.summary, table.render())
        };
        for line in &answer.details {
            text.push_str(line);
            text.push('\n');
        }
        text.push_str(&next_page(op, &args, &answer.result));
        let names = frame_names(&answer.result);
        for call in answer.result["next"].as_array().into_iter().flatten() {
            let operation = call["operation"].as_str().unwrap_or("");
            // A person reads the function's name where an agent gets the
            // frame key (an exact name selects every frame of that name).
            let mut arguments = call["arguments"].clone();
            if let Some(name) = arguments["frame"].as_str().and_then(|k| names.get(k)) {
                arguments["frame"] = Value::from(name.clone());
            }
            text.push_str(&format!(
                "next: {}  ({})\n",
                command_line(operation, &arguments),
                call["why"].as_str().unwrap_or("")
            ));
        }
        if let Some(status) = answer.result["evidence"]["status"].as_str()
            && status != "available"
        {
            text.push_str(&format!(
                "evidence: {status} ({})\n",
                answer.result["evidence"]["reason"].as_str().unwrap_or("")
            ));
        }
        text
    };
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    if let Some(err) = answer.verdict {
        crate::terminal::verdict(g, err.exit_code(), &err.message);
    }
    Ok(())
}

/// Frame key → function name, from every object of the answer that names
/// both.
fn frame_names(result: &Value) -> std::collections::HashMap<String, String> {
    let mut names = std::collections::HashMap::new();
    let mut stack = vec![result];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(map) => {
                if let (Some(Value::String(key)), Some(Value::String(function))) =
                    (map.get("frame"), map.get("function"))
                {
                    names.insert(key.clone(), function.clone());
                }
                stack.extend(map.values());
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    names
}

/// `next page: flameox … --cursor …` when the answer has more rows.
fn next_page(op: &Operation, args: &Value, result: &Value) -> String {
    let Some(cursor) = result["next_cursor"].as_str() else {
        return String::new();
    };
    let mut args = args.clone();
    args["cursor"] = Value::from(cursor);
    format!("next page: {}\n", command_line(op.name, &args))
}
