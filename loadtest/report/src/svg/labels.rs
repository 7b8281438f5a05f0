//! Tick labels a reader reads: a unit on every label that has one (`250 ms`, `1.5 s`, `300/s`,
//! `50 %`), thousands as `15k` (never `15.000k`), the same decimals along a linear axis.

/// How tick labels are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TickFormat {
    /// `950`, `1.5k`, `2M`.
    #[default]
    Number,
    /// Values are milliseconds: `250 ms`, `1.5 s`.
    Millis,
    /// Values are seconds: `0 s`, `90 s`.
    Seconds,
    /// Values are percentages: `50 %`.
    Percent,
    /// Values are rates per second: `100/s`, `1.5k/s`.
    PerSecond,
    /// Percentiles on a "nines" axis: `v` stands for the percentile 100 × (1 − 10⁻ᵛ), so
    /// 1 → `90 %`, 2 → `99 %`, 3 → `99.9 %` (the HdrHistogram percentile plot).
    Nines,
    /// Powers of ten on a log axis drawn linearly: `v` stands for 10ᵛ, so 0 → `1`, 2 → `100`
    /// (e.g. batch sizes 1, 10, 100, 1000 at even spacing).
    PowersOfTen,
    /// Powers of ten of milliseconds, as [`TickFormat::PowersOfTen`]: 1 → `10 ms`, 4 → `10 s`.
    PowersOfTenMillis,
}

impl TickFormat {
    /// An axis of powers of ten drawn linearly (ticks at whole exponents).
    pub fn is_powers_of_ten(self) -> bool {
        matches!(
            self,
            TickFormat::PowersOfTen | TickFormat::PowersOfTenMillis
        )
    }
}

/// Writes a tick label; `step` is the spacing of neighbouring ticks and decides the decimals, so
/// all labels of a linear axis have the same number of them (log axes pass the tick itself).
pub fn format_tick(v: f64, step: f64, format: TickFormat) -> String {
    match format {
        TickFormat::Number => compact(v, step),
        TickFormat::Percent => format!("{} %", compact(v, step)),
        TickFormat::PerSecond => format!("{}/s", compact(v, step)),
        TickFormat::Seconds => format!("{} s", compact(v, step)),
        TickFormat::Millis if v.abs() >= 1000.0 => {
            format!("{} s", plain(v / 1000.0, step / 1000.0))
        }
        TickFormat::Millis => format!("{} ms", plain(v, step)),
        TickFormat::Nines => {
            let decimals = (v.round() as i64 - 2).clamp(0, 6) as usize;
            format!("{:.*} %", decimals, 100.0 * (1.0 - 10f64.powf(-v)))
        }
        // Each label its own precision: a power of ten needs no decimals (10k, not 10.000k).
        TickFormat::PowersOfTen => {
            let p = 10f64.powf(v).round();
            compact(p, p)
        }
        TickFormat::PowersOfTenMillis => {
            let p = 10f64.powf(v);
            format_tick(p, p, TickFormat::Millis)
        }
    }
}

/// `1500` → `1.5k`, `2000000` → `2M`, small values with as many decimals as `step` needs.
fn compact(v: f64, step: f64) -> String {
    match v.abs() {
        a if a >= 1e6 => format!("{}M", plain(v / 1e6, step / 1e6)),
        a if a >= 1e4 => format!("{}k", plain(v / 1e3, step / 1e3)),
        _ => plain(v, step),
    }
}

fn plain(v: f64, step: f64) -> String {
    if !v.is_finite() {
        return "–".to_owned();
    }
    let decimals = if step > 0.0 && step < 1.0 {
        (-step.log10().floor()) as usize
    } else {
        0
    };
    let s = format!("{:.*}", decimals.min(6), v);
    if s.trim_start_matches('-')
        .chars()
        .all(|c| c == '0' || c == '.')
    {
        "0".to_owned()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert_eq!(format_tick(1500.0, 500.0, TickFormat::Number), "1500");
        assert_eq!(format_tick(15_000.0, 5000.0, TickFormat::Number), "15k");
        assert_eq!(format_tick(0.25, 0.05, TickFormat::Number), "0.25");
        assert_eq!(format_tick(250.0, 50.0, TickFormat::Millis), "250 ms");
        assert_eq!(format_tick(2500.0, 500.0, TickFormat::Millis), "2.5 s");
        assert_eq!(format_tick(60.0, 30.0, TickFormat::Seconds), "60 s");
        assert_eq!(format_tick(1.0, 0.2, TickFormat::Millis), "1.0 ms");
        assert_eq!(format_tick(0.2, 0.2, TickFormat::Number), "0.2");
        assert_eq!(format_tick(-0.0001, 0.1, TickFormat::Number), "0");
        assert_eq!(format_tick(f64::NAN, 1.0, TickFormat::Number), "–");
        assert_eq!(format_tick(3.0, 1.0, TickFormat::PowersOfTen), "1000");
        assert_eq!(format_tick(0.0, 1.0, TickFormat::PowersOfTen), "1");
        assert_eq!(format_tick(4.0, 1.0, TickFormat::PowersOfTen), "10k");
        assert_eq!(format_tick(6.0, 1.0, TickFormat::PowersOfTen), "1M");
        let millis: Vec<String> = (1..6)
            .map(|v| format_tick(f64::from(v), 1.0, TickFormat::PowersOfTenMillis))
            .collect();
        assert_eq!(millis, ["10 ms", "100 ms", "1 s", "10 s", "100 s"]);
        assert_eq!(format_tick(250.0, 50.0, TickFormat::PerSecond), "250/s");
        assert_eq!(
            format_tick(15_000.0, 5000.0, TickFormat::PerSecond),
            "15k/s"
        );
        let nines: Vec<String> = (0..5)
            .map(|v| format_tick(f64::from(v), 1.0, TickFormat::Nines))
            .collect();
        assert_eq!(nines, ["0 %", "90 %", "99 %", "99.9 %", "99.99 %"]);
    }
}
