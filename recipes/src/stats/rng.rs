//! A small seeded random generator, so a bootstrap or a simulation draws the
//! same numbers on every platform for the same seed.
//!
//! xoshiro256** (Blackman & Vigna, "Scrambled linear pseudorandom number
//! generators", ACM TOMS 2021), seeded by expanding a `u64` with SplitMix64
//! (Steele, Lea & Flood, OOPSLA 2014) as its authors recommend. Integer draws
//! (all the bootstrap uses) are bit-identical everywhere; floating-point
//! draws go through `ln`/`cos` only in [`Xoshiro256StarStar::standard_normal`].

/// SplitMix64: a 64-bit counter passed through a mixing function.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// xoshiro256**: 256 bits of state, period 2^256 - 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Xoshiro256StarStar {
    state: [u64; 4],
}

impl Xoshiro256StarStar {
    /// The generator whose state is four SplitMix64 outputs from `seed`.
    pub fn from_seed(seed: u64) -> Self {
        let mut expander = SplitMix64::new(seed);
        let mut state = [0u64; 4];
        for word in &mut state {
            *word = expander.next_u64();
        }
        if state == [0; 4] {
            // Unreachable in practice (SplitMix64 is a bijection of its
            // counter); the all-zero state would emit zeros forever.
            state[0] = 1;
        }
        Xoshiro256StarStar { state }
    }

    /// A generator with an explicit state (the published test vectors start
    /// from `[1, 2, 3, 4]`); `None` for the all-zero state.
    pub fn from_state(state: [u64; 4]) -> Option<Self> {
        (state != [0; 4]).then_some(Xoshiro256StarStar { state })
    }

    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.state;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// A uniform integer in `0..bound` (`bound > 0`; 0 gives 0), without
    /// modulo bias: Lemire's multiply-and-reject ("Fast random integer
    /// generation in an interval", ACM TOMACS 2019).
    pub fn below(&mut self, bound: usize) -> usize {
        let bound = bound as u64;
        if bound == 0 {
            return 0;
        }
        let mut product = u128::from(self.next_u64()) * u128::from(bound);
        let mut low = product as u64;
        if low < bound {
            let threshold = bound.wrapping_neg() % bound;
            while low < threshold {
                product = u128::from(self.next_u64()) * u128::from(bound);
                low = product as u64;
            }
        }
        (product >> 64) as usize
    }

    /// A uniform `f64` in `[0, 1)` with 53 random bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A standard normal draw (Box–Muller, one of the pair; for simulations).
    pub fn standard_normal(&mut self) -> f64 {
        let u1 = 1.0 - self.next_f64(); // (0, 1]: ln never sees 0
        let u2 = self.next_f64();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_matches_the_published_outputs() {
        // Seed 1234567: the reference sequence (splitmix64.c; Rosetta Code).
        let mut g = SplitMix64::new(1_234_567);
        let got: Vec<u64> = (0..5).map(|_| g.next_u64()).collect();
        assert_eq!(
            got,
            [
                6_457_827_717_110_365_317,
                3_203_168_211_198_807_973,
                9_817_491_932_198_370_423,
                4_593_380_528_125_082_431,
                16_408_922_859_458_223_821
            ]
        );
    }

    #[test]
    fn xoshiro256starstar_matches_the_published_outputs() {
        // State {1,2,3,4}: the reference implementation's first ten outputs
        // (the `reference` test of the rand_xoshiro crate).
        let mut g = Xoshiro256StarStar::from_state([1, 2, 3, 4]).unwrap();
        let got: Vec<u64> = (0..10).map(|_| g.next_u64()).collect();
        assert_eq!(
            got,
            [
                11_520,
                0,
                1_509_978_240,
                1_215_971_899_390_074_240,
                1_216_172_134_540_287_360,
                607_988_272_756_665_600,
                16_172_922_978_634_559_625,
                8_476_171_486_693_032_832,
                10_595_114_339_597_558_777,
                2_904_607_092_377_533_576
            ]
        );
        assert!(Xoshiro256StarStar::from_state([0; 4]).is_none());
    }

    #[test]
    fn bounded_draws_are_in_range_and_roughly_uniform() {
        let mut g = Xoshiro256StarStar::from_seed(7);
        let mut counts = [0usize; 6];
        for _ in 0..60_000 {
            counts[g.below(6)] += 1;
        }
        // Each count ~ Binomial(60000, 1/6): sd ≈ 91; 5 sd = 456.
        for c in counts {
            assert!((c as i64 - 10_000).abs() < 456, "{counts:?}");
        }
        assert_eq!(g.below(0), 0);
    }

    #[test]
    fn same_seed_same_stream_and_normals_are_standard() {
        let mut a = Xoshiro256StarStar::from_seed(42);
        let mut b = Xoshiro256StarStar::from_seed(42);
        assert!((0..100).all(|_| a.next_u64() == b.next_u64()));
        let n = 40_000;
        let draws: Vec<f64> = (0..n).map(|_| a.standard_normal()).collect();
        let mean = draws.iter().sum::<f64>() / n as f64;
        let var = draws.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        // sd(mean) = 0.005, sd(var) ≈ 0.007: 5-sd bounds.
        assert!(
            mean.abs() < 0.025 && (var - 1.0).abs() < 0.035,
            "{mean} {var}"
        );
    }
}
