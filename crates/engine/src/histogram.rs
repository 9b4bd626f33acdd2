//! Fixed log-linear bins for latencies in nanoseconds (HDR-histogram style).
//!
//! Values below 256 ns have a bin each (exact). Above, each power of two [2^e, 2^(e+1))
//! is cut into 128 bins of equal width 2^(e-7), so a bin is never wider than 1/128 of
//! its lower bound. Reporting a bin by its middle value is then off by at most half a
//! bin, 1/256 of the true value (< 0.4 %), which is what percentiles computed from the
//! bins inherit. The bins are the same for every run, so histograms of different runs,
//! nodes or groups add up bin by bin.
//!
//! 256 exact bins plus 56 octaves (2^8 up to 2^64) of 128 bins: 7,424 bins, a `u16`.

/// Values below this have a bin of their own.
pub const EXACT_BELOW: u64 = 256;
/// Bins per power of two above `EXACT_BELOW`: 2^SUB_BITS.
pub const SUB_BITS: u32 = 7;
const SUB: u64 = 1 << SUB_BITS;
/// Number of bins covering every u64.
pub const BINS: usize = EXACT_BELOW as usize + (64 - 8) * SUB as usize;
/// Largest error of a bin's middle value (`bin_middle`) relative to any value in the bin.
pub const MAX_RELATIVE_ERROR: f64 = 1.0 / 256.0;

/// The bin holding `value`.
pub fn bin_of(value: u64) -> u16 {
    if value < EXACT_BELOW {
        return value as u16;
    }
    let e = 63 - value.leading_zeros(); // 8..=63
    let shift = e - SUB_BITS;
    let mantissa = (value >> shift) - SUB; // the 7 bits below the leading one
    (EXACT_BELOW + u64::from(e - 8) * SUB + mantissa) as u16
}

/// The smallest and largest value of `bin` (both inclusive).
pub fn bin_bounds(bin: u16) -> (u64, u64) {
    let b = u64::from(bin);
    if b < EXACT_BELOW {
        return (b, b);
    }
    let octave = (b - EXACT_BELOW) / SUB; // e - 8
    let mantissa = (b - EXACT_BELOW) % SUB;
    let shift = octave + 8 - u64::from(SUB_BITS);
    let lo = (SUB + mantissa) << shift;
    let width = 1u64 << shift;
    (lo, lo + (width - 1))
}

/// The value that stands for `bin`: its middle, rounded down.
pub fn bin_middle(bin: u16) -> u64 {
    let (lo, hi) = bin_bounds(bin);
    lo + (hi - lo) / 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_values_are_exact() {
        for v in 0..EXACT_BELOW {
            assert_eq!(bin_bounds(bin_of(v)), (v, v));
        }
    }

    #[test]
    fn bins_tile_the_whole_range_in_order() {
        // Each bin starts right after the previous one ends, and the last ends at u64::MAX.
        let mut next = 0u64;
        for bin in 0..BINS {
            let (lo, hi) = bin_bounds(bin as u16);
            assert_eq!(lo, next, "bin {bin}");
            assert!(hi >= lo);
            if bin + 1 < BINS {
                next = hi + 1;
            } else {
                assert_eq!(hi, u64::MAX);
            }
        }
    }

    #[test]
    fn every_value_falls_in_the_bin_whose_bounds_hold_it() {
        let mut values: Vec<u64> = (0..5000).collect();
        for e in 8..64 {
            let p = 1u64 << e;
            values.extend([p - 1, p, p + 1, p + p / 3, p + p / 2 + 7]);
        }
        values.push(u64::MAX);
        for v in values {
            let (lo, hi) = bin_bounds(bin_of(v));
            assert!(lo <= v && v <= hi, "{v} not in [{lo}, {hi}]");
        }
    }

    #[test]
    fn a_bin_is_at_most_a_128th_of_its_lower_bound_wide() {
        for bin in EXACT_BELOW as usize..BINS {
            let (lo, hi) = bin_bounds(bin as u16);
            let width = hi - lo + 1;
            assert!(width * 128 <= lo, "bin {bin}: width {width}, lo {lo}");
        }
    }

    #[test]
    fn the_middle_is_within_the_stated_error_of_any_value_in_the_bin() {
        // Worked example: 1.5 ms = 1,500,000 ns lies in octave 2^20 (1,048,576), whose
        // bins are 2^13 = 8192 ns wide; the middle is within 4096 ns, 0.27 %.
        let v = 1_500_000;
        let (lo, hi) = bin_bounds(bin_of(v));
        assert_eq!(hi - lo + 1, 8192);
        assert!(bin_middle(bin_of(v)).abs_diff(v) <= 4096);
        for bin in (0..BINS).step_by(7) {
            let (lo, hi) = bin_bounds(bin as u16);
            let mid = bin_middle(bin as u16);
            for v in [lo, hi] {
                let err = mid.abs_diff(v) as f64;
                assert!(err <= MAX_RELATIVE_ERROR * v as f64, "bin {bin}, value {v}");
            }
        }
    }

    #[test]
    fn there_are_7424_bins() {
        assert_eq!(BINS, 7424);
        assert_eq!(bin_of(u64::MAX) as usize, BINS - 1);
    }
}
