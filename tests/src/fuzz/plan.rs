//! Which mutant comes next: formats in turn, seeds in turn, mutation
//! kinds in turn. Mutant `i` of campaign seed `s` depends on nothing else.

use std::collections::BTreeMap;

use flameox_benches::rng::SeededRng;

use super::mutate::{Mutation, apply};
use super::seeds::{SeedInput, gzip};

/// One planned mutant.
#[derive(Debug, Clone)]
pub struct MutantPlan {
    pub index: u64,
    pub seed_input: usize,
    pub mutations: Vec<Mutation>,
    /// Mutated after gunzip and compressed again (gzip seeds only).
    pub inside_gzip: bool,
    /// The file of a folder seed that was damaged.
    pub damaged_file: Option<usize>,
}

/// Formats whose single files flameox only refuses (unknown formats, an
/// nsys report, one criterion file, a SQLite file that is not an export):
/// they share one turn of the schedule instead of one each.
const REFUSED_FORMATS: [&str; 4] = ["unknown", "nsys_rep", "criterion_dir", "sqlite"];

/// The seed inputs of each turn of the schedule: one turn per format that
/// has an extractor, one for all the refused ones, in a stable order.
pub fn schedule(seeds: &[SeedInput]) -> Vec<Vec<usize>> {
    let mut turns: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, seed) in seeds.iter().enumerate() {
        let format = seed.format.as_str();
        let turn = if REFUSED_FORMATS.contains(&format) {
            "~refused"
        } else {
            format
        };
        turns.entry(turn).or_default().push(i);
    }
    turns.into_values().collect()
}

/// Plans mutant `index`: formats in turn (so each gets the same share
/// whatever its number of files), the seeds of a format in turn, each seed
/// through every mutation kind in turn, sometimes a second mutation
/// stacked on the first.
pub fn plan(campaign_seed: u64, index: u64, turns: &[Vec<usize>]) -> (MutantPlan, SeededRng) {
    let mut rng = SeededRng::new(campaign_seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let formats = turns.len().max(1) as u64;
    let turn = turns
        .get((index % formats) as usize)
        .map_or(&[][..], Vec::as_slice);
    let round = index / formats;
    let per_format = turn.len().max(1) as u64;
    let seed_input = turn
        .get((round % per_format) as usize)
        .copied()
        .unwrap_or(0);
    let kinds = Mutation::ALL.len() as u64;
    let mut mutations =
        vec![Mutation::ALL[((round / per_format + campaign_seed) % kinds) as usize]];
    if rng.chance(25) {
        mutations.push(Mutation::ALL[rng.range(0, kinds) as usize]);
    }
    let plan = MutantPlan {
        index,
        seed_input,
        mutations,
        inside_gzip: false,
        damaged_file: None,
    };
    (plan, rng)
}

/// What a mutant is: a file, or a folder's files (one of them damaged).
pub enum MutantBody {
    File(Vec<u8>),
    Folder(Vec<(String, Vec<u8>)>),
}

impl MutantBody {
    pub fn len(&self) -> u64 {
        match self {
            MutantBody::File(bytes) => bytes.len() as u64,
            MutantBody::Folder(files) => files.iter().map(|f| f.1.len() as u64).sum(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The undamaged seed as a body.
    pub fn of_seed(seed: &SeedInput) -> MutantBody {
        if seed.folder.is_empty() {
            MutantBody::File(seed.bytes.clone())
        } else {
            MutantBody::Folder(seed.folder.clone())
        }
    }

    /// Writes it at `path` (a file, or a folder of files).
    pub fn write_to(&self, path: &std::path::Path) -> std::io::Result<()> {
        match self {
            MutantBody::File(bytes) => std::fs::write(path, bytes),
            MutantBody::Folder(files) => {
                std::fs::create_dir_all(path)?;
                for (name, bytes) in files {
                    std::fs::write(path.join(name), bytes)?;
                }
                Ok(())
            }
        }
    }

    /// Removes what [`Self::write_to`] wrote.
    pub fn remove(&self, path: &std::path::Path) {
        let _ = match self {
            MutantBody::File(_) => std::fs::remove_file(path),
            MutantBody::Folder(_) => std::fs::remove_dir_all(path),
        };
    }

    /// The bytes to keep as a find (a folder's damaged file).
    pub fn find_bytes(&self, damaged: Option<usize>) -> &[u8] {
        match self {
            MutantBody::File(bytes) => bytes,
            MutantBody::Folder(files) => damaged
                .and_then(|i| files.get(i))
                .map_or(&[][..], |f| f.1.as_slice()),
        }
    }
}

/// The body of a planned mutant.
pub fn mutant_body(plan: &mut MutantPlan, seed: &SeedInput, rng: &mut SeededRng) -> MutantBody {
    if !seed.folder.is_empty() {
        let mut files = seed.folder.clone();
        let pick = rng.range(0, files.len() as u64) as usize;
        plan.damaged_file = Some(pick);
        if let Some((_, bytes)) = files.get_mut(pick) {
            for m in &plan.mutations {
                apply(*m, bytes, false, rng);
            }
        }
        return MutantBody::Folder(files);
    }
    plan.inside_gzip = seed.plain.is_some() && rng.chance(80);
    let bytes = match (&seed.plain, plan.inside_gzip) {
        (Some(plain), true) => {
            let mut data = plain.clone();
            for m in &plan.mutations {
                apply(*m, &mut data, seed.text, rng);
            }
            gzip(&data)
        }
        _ => {
            let mut data = seed.bytes.clone();
            for m in &plan.mutations {
                apply(*m, &mut data, seed.text && seed.plain.is_none(), rng);
            }
            data
        }
    };
    MutantBody::File(bytes)
}

impl MutantPlan {
    /// `bit_flips + zero_run (inside gzip)`.
    pub fn describe(&self) -> String {
        let names: Vec<&str> = self.mutations.iter().map(|m| m.name()).collect();
        let inside = if self.inside_gzip {
            " (inside gzip)"
        } else {
            ""
        };
        format!("{}{inside}", names.join(" + "))
    }
}
