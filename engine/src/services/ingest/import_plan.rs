//! What one import call reads, decided before any byte is stored: regular
//! files (one artifact each), a folder of trace files (one artifact per file,
//! in natural order — e.g. one Kineto file per rank), or an `nsys export
//! --type parquetdir` / `arrowdir` folder or a criterion output folder
//! (ONE artifact each). Shapes and formats
//! are checked up front, so a refusal leaves nothing behind.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use flameox_extractors::ExtractError;
use flameox_extractors::benchmarks::criterion::criterion_members;
use flameox_extractors::detect::{FormatKind, detect};
use flameox_extractors::formats::{Extractor, Reading, Refusal, format, readable_names};
use flameox_extractors::input::{InputLimits, read_head};
use flameox_extractors::nsight::export_dir::{
    TableFileFormat, is_nsys_table_set, table_file_format, table_of_file,
};
use flameox_extractors::rocprof::csv_tables::is_rocprof_csv_folder;

use crate::error::{ErrorCode, FlameoxError, Result, input_io_error, wrapped_io_error};
use crate::store::check_regular_file;
use crate::workspace::Workspace;

/// `kind` / `producer` value that means "detect it".
pub const AUTO: &str = "auto";

/// Kinds whose rows carry the import-time variant and parameters
/// (`measurements`), so those belong to the extraction's identity.
pub fn stamps_run_labels(kind: FormatKind) -> bool {
    format(kind).is_some_and(|f| f.measurements)
}

/// Where one artifact's bytes come from.
#[derive(Debug, Clone, PartialEq)]
pub enum InputShape {
    File(PathBuf),
    /// A folder stored as one archive (an nsys export, a criterion
    /// folder) and the relative paths of its files, sorted.
    ExportDir {
        dir: PathBuf,
        files: Vec<String>,
    },
}

/// One artifact to import.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedInput {
    pub shape: InputShape,
    /// The name shown in messages (file or folder name, never a host path).
    pub name: String,
    pub kind: FormatKind,
    pub producer_hint: Option<String>,
}

/// Names `file` in an error about one input of several.
pub fn for_input(mut err: FlameoxError, name: &str) -> FlameoxError {
    err.message = format!("{name}: {}", err.message);
    err.detail("file", name)
}

pub fn input_limits(ws: &Workspace) -> InputLimits {
    InputLimits {
        max_ratio: ws.config.import.max_decompression_ratio,
        min_decompressed_cap_bytes: ws.config.import.min_decompressed_cap_mib * 1024 * 1024,
    }
}

fn display_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "input".to_owned())
}

/// Plans every artifact of one import: `paths` in the order given, a folder
/// expanded to its files in natural order ([`natural_order`]) unless it is
/// an nsys export folder (whose files are archived sorted by name).
pub fn plan_inputs(
    ws: &Workspace,
    paths: &[PathBuf],
    forced_kind: Option<&str>,
) -> Result<Vec<PlannedInput>> {
    if paths.is_empty() {
        return Err(FlameoxError::invalid_argument(
            "path",
            "give at least one file or folder",
        ));
    }
    let several = paths.len() > 1;
    let mut planned: Vec<(InputShape, Option<FormatKind>)> = Vec::new();
    for path in paths {
        let name = display_name(path);
        let name_err = |e: FlameoxError| if several { for_input(e, &name) } else { e };
        let meta = fs::symlink_metadata(path).map_err(|e| {
            let error = match e.kind() {
                std::io::ErrorKind::NotFound => {
                    FlameoxError::invalid_argument("path", format!("`{}` does not exist", path.display()))
                        .remedy("check the path (a relative path starts at the current folder for a command, at the project root for an agent)")
                }
                kind => FlameoxError::invalid_argument(
                    "path",
                    format!("cannot read `{name}`: {kind}"),
                ),
            };
            name_err(error)
        })?;
        if !meta.is_dir() {
            check_regular_file(path).map_err(name_err)?;
            planned.push((InputShape::File(path.clone()), None));
            continue;
        }
        let criterion = criterion_members(path).map_err(|e| {
            name_err(FlameoxError::invalid_argument(
                "path",
                format!("cannot list the folder: {}", e.kind()),
            ))
        })?;
        if let Some(files) = criterion {
            let dir = path.clone();
            planned.push((
                InputShape::ExportDir { dir, files },
                Some(FormatKind::CriterionDir),
            ));
            continue;
        }
        let files = list_folder(path).map_err(name_err)?;
        match classify_folder(path, &files).map_err(name_err)? {
            Some(kind) => planned.push((
                InputShape::ExportDir {
                    dir: path.clone(),
                    files,
                },
                Some(kind),
            )),
            None => {
                // One artifact per file, in natural order: rank2 before rank10.
                let mut files = files;
                files.sort_by(|a, b| natural_order(a, b));
                planned.extend(files.iter().map(|f| (InputShape::File(path.join(f)), None)));
            }
        }
    }
    let several = planned.len() > 1;
    let mut out = Vec::with_capacity(planned.len());
    for (shape, folder_kind) in planned {
        let (name, kind, producer_hint) = match (&shape, folder_kind) {
            (InputShape::ExportDir { dir, .. }, Some(kind)) => {
                let producer = match kind {
                    FormatKind::CriterionDir => "criterion",
                    FormatKind::RocprofCsvDir => "rocprofv3",
                    _ => "nsys",
                };
                (display_name(dir), kind, Some(producer.to_owned()))
            }
            (InputShape::File(path), _) | (InputShape::ExportDir { dir: path, .. }, None) => {
                let name = display_name(path);
                let decided = decide_kind(ws, path, forced_kind).and_then(|(kind, hint)| {
                    require_extractor(kind)?;
                    Ok((kind, hint))
                });
                let (kind, hint) =
                    decided.map_err(|e| if several { for_input(e, &name) } else { e })?;
                (name, kind, hint)
            }
        };
        out.push(PlannedInput {
            shape,
            name,
            kind,
            producer_hint,
        });
    }
    Ok(out)
}

/// File names compared as people number files: runs of digits by value
/// (`worker2` before `worker10`), everything else by character; names that
/// differ only in leading zeros keep their plain order.
pub fn natural_order(a: &str, b: &str) -> std::cmp::Ordering {
    let (x, y) = (a.as_bytes(), b.as_bytes());
    let digits_from =
        |s: &[u8], at: usize| at + s.iter().skip(at).take_while(|c| c.is_ascii_digit()).count();
    let (mut i, mut j) = (0, 0);
    while i < x.len() && j < y.len() {
        let order = if x[i].is_ascii_digit() && y[j].is_ascii_digit() {
            let (end_x, end_y) = (digits_from(x, i), digits_from(y, j));
            let trim =
                |s: &[u8]| -> Vec<u8> { s.iter().copied().skip_while(|c| *c == b'0').collect() };
            let (nx, ny) = (trim(&x[i..end_x]), trim(&y[j..end_y]));
            (i, j) = (end_x, end_y);
            nx.len().cmp(&ny.len()).then_with(|| nx.cmp(&ny))
        } else {
            let order = x[i].cmp(&y[j]);
            (i, j) = (i + 1, j + 1);
            order
        };
        if order.is_ne() {
            return order;
        }
    }
    (x.len() - i).cmp(&(y.len() - j)).then_with(|| a.cmp(b))
}

/// The regular files of a flat folder, sorted by name. Subfolders,
/// symlinks and other non-regular entries are refused, not skipped: the
/// artifact must be exactly what the folder holds.
fn list_folder(dir: &Path) -> Result<Vec<String>> {
    let entries = fs::read_dir(dir).map_err(|e| {
        FlameoxError::invalid_argument("path", format!("cannot list the folder: {}", e.kind()))
    })?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| {
            FlameoxError::invalid_argument("path", format!("cannot list the folder: {}", e.kind()))
        })?;
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            return Err(FlameoxError::invalid_argument(
                "path",
                "the folder holds a file whose name is not UTF-8",
            )
            .remedy("rename it, or import the other files by name"));
        };
        let kind = entry.file_type().map_err(|e| {
            FlameoxError::invalid_argument("path", format!("cannot read {name}: {}", e.kind()))
        })?;
        let what = if kind.is_symlink() {
            "a symbolic link"
        } else if kind.is_dir() {
            "a subfolder"
        } else if !kind.is_file() {
            "not a regular file"
        } else {
            files.push(name);
            continue;
        };
        return Err(FlameoxError::invalid_argument(
            "path",
            format!("the folder entry {name} is {what}; only a flat folder of regular files can be imported"),
        )
        .detail("entry", name)
        .remedy("move it out of the folder, or import the files by name: flameox import FILE [FILE...]"));
    }
    if files.is_empty() {
        return Err(FlameoxError::invalid_argument(
            "path",
            "the folder is empty",
        ));
    }
    files.sort();
    Ok(files)
}

/// `Some(kind)` when the folder is an nsys parquetdir/arrowdir export
/// (table files by content, with StringIds plus a CUPTI/NVTX/OSRT/
/// TARGET_INFO table) or a rocprofv3 CSV output (`.csv` files, one a
/// trace table by its header); `None` for a folder of other files; an
/// error for a folder of table files that is not an nsys export.
fn classify_folder(dir: &Path, files: &[String]) -> Result<Option<FormatKind>> {
    let mut tables = Vec::new();
    let mut parquet = false;
    for name in files {
        let mut head = [0u8; 8];
        let n = fs::File::open(dir.join(name))
            .and_then(|mut f| read_up_to(&mut f, &mut head))
            .map_err(|e| {
                FlameoxError::invalid_argument("path", format!("cannot read {name}: {}", e.kind()))
            })?;
        if let Some(format) = table_file_format(&head[..n]) {
            parquet |= format == TableFileFormat::Parquet;
            tables.push(table_of_file(name));
        }
    }
    if is_nsys_table_set(tables.iter().copied()) {
        return Ok(Some(if parquet {
            FormatKind::NsightParquetDir
        } else {
            FormatKind::NsightArrowDir
        }));
    }
    if is_rocprof_csv_folder(dir, files) {
        return Ok(Some(FormatKind::RocprofCsvDir));
    }
    if !tables.is_empty() && tables.len() == files.len() {
        return Err(FlameoxError::new(
            ErrorCode::ArtifactParseFailed,
            "a folder of Parquet/Arrow files that is not an Nsight Systems export: it needs a StringIds table plus a CUPTI_*, NVTX_*, OSRT_* or TARGET_INFO_* table",
        )
        .detail("tables", tables.iter().take(20).copied().collect::<Vec<_>>())
        .remedy("nsys export --type parquetdir --output DIR report.nsys-rep, then: flameox import DIR"));
    }
    Ok(None)
}

fn read_up_to(file: &mut fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        let n = file.read(&mut buf[filled..])?;
        if n == 0 {
            break;
        }
        filled += n;
    }
    Ok(filled)
}

/// Maps an extractor failure to the contract's codes.
pub fn extract_error(err: ExtractError, kind: &str) -> FlameoxError {
    match err {
        ExtractError::Parse { message, offset } => FlameoxError::new(
            ErrorCode::ArtifactParseFailed,
            format!("the input could not be read as {kind}: {message}"),
        )
        .detail("kind", kind)
        .detail("offset", offset)
        .remedy("check that the file is complete, or force another kind with --kind"),
        ExtractError::TooLarge { message } => {
            FlameoxError::new(ErrorCode::ArtifactTooLarge, message).remedy(
                "raise import.max_decompression_ratio in config.toml if the input is genuine",
            )
        }
        ExtractError::Cancelled => {
            FlameoxError::new(ErrorCode::OperationCancelled, "the import was cancelled")
        }
        ExtractError::UnsupportedVersion {
            format,
            found,
            supported,
        } => FlameoxError::new(
            ErrorCode::CapabilityUnavailable,
            format!("{format} version {found} is not supported: this build reads {supported}"),
        )
        .detail("kind", format)
        .detail("version_found", found)
        .detail("versions_supported", supported)
        .remedy("record with a supported version of the tool, or convert the file with the tool's own exporter"),
        ExtractError::Io(e) => input_io_error("path", None, "reading the input failed", e),
        ExtractError::Sink(e) => wrapped_io_error("writing evidence failed", &*e),
    }
}

/// Decides a file's format: forced by `kind`, else detected from content.
fn decide_kind(
    ws: &Workspace,
    path: &Path,
    forced: Option<&str>,
) -> Result<(FormatKind, Option<String>)> {
    let limits = input_limits(ws);
    let name = path.file_name().and_then(|n| n.to_str());
    let head = read_head(path, &limits, 64 * 1024).map_err(|e| match e {
        ExtractError::Io(io) => input_io_error("path", name, "reading the input file", io),
        other => extract_error(other, "input"),
    })?;
    let detection = detect(&head, name);
    let kind = match forced.filter(|k| *k != AUTO) {
        Some(forced) => FormatKind::from_name(forced).ok_or_else(|| {
            let mut valid = vec![AUTO, "execution_trace", "folded"];
            valid.extend(readable_names());
            FlameoxError::invalid_argument("kind", format!("unknown kind {forced}"))
                .detail(
                    "closest",
                    crate::error::closest(forced, valid.iter().copied(), 1),
                )
                .detail("valid", valid)
        })?,
        None => detection.kind,
    };
    if kind == FormatKind::Sqlite && forced.filter(|k| *k != AUTO).is_none() {
        // Detection saw the first 64 KiB only: read the schema itself.
        return match flameox_extractors::nsight::sqlite_is_nsys_export(path) {
            Ok(true) => Ok((FormatKind::NsightSqlite, Some("nsys".to_owned()))),
            Ok(false) => Ok((kind, detection.producer_hint)),
            Err(e) => Err(extract_error(e, "sqlite")),
        };
    }
    if kind == FormatKind::Unknown || head.is_empty() {
        let shown: String = String::from_utf8_lossy(&head[..head.len().min(32)])
            .escape_debug()
            .to_string();
        return Err(FlameoxError::new(
            ErrorCode::ArtifactParseFailed,
            "no extractor accepts this input",
        )
        .detail("kinds_tried", readable_names())
        .detail("first_bytes", shown)
        .remedy("pass --kind when the format is known"));
    }
    Ok((kind, detection.producer_hint))
}

/// The extractor that reads `kind` (every planned input has one:
/// [`require_extractor`] refused the rest).
pub fn extractor_of(kind: FormatKind) -> Result<Extractor> {
    format(kind)
        .and_then(|f| f.extractor())
        .ok_or_else(|| FlameoxError::internal(format!("{} has no extractor", kind.name())))
}

/// Refuses formats this build recognizes but cannot extract from a file:
/// the registry says why and what to do instead.
fn require_extractor(kind: FormatKind) -> Result<()> {
    let refusal = match format(kind).map(|f| f.reading) {
        Some(Reading::Stream(..) | Reading::StoredFile(..)) => return Ok(()),
        Some(Reading::StoredFolder { as_a_file, .. }) => as_a_file,
        Some(Reading::Refused(refusal)) => refusal,
        None => {
            return Err(FlameoxError::new(
                ErrorCode::CapabilityUnavailable,
                format!("{} inputs have no extractor", kind.name()),
            )
            .detail("kind", kind.name())
            .detail("supported_kinds", readable_names()));
        }
    };
    Err(refused(kind, refusal))
}

fn refused(kind: FormatKind, refusal: Refusal) -> FlameoxError {
    let err = match refusal.argument {
        Some(argument) => FlameoxError::invalid_argument(argument, refusal.message),
        None => FlameoxError::new(ErrorCode::CapabilityUnavailable, refusal.message),
    };
    refusal
        .remedies
        .iter()
        .fold(err.detail("kind", kind.name()), |e, r| e.remedy(*r))
}

/// Most import-time parameters one run takes.
pub const MAX_PARAMETERS: usize = 32;

/// Checks the import-time labels of a run: a variant (1..=64 printable
/// characters) and parameters (at most [`MAX_PARAMETERS`]; names of 1..=64
/// ASCII letters, digits, `_`, `.` or `-`; values of at most 200 printable
/// characters).
pub fn check_run_labels(
    variant: Option<&str>,
    parameters: &std::collections::BTreeMap<String, String>,
) -> Result<()> {
    let printable =
        |text: &str, max: usize| text.chars().count() <= max && !text.chars().any(char::is_control);
    if let Some(variant) = variant
        && (variant.is_empty() || !printable(variant, 64))
    {
        return Err(FlameoxError::invalid_argument(
            "variant",
            "must be 1..=64 printable characters",
        ));
    }
    if parameters.len() > MAX_PARAMETERS {
        return Err(FlameoxError::invalid_argument(
            "parameters",
            format!("at most {MAX_PARAMETERS} parameters"),
        ));
    }
    for (name, value) in parameters {
        let name_ok = (1..=64).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
        if !name_ok {
            return Err(FlameoxError::invalid_argument(
                "parameters",
                format!("parameter name {name:?} must be 1..=64 of A-Z a-z 0-9 _ . -"),
            ));
        }
        if !printable(value, 200) {
            return Err(FlameoxError::invalid_argument(
                "parameters",
                format!("the value of {name} must be at most 200 printable characters"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod natural_order_tests {
    use super::natural_order;

    #[test]
    fn numbers_in_names_sort_by_value() {
        let mut names = vec![
            "rank10.json",
            "rank2.json",
            "rank1.json",
            "rank02.json",
            "worker9_step_3.json",
            "worker10_step_1.json",
            "rank.json",
            "b.json",
            "a.json",
        ];
        names.sort_by(|a, b| natural_order(a, b));
        assert_eq!(
            names,
            [
                "a.json",
                "b.json",
                "rank.json",
                "rank1.json",
                "rank02.json",
                "rank2.json",
                "rank10.json",
                "worker9_step_3.json",
                "worker10_step_1.json",
            ]
        );
        // A total order: equal only for the same name.
        assert!(natural_order("x01", "x1").is_lt());
        assert!(natural_order("x1", "x01").is_gt());
        assert!(natural_order("same", "same").is_eq());
    }
}
