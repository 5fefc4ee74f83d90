//! Benchmark runs generated from known distributions for the run-set,
//! compare and scaling tests: pyperf JSON files whose samples are drawn
//! (seeded, with flameox's own xoshiro256** generator) around a chosen true
//! value, optionally with a folded-stacks profile, imported through the
//! real binary with `--variant` and `--param`.

use std::path::PathBuf;

use flameox_recipes::stats::rng::Xoshiro256StarStar;
use serde_json::json;

use crate::Project;

/// Seeded log-normal noise: `exp(sigma * z)`.
pub struct Noise {
    rng: Xoshiro256StarStar,
}

impl Noise {
    pub fn new(seed: u64) -> Noise {
        Noise {
            rng: Xoshiro256StarStar::from_seed(seed),
        }
    }

    pub fn factor(&mut self, sigma: f64) -> f64 {
        (sigma * self.rng.standard_normal()).exp()
    }

    pub fn uniform(&mut self) -> f64 {
        self.rng.next_f64()
    }
}

/// A pyperf suite with one benchmark `name`, one warmup and `values`
/// (seconds per loop).
pub fn pyperf_json(name: &str, values: &[f64]) -> String {
    json!({
        "version": "1.0",
        "metadata": { "unit": "second", "loops": 1 },
        "benchmarks": [{
            "metadata": { "name": name },
            "runs": [{
                "metadata": {},
                "warmups": [[1, values[0] * 3.0]],
                "values": values
            }]
        }]
    })
    .to_string()
}

/// Writes `text` under the project and returns its path.
pub fn write_file(project: &Project, name: &str, text: &str) -> PathBuf {
    let path = project.path().join("inputs").join(name);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("inputs dir");
    std::fs::write(&path, text).expect("write input");
    path
}

/// Imports files as one run with a variant and parameters; returns the run id.
pub fn import_run(
    project: &Project,
    files: &[PathBuf],
    variant: &str,
    params: &[(&str, String)],
) -> String {
    let mut args: Vec<String> = vec!["import".into()];
    args.extend(files.iter().map(|f| f.to_str().expect("utf-8").to_owned()));
    args.extend(["--variant".into(), variant.into()]);
    for (k, v) in params {
        args.extend(["--param".into(), format!("{k}={v}")]);
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let imported = project.json(&refs);
    imported["run_id"].as_str().expect("run id").to_owned()
}

/// `samples` values around `center` seconds with log-normal `sigma`.
pub fn samples(noise: &mut Noise, center: f64, count: usize, sigma: f64) -> Vec<f64> {
    (0..count).map(|_| center * noise.factor(sigma)).collect()
}
