//! Random numbers that never change under us.
//!
//! The engine must give byte-identical events for the same scenario and seed on any
//! machine and toolchain, so it carries its own generators instead of depending on a
//! crate whose streams may change between releases (TigerBeetle keeps its PRNG in-tree
//! for the same reason). Seeds for named sub-streams ("network", "protocol" per node,
//! ...) are derived with a fixed hash, so adding a node or drawing one more link
//! latency does not reshuffle any other stream.
//!
//! The same derivation is implemented in `python/gossiplab/rng.py`; both are pinned by
//! tests with hard-coded values.

const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// The SplitMix64 output function applied to `z + GOLDEN` (one generator step).
pub fn splitmix64_mix(z: u64) -> u64 {
    let mut z = z.wrapping_add(GOLDEN);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// FNV-1a, 64 bit: a fixed hash for stream names.
pub fn fnv1a64(text: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// Seed of the sub-stream `stream` number `index` under `master`.
pub fn stream_seed(master: u64, stream: &str, index: u64) -> u64 {
    splitmix64_mix(master ^ fnv1a64(stream) ^ splitmix64_mix(index.wrapping_add(1)))
}

/// SplitMix64: used to expand one seed into generator state.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        let out = splitmix64_mix(self.state);
        self.state = self.state.wrapping_add(GOLDEN);
        out
    }
}

/// xoshiro256++ (Blackman and Vigna), seeded through SplitMix64.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    pub fn new(seed: u64) -> Self {
        let mut sm = SplitMix64::new(seed);
        Self {
            s: [sm.next_u64(), sm.next_u64(), sm.next_u64(), sm.next_u64()],
        }
    }

    /// The generator of sub-stream `stream`/`index` under `master`.
    pub fn for_stream(master: u64, stream: &str, index: u64) -> Self {
        Self::new(stream_seed(master, stream, index))
    }

    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform integer in `0..n` without modulo bias (Lemire's method). `n` must be > 0.
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        let mut m = u128::from(self.next_u64()) * u128::from(n);
        if (m as u64) < n {
            let threshold = n.wrapping_neg() % n;
            while (m as u64) < threshold {
                m = u128::from(self.next_u64()) * u128::from(n);
            }
        }
        (m >> 64) as u64
    }

    /// Uniform float in `[0, 1)` with 53 random bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.unit() < p
    }

    /// Fisher-Yates shuffle.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }

    /// Standard normal deviate (Box-Muller; one of the pair is discarded for simplicity).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.unit(); // (0, 1]: ln is finite
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_matches_reference_outputs() {
        // First outputs of the published SplitMix64 reference for seed 1234567.
        let mut sm = SplitMix64::new(1_234_567);
        assert_eq!(sm.next_u64(), 6_457_827_717_110_365_317);
        assert_eq!(sm.next_u64(), 3_203_168_211_198_807_973);
        assert_eq!(sm.next_u64(), 9_817_491_932_198_370_423);
    }

    #[test]
    fn fnv_matches_reference() {
        // FNV-1a 64 test vectors from the FNV reference suite.
        assert_eq!(fnv1a64(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64("foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn streams_are_independent_and_stable() {
        assert_ne!(stream_seed(1, "network", 0), stream_seed(1, "protocol", 0));
        assert_ne!(stream_seed(1, "protocol", 0), stream_seed(1, "protocol", 1));
        assert_eq!(stream_seed(7, "workload", 3), stream_seed(7, "workload", 3));
    }

    #[test]
    fn below_is_in_range_and_roughly_uniform() {
        let mut rng = Rng::new(42);
        let mut counts = [0u32; 6];
        for _ in 0..60_000 {
            counts[rng.below(6) as usize] += 1;
        }
        for c in counts {
            assert!((9_000..11_000).contains(&c), "{counts:?}");
        }
    }
}
