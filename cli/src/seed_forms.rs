//! The seed's spelling of capture commands, `flameox capture plan|run|start
//! <adapter> --workload <name>`, read as the catalogued form `capture plan
//! <name> --adapter <adapter>` before the arguments are parsed, so both
//! spellings reach the one declaration (`docs/cli.md`).

use std::ffi::OsString;

const CAPTURE_ACTIONS: &[&str] = &["plan", "run", "start"];

/// `args` with a seed-form capture command rewritten; anything else as given.
pub(crate) fn normalized(mut args: Vec<OsString>) -> Vec<OsString> {
    let Some(at) = args
        .windows(2)
        .position(|w| w[0] == "capture" && CAPTURE_ACTIONS.iter().any(|a| w[1] == *a))
    else {
        return args;
    };
    let first = at + 2;
    let mut workload = None;
    let mut i = first;
    while i < args.len() {
        let text = args[i].to_string_lossy().into_owned();
        if text == "--" {
            break;
        }
        if let Some(name) = text.strip_prefix("--workload=") {
            workload = Some(OsString::from(name));
            args.remove(i);
            break;
        }
        if text == "--workload" && i + 1 < args.len() {
            workload = Some(args.remove(i + 1));
            args.remove(i);
            break;
        }
        i += 1;
    }
    let Some(workload) = workload else {
        return args;
    };
    let adapter = args
        .get(first)
        .filter(|a| !a.to_string_lossy().starts_with('-'))
        .cloned();
    match adapter {
        Some(adapter) => {
            args[first] = workload;
            args.push("--adapter".into());
            args.push(adapter);
        }
        None => args.insert(first, workload),
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<OsString> {
        text.split_whitespace().map(OsString::from).collect()
    }

    #[test]
    fn the_seed_form_names_the_adapter_first_and_the_workload_by_flag() {
        assert_eq!(
            normalized(words(
                "flameox capture plan py-spy --workload sort --parameters n=1"
            )),
            words("flameox capture plan sort --parameters n=1 --adapter py-spy")
        );
        assert_eq!(
            normalized(words("flameox --json capture run nsys --workload=train")),
            words("flameox --json capture run train --adapter nsys")
        );
        assert_eq!(
            normalized(words("flameox capture plan --workload sort")),
            words("flameox capture plan sort")
        );
        // The catalogued form, and other commands, are left alone.
        for text in [
            "flameox capture plan sort --adapter py-spy",
            "flameox import trace.json --workload x",
            "flameox capture status op_1",
        ] {
            assert_eq!(normalized(words(text)), words(text));
        }
    }
}
