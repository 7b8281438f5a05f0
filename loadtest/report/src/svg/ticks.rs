//! Axis scales and ticks: "nice" round numbers (1, 2, 5 × 10ᵏ) on linear axes, decades on log axes
//! (their labels: `labels`).
//!
//! Every function here is total: non-finite or inverted inputs fall back to a harmless default
//! range, so the SVG writer never has to think about NaN.

/// How values are spaced along an axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scale {
    #[default]
    Linear,
    /// Base-10 logarithmic; values ≤ 0 cannot be drawn and leave a gap.
    Log,
}

/// A resolved axis: its drawn range and the tick positions inside it.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub lo: f64,
    pub hi: f64,
    pub ticks: Vec<f64>,
    pub scale: Scale,
}

impl Axis {
    /// Builds an axis covering `[lo, hi]`, widened outwards to round tick values.
    pub fn new(scale: Scale, lo: f64, hi: f64, target_ticks: usize) -> Axis {
        match scale {
            Scale::Linear => linear(lo, hi, target_ticks),
            Scale::Log => log(lo, hi),
        }
    }

    /// Position of `v` along the axis as a fraction in `[0, 1]` (clamped), or `None` when `v`
    /// cannot be drawn (not finite, or ≤ 0 on a log axis).
    pub fn frac(&self, v: f64) -> Option<f64> {
        let (v, lo, hi) = match self.scale {
            Scale::Linear => (v, self.lo, self.hi),
            Scale::Log if v > 0.0 => (v.log10(), self.lo.log10(), self.hi.log10()),
            Scale::Log => return None,
        };
        let f = (v - lo) / (hi - lo);
        f.is_finite().then(|| f.clamp(0.0, 1.0))
    }

    /// Distance between two neighbouring ticks (linear axes), used to pick label precision.
    pub fn step(&self) -> f64 {
        match self.ticks.as_slice() {
            [a, b, ..] => (b - a).abs(),
            _ => (self.hi - self.lo).abs(),
        }
    }
}

/// Rounds `x > 0` to 1, 2, 5 or 10 × 10ᵏ: the nearest one when `round`, else the next one up.
pub fn nice_num(x: f64, round: bool) -> f64 {
    if !(x.is_finite() && x > 0.0) {
        return 1.0;
    }
    let exp = x.log10().floor();
    let base = 10f64.powf(exp);
    let f = x / base;
    let nice = if round {
        match f {
            f if f < 1.5 => 1.0,
            f if f < 3.0 => 2.0,
            f if f < 7.0 => 5.0,
            _ => 10.0,
        }
    } else {
        match f {
            f if f <= 1.0 => 1.0,
            f if f <= 2.0 => 2.0,
            f if f <= 5.0 => 5.0,
            _ => 10.0,
        }
    };
    nice * base
}

fn linear(lo: f64, hi: f64, target: usize) -> Axis {
    let (mut lo, mut hi) = if lo.is_finite() && hi.is_finite() && lo <= hi {
        (lo, hi)
    } else {
        (0.0, 1.0)
    };
    if hi - lo < f64::EPSILON * hi.abs().max(1.0) {
        // A flat series: give it some room rather than dividing by zero.
        let pad = if lo == 0.0 { 1.0 } else { lo.abs() * 0.5 };
        (lo, hi) = if lo >= 0.0 {
            ((lo - pad).max(0.0), hi + pad)
        } else {
            (lo - pad, hi + pad)
        };
    }
    let target = target.max(2) as f64;
    let step = nice_num((hi - lo) / (target - 1.0), true);
    let first = (lo / step).floor();
    let last = (hi / step).ceil();
    let ticks = (0..=((last - first) as usize))
        // Multiplying integers (rather than adding steps) avoids 0.30000000000000004.
        .map(|i| clean((first + i as f64) * step))
        .collect();
    Axis {
        lo: clean(first * step),
        hi: clean(last * step),
        ticks,
        scale: Scale::Linear,
    }
}

fn log(lo: f64, hi: f64) -> Axis {
    let lo = if lo.is_finite() && lo > 0.0 { lo } else { 1.0 };
    let hi = if hi.is_finite() && hi >= lo {
        hi
    } else {
        lo * 10.0
    };
    let first = lo.log10().floor() as i32;
    let mut last = hi.log10().ceil() as i32;
    if last <= first {
        last = first + 1;
    }
    // Few decades: label 1-2-5 inside each; many decades: label the decades only.
    let mantissas: &[f64] = if last - first <= 2 {
        &[1.0, 2.0, 5.0]
    } else {
        &[1.0]
    };
    let mut ticks: Vec<f64> = (first..last)
        .flat_map(|e| mantissas.iter().map(move |m| clean(m * 10f64.powi(e))))
        .collect();
    ticks.push(clean(10f64.powi(last)));
    Axis {
        lo: clean(10f64.powi(first)),
        hi: clean(10f64.powi(last)),
        ticks,
        scale: Scale::Log,
    }
}

/// Removes binary noise from a value that should be a short decimal.
fn clean(v: f64) -> f64 {
    if v == 0.0 {
        return 0.0; // also turns -0 into 0
    }
    let digits = 12 - v.abs().log10().ceil() as i32;
    let p = 10f64.powi(digits.clamp(0, 15));
    (v * p).round() / p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_numbers() {
        assert_eq!(nice_num(0.7, false), 1.0);
        assert_eq!(nice_num(1.4, true), 1.0);
        assert_eq!(nice_num(2.5, true), 2.0);
        assert_eq!(nice_num(4.0, true), 5.0);
        assert_eq!(nice_num(730.0, false), 1000.0);
        assert_eq!(nice_num(f64::NAN, true), 1.0);
    }

    #[test]
    fn linear_ticks_are_round_and_cover_the_data() {
        let a = Axis::new(Scale::Linear, 0.0, 93.0, 6);
        assert_eq!(a.ticks, vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        assert_eq!((a.lo, a.hi), (0.0, 100.0));
        let a = Axis::new(Scale::Linear, 0.0, 0.3, 4);
        assert_eq!(a.ticks, vec![0.0, 0.1, 0.2, 0.3]);
    }

    #[test]
    fn degenerate_ranges_do_not_divide_by_zero() {
        for (lo, hi) in [
            (5.0, 5.0),
            (0.0, 0.0),
            (f64::NAN, 3.0),
            (3.0, 1.0),
            (0.0, f64::INFINITY),
        ] {
            let a = Axis::new(Scale::Linear, lo, hi, 5);
            assert!(a.hi > a.lo, "{lo}..{hi} gave {a:?}");
            assert!(a.ticks.iter().all(|t| t.is_finite()));
            assert!(a.frac(2.0).is_some_and(f64::is_finite));
        }
    }

    #[test]
    fn log_axis_uses_decades() {
        let a = Axis::new(Scale::Log, 3.0, 40_000.0, 5);
        assert_eq!(a.ticks, vec![1.0, 10.0, 100.0, 1000.0, 10_000.0, 100_000.0]);
        assert_eq!(a.frac(100.0), Some(0.4));
        assert_eq!(a.frac(0.0), None);
        assert_eq!(a.frac(-1.0), None);
        let narrow = Axis::new(Scale::Log, 150.0, 900.0, 5);
        assert_eq!(narrow.ticks, vec![100.0, 200.0, 500.0, 1000.0]);
    }

    #[test]
    fn frac_clamps_and_rejects_nan() {
        let a = Axis::new(Scale::Linear, 0.0, 10.0, 6);
        assert_eq!(a.frac(5.0), Some(0.5));
        assert_eq!(a.frac(50.0), Some(1.0));
        assert_eq!(a.frac(f64::NAN), None);
    }
}
