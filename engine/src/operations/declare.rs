//! The generated operations table (`docs/operations.md`), rendered from
//! the catalog; a test keeps the committed page current.

use super::{Group, catalog};

/// The Markdown table of every catalogued operation.
pub fn docs_table() -> String {
    let mut out = String::from(
        "| MCP tool | CLI | group | arguments (positional first) | what it answers |\n| --- | --- | --- | --- | --- |\n",
    );
    for op in catalog() {
        let schema = (op.schema)();
        let required: Vec<&str> = schema["required"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str())
            .collect();
        let mut args: Vec<String> = op.positional.iter().map(|p| format!("`{p}`")).collect();
        if let Some(props) = schema["properties"].as_object() {
            for name in props.keys() {
                if !op.positional.contains(&name.as_str()) {
                    let mark = if required.contains(&name.as_str()) {
                        ""
                    } else {
                        "?"
                    };
                    args.push(format!("`{name}{mark}`"));
                }
            }
        }
        let group = match op.group {
            Group::ReadOnly => "read-only",
            Group::Additive => "additive",
            Group::Configure => "configure",
            Group::Execute => "execute",
        };
        out.push_str(&format!(
            "| `{}` | `flameox {}` | {} | {} | {} |\n",
            op.name,
            op.cli.join(" "),
            group,
            args.join(", "),
            op.description.replace('|', "\\|")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    /// `FLAMEOX_WRITE_DOCS=1 cargo test -p flameox-engine operations`
    /// rewrites the table in `docs/operations.md` (between its markers).
    #[test]
    fn the_table_lists_every_operation_once() {
        let table = super::docs_table();
        for op in super::catalog() {
            assert_eq!(table.matches(&format!("| `{}` |", op.name)).count(), 1);
        }
        if std::env::var_os("FLAMEOX_WRITE_DOCS").is_some() {
            let path =
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/operations.md");
            let page = std::fs::read_to_string(&path).unwrap_or_default();
            let (begin, end) = (
                "<!-- operations table -->\n",
                "<!-- end of operations table -->",
            );
            if let (Some(a), Some(b)) = (page.find(begin), page.find(end)) {
                let page = format!("{}{begin}{table}{}", &page[..a], &page[b..]);
                std::fs::write(&path, page).expect("write docs/operations.md");
            }
        }
    }
}
