//! The inputs the campaign damages: every file of the shared corpus (but
//! the scripts that made them), the benchmark fixtures, and small outputs of
//! the project's seeded generator in each of its formats — with the
//! generated Nsight export also as `parquetdir` and `arrowdir` folders
//! (a folder's mutant damages one of its files).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use flameox_benches::folded::{FoldedSpec, write_folded};
use flameox_benches::kineto::{KinetoSpec, write_kineto};
use flameox_benches::nsight::{NsightSpec, write_nsight};
use flameox_benches::perfetto::{PerfettoSpec, write_perfetto};
use flameox_benches::pprof::{PprofKind, PprofSpec, write_pprof};
use flameox_extractors::detect::detect;

use crate::nsight_export::{write_arrowdir, write_parquetdir};

/// One undamaged input.
pub struct SeedInput {
    /// Where it came from (`corpus/kineto/x.json.gz`, `gen/kineto`).
    pub name: String,
    /// The file name mutants keep (extensions are tie-breakers in detection).
    pub file_name: String,
    /// The detected format of the undamaged input (per-format figures).
    pub format: String,
    /// The bytes as stored (gzip-compressed when `gzip`).
    pub bytes: Vec<u8>,
    /// The decompressed bytes of a gzip input.
    pub plain: Option<Vec<u8>>,
    /// A text format (JSON, folded lines): picks text mutations.
    pub text: bool,
    /// The files of a folder input (name, bytes); empty for a file.
    pub folder: Vec<(String, Vec<u8>)>,
}

impl SeedInput {
    fn new(name: String, file_name: String, bytes: Vec<u8>) -> SeedInput {
        let plain = bytes.starts_with(&[0x1f, 0x8b]).then(|| {
            let mut out = Vec::new();
            let _ = flate2::read::MultiGzDecoder::new(&bytes[..]).read_to_end(&mut out);
            out
        });
        let content = plain.as_deref().unwrap_or(&bytes);
        let head = &content[..content.len().min(64 * 1024)];
        let format = detect(head, Some(&file_name)).kind.name().to_owned();
        let sample = &content[..content.len().min(4096)];
        // UTF-8 up to a character the 4 KiB cut may have split.
        let text = match std::str::from_utf8(sample) {
            Ok(_) => true,
            Err(e) => e.error_len().is_none() && e.valid_up_to() + 4 > sample.len(),
        };
        SeedInput {
            name,
            file_name,
            format,
            bytes,
            plain,
            text,
            folder: Vec::new(),
        }
    }

    /// A folder input: `format` is what the folder imports as.
    fn folder(name: String, format: &str, dir: &Path) -> std::io::Result<SeedInput> {
        let mut files = Vec::new();
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        entries.sort();
        for path in entries {
            let file = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            files.push((file, std::fs::read(&path)?));
        }
        Ok(SeedInput {
            file_name: name.replace('/', "_"),
            name,
            format: format.to_owned(),
            bytes: Vec::new(),
            plain: None,
            text: false,
            folder: files,
        })
    }
}

/// Compresses `data` as gzip (level 1: mutants are many and short-lived).
pub fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let _ = enc.write_all(data);
    enc.finish().unwrap_or_default()
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// Every corpus file but `SOURCES.md` and the generator scripts in `gen/`,
/// and every benchmark fixture file, in a stable order.
pub fn corpus_seeds(corpus: &Path, fixtures: &Path, max_bytes: u64) -> Vec<SeedInput> {
    let mut paths = Vec::new();
    files_under(corpus, &mut paths);
    let corpus_files = paths.len();
    files_under(fixtures, &mut paths);
    paths
        .into_iter()
        .enumerate()
        .filter_map(|(i, path)| {
            let root = if i < corpus_files { corpus } else { fixtures };
            let rel = path.strip_prefix(root).ok()?.to_string_lossy().into_owned();
            let skip = rel == "SOURCES.md" || rel.starts_with("gen/") || rel.ends_with(".md");
            let size = std::fs::metadata(&path).ok()?.len();
            if skip || size > max_bytes {
                return None;
            }
            let prefix = if i < corpus_files {
                "corpus"
            } else {
                "fixtures"
            };
            let bytes = std::fs::read(&path).ok()?;
            let file_name = path.file_name()?.to_string_lossy().into_owned();
            Some(SeedInput::new(format!("{prefix}/{rel}"), file_name, bytes))
        })
        .collect()
}

/// Small outputs of `flameox-gen` in every format it writes (seeded, so
/// the same on every machine). `scratch` holds the SQLite file while it is
/// written.
pub fn generated_seeds(scratch: &Path) -> std::io::Result<Vec<SeedInput>> {
    let mut seeds = Vec::new();
    let mut kineto = Vec::new();
    write_kineto(
        &KinetoSpec {
            seed: 7,
            events: 3_000,
            streams: 3,
            ops_per_step: 0,
        },
        &mut kineto,
    )?;
    seeds.push(SeedInput::new(
        "gen/kineto".into(),
        "gen_kineto.pt.trace.json".into(),
        kineto,
    ));
    let mut perfetto = Vec::new();
    write_perfetto(
        &PerfettoSpec {
            seed: 7,
            bytes: 200_000,
            threads: 3,
            samples_per_round: 4,
        },
        &mut perfetto,
    )?;
    seeds.push(SeedInput::new(
        "gen/perfetto".into(),
        "gen.perfetto-trace".into(),
        perfetto,
    ));
    let sqlite = scratch.join("gen_nsys.sqlite");
    write_nsight(
        &NsightSpec {
            seed: 7,
            events: 2_000,
            threads: 2,
            streams: 2,
            gpus: 1,
        },
        &sqlite,
    )?;
    seeds.push(SeedInput::new(
        "gen/nsys".into(),
        "gen_nsys.sqlite".into(),
        std::fs::read(&sqlite)?,
    ));
    let parquetdir = scratch.join("gen_nsys_parquetdir");
    let arrowdir = scratch.join("gen_nsys_arrowdir");
    write_parquetdir(&sqlite, &parquetdir);
    write_arrowdir(&sqlite, &arrowdir);
    seeds.push(SeedInput::folder(
        "gen/nsys_parquetdir".into(),
        "nsight_systems_parquetdir",
        &parquetdir,
    )?);
    seeds.push(SeedInput::folder(
        "gen/nsys_arrowdir".into(),
        "nsight_systems_arrowdir",
        &arrowdir,
    )?);
    let _ = std::fs::remove_file(&sqlite);
    let _ = std::fs::remove_dir_all(&parquetdir);
    let _ = std::fs::remove_dir_all(&arrowdir);
    let mut folded = Vec::new();
    write_folded(
        &FoldedSpec {
            seed: 7,
            stacks: 500,
            roots: 4,
            max_depth: 30,
        },
        &mut folded,
    )?;
    seeds.push(SeedInput::new(
        "gen/folded".into(),
        "gen.folded.txt".into(),
        folded,
    ));
    for (kind, label) in [(PprofKind::Cpu, "cpu"), (PprofKind::Heap, "heap")] {
        let mut pprof = Vec::new();
        write_pprof(
            &PprofSpec {
                seed: 7,
                kind,
                samples: 400,
                max_depth: 30,
            },
            &mut pprof,
        )?;
        seeds.push(SeedInput::new(
            format!("gen/pprof_{label}"),
            format!("gen_{label}.pb.gz"),
            pprof,
        ));
    }
    Ok(seeds)
}
