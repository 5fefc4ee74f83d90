//! The options a built-in capture adapter takes (`adapter_options`, CLI
//! `--adapter-options '<json>'`): each declared once here with its type,
//! range and the profiler flag it becomes, so a plan binds exactly the
//! profiler command that runs (sample rate, native frames, nsys traces)
//! and anything else is refused with the adapter's list. Third-party
//! adapters declare their command in `flameox.toml` and take none.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::error::{FlameoxError, Result};

/// The values an option takes.
#[derive(Debug, Clone, Copy)]
pub enum OptionValue {
    /// A whole number in `min..=max`, given after the flag.
    Integer { min: i64, max: i64 },
    /// `true` adds the flag; `false` leaves it out.
    Switch,
    /// One of these words, given after the flag.
    Word(&'static [&'static str]),
    /// A non-empty list of these words, joined by commas after the flag.
    Words(&'static [&'static str]),
}

/// One declared option of one adapter.
#[derive(Debug, Clone, Copy)]
pub struct AdapterOption {
    pub adapter: &'static str,
    pub name: &'static str,
    pub value: OptionValue,
    /// The profiler's flag (`--rate`); `=` at its end joins the value to it.
    pub flag: &'static str,
    /// What flameox passes when the option is not given (`None`: nothing,
    /// the profiler's own default).
    pub default: Option<&'static str>,
    pub help: &'static str,
}

const NSYS_TRACES: &[&str] = &[
    "cuda", "nvtx", "osrt", "cublas", "cudnn", "cusparse", "mpi", "ucx", "opengl", "vulkan",
    "oshmem", "none",
];

/// Every adapter option.
pub static ADAPTER_OPTIONS: &[AdapterOption] = &[
    AdapterOption {
        adapter: "py-spy",
        name: "rate",
        value: OptionValue::Integer {
            min: 1,
            max: 10_000,
        },
        flag: "--rate",
        default: Some("200"),
        help: "samples per second (default 200)",
    },
    AdapterOption {
        adapter: "py-spy",
        name: "native",
        value: OptionValue::Switch,
        flag: "--native",
        default: None,
        help: "also sample native (C/C++/Rust) frames",
    },
    AdapterOption {
        adapter: "py-spy",
        name: "subprocesses",
        value: OptionValue::Switch,
        flag: "--subprocesses",
        default: None,
        help: "also profile child processes",
    },
    AdapterOption {
        adapter: "py-spy",
        name: "gil",
        value: OptionValue::Switch,
        flag: "--gil",
        default: None,
        help: "only sample threads holding the GIL",
    },
    AdapterOption {
        adapter: "py-spy",
        name: "idle",
        value: OptionValue::Switch,
        flag: "--idle",
        default: None,
        help: "keep samples of idle threads",
    },
    AdapterOption {
        adapter: "perf",
        name: "frequency",
        value: OptionValue::Integer {
            min: 1,
            max: 100_000,
        },
        flag: "-F",
        default: None,
        help: "samples per second (default perf's)",
    },
    AdapterOption {
        adapter: "perf",
        name: "call_graph",
        value: OptionValue::Word(&["fp", "dwarf", "lbr"]),
        flag: "--call-graph",
        default: None,
        help: "how stacks are unwound (default fp)",
    },
    AdapterOption {
        adapter: "nsys",
        name: "trace",
        value: OptionValue::Words(NSYS_TRACES),
        flag: "--trace=",
        default: None,
        help: "APIs to trace (default nsys's: cuda, nvtx, osrt, …)",
    },
    AdapterOption {
        adapter: "nsys",
        name: "sample",
        value: OptionValue::Word(&["process-tree", "system-wide", "none"]),
        flag: "--sample=",
        default: None,
        help: "CPU sampling scope",
    },
    AdapterOption {
        adapter: "viztracer",
        name: "max_stack_depth",
        value: OptionValue::Integer {
            min: 1,
            max: 10_000,
        },
        flag: "--max_stack_depth",
        default: None,
        help: "deeper calls are not recorded",
    },
    AdapterOption {
        adapter: "viztracer",
        name: "tracer_entries",
        value: OptionValue::Integer {
            min: 1_000,
            max: 100_000_000,
        },
        flag: "--tracer_entries",
        default: None,
        help: "size of the circular event buffer (older events drop)",
    },
    AdapterOption {
        adapter: "viztracer",
        name: "ignore_c_function",
        value: OptionValue::Switch,
        flag: "--ignore_c_function",
        default: None,
        help: "leave out calls into C functions",
    },
    AdapterOption {
        adapter: "viztracer",
        name: "log_gc",
        value: OptionValue::Switch,
        flag: "--log_gc",
        default: None,
        help: "record garbage collections",
    },
];

/// The names `adapter` takes, for messages.
fn names_of(adapter: &str) -> Vec<&'static str> {
    ADAPTER_OPTIONS
        .iter()
        .filter(|o| o.adapter == adapter)
        .map(|o| o.name)
        .collect()
}

/// The profiler arguments `options` become under `adapter`, in the order
/// of the declarations (so one set of options is one command).
pub fn arguments(adapter: &str, options: &BTreeMap<String, Value>) -> Result<Vec<String>> {
    for name in options.keys() {
        if !ADAPTER_OPTIONS
            .iter()
            .any(|o| o.adapter == adapter && o.name == name)
        {
            let known = names_of(adapter);
            let mut err = FlameoxError::invalid_argument(
                &format!("adapter_options.{name}"),
                if known.is_empty() {
                    format!("the {adapter} adapter takes no options")
                } else {
                    format!("the {adapter} adapter takes {}", known.join(", "))
                },
            );
            if !known.is_empty() {
                err = err.detail(
                    "closest",
                    crate::error::closest(name, known.iter().copied(), 1),
                );
            }
            return Err(err);
        }
    }
    let mut out = Vec::new();
    for option in ADAPTER_OPTIONS.iter().filter(|o| o.adapter == adapter) {
        let default = option.default.map(|d| Value::String(d.to_owned()));
        let Some(value) = options.get(option.name).or(default.as_ref()) else {
            continue;
        };
        let number = match value {
            Value::String(text) if option.default.is_some() => {
                text.parse::<i64>().ok().map(Value::from)
            }
            _ => None,
        };
        let value = number.as_ref().unwrap_or(value);
        let field = format!("adapter_options.{}", option.name);
        let bad = |why: String| FlameoxError::invalid_argument(&field, why);
        let text = match (option.value, value) {
            (OptionValue::Switch, Value::Bool(on)) => {
                if *on {
                    out.push(option.flag.to_owned());
                }
                continue;
            }
            (OptionValue::Switch, _) => return Err(bad("true or false".into())),
            (OptionValue::Integer { min, max }, v) => match v.as_i64() {
                Some(n) if (min..=max).contains(&n) => n.to_string(),
                _ => return Err(bad(format!("a whole number from {min} to {max}"))),
            },
            (OptionValue::Word(words), Value::String(w)) if words.contains(&w.as_str()) => {
                w.clone()
            }
            (OptionValue::Word(words), _) => {
                return Err(bad(format!("one of {}", words.join(", "))));
            }
            (OptionValue::Words(words), v) => {
                let given: Vec<&str> = match v {
                    Value::String(s) => s.split(',').map(str::trim).collect(),
                    Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
                    _ => Vec::new(),
                };
                let count = v.as_array().map_or(given.len(), Vec::len);
                if given.is_empty()
                    || given.len() != count
                    || given.iter().any(|w| !words.contains(w))
                {
                    return Err(bad(format!("a list of {}", words.join(", "))));
                }
                given.join(",")
            }
        };
        match option.flag.strip_suffix('=') {
            Some(_) => out.push(format!("{}{text}", option.flag)),
            None => {
                out.push(option.flag.to_owned());
                out.push(text);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn options(v: Value) -> BTreeMap<String, Value> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn declared_options_become_flags_in_declaration_order() {
        let args = arguments("py-spy", &options(json!({"native": true, "rate": 1000}))).unwrap();
        assert_eq!(args, vec!["--rate", "1000", "--native"]);
        let args = arguments("py-spy", &BTreeMap::new()).unwrap();
        assert_eq!(
            args,
            vec!["--rate", "200"],
            "the default rate stays in the command"
        );
        let args = arguments("nsys", &options(json!({"trace": ["cuda", "nvtx"]}))).unwrap();
        assert_eq!(args, vec!["--trace=cuda,nvtx"]);
        let args = arguments("perf", &options(json!({"call_graph": "dwarf"}))).unwrap();
        assert_eq!(args, vec!["--call-graph", "dwarf"]);
        assert!(arguments("process", &BTreeMap::new()).unwrap().is_empty());
    }

    #[test]
    fn anything_undeclared_or_out_of_range_is_refused_naming_the_field() {
        for (adapter, given, field) in [
            ("py-spy", json!({"rate": 0}), "adapter_options.rate"),
            ("py-spy", json!({"rat": 10}), "adapter_options.rat"),
            ("py-spy", json!({"native": "yes"}), "adapter_options.native"),
            (
                "nsys",
                json!({"trace": ["cuda", "rm -rf"]}),
                "adapter_options.trace",
            ),
            (
                "perf",
                json!({"call_graph": "x"}),
                "adapter_options.call_graph",
            ),
            ("process", json!({"rate": 10}), "adapter_options.rate"),
        ] {
            let err = arguments(adapter, &options(given)).unwrap_err();
            assert_eq!(err.code, crate::error::ErrorCode::InvalidArguments);
            assert!(
                err.to_string().contains(field) || format!("{err:?}").contains(field),
                "{err:?}"
            );
        }
    }
}
