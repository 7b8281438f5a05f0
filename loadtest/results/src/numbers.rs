//! How the lab writes a figure in a table or a sentence: the scenarios' tables and `bench.md`
//! through these functions, the report through its units (`lab_report`'s `fmt`), which are built
//! on them. A figure that was not measured, or is not a number, is written [`NONE`].

/// What stands in a cell for a figure that was not measured (or is NaN or infinite): an em dash.
/// (The report's own units write an en dash, `–`: its pages have always used that one.)
pub const NONE: &str = "—";

/// `v` with `decimals` decimals: `fixed(2.456, 2)` is `2.46`; [`NONE`] for none. Takes an `f64`
/// or an `Option<f64>`.
pub fn fixed(v: impl Into<Option<f64>>, decimals: usize) -> String {
    match v.into() {
        Some(v) if v.is_finite() => format!("{v:.decimals$}"),
        _ => NONE.to_owned(),
    }
}

/// `v` rounded to a whole number, with a comma between thousands: `12,345`, `-1,234`; [`NONE`]
/// for NaN or an infinity.
pub fn grouped(v: f64) -> String {
    if !v.is_finite() {
        return NONE.to_owned();
    }
    let v = v.round();
    let digits = format!("{:.0}", v.abs());
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if v < 0.0 {
        out.push('-');
    }
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A duration in milliseconds, whole milliseconds below a second and seconds with two decimals
/// from one: `850 ms`, `2.31 s`; [`NONE`] for none.
pub fn ms_or_s(v: impl Into<Option<f64>>) -> String {
    match v.into() {
        Some(v) if !v.is_finite() => NONE.to_owned(),
        Some(v) if v >= 1000.0 => format!("{:.2} s", v / 1000.0),
        Some(v) => format!("{v:.0} ms"),
        None => NONE.to_owned(),
    }
}

/// A fraction as a whole percentage: `0.934` is `93 %`.
pub fn percent(fraction: f64) -> String {
    format!("{:.0} %", fraction * 100.0)
}

/// Bytes as MiB with one decimal: `42.0 MiB`.
pub fn mib(bytes: f64) -> String {
    format!("{:.1} MiB", bytes / MIB)
}

/// Bytes as KiB with one decimal: `2.0 KiB`.
pub fn kib(bytes: f64) -> String {
    format!("{:.1} KiB", bytes / 1024.0)
}

/// Bytes per MiB.
pub const MIB: f64 = 1024.0 * 1024.0;

/// A CPU limit in words: `1 CPU core`, `1.5 CPU cores`, and a share of one core as a pod's
/// request is written, `0.125 CPU`.
pub fn cpus(n: f64) -> String {
    if n == 1.0 {
        "1 CPU core".to_owned()
    } else if n < 1.0 {
        format!("{n} CPU")
    } else {
        format!("{n} CPU cores")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_limits_in_words() {
        assert_eq!(cpus(1.0), "1 CPU core");
        assert_eq!(cpus(1.5), "1.5 CPU cores");
        assert_eq!(cpus(0.125), "0.125 CPU");
    }

    #[test]
    fn fixed_decimals_and_none_for_what_was_not_measured() {
        assert_eq!(fixed(2.456, 2), "2.46");
        assert_eq!(fixed(Some(299.4), 0), "299");
        assert_eq!(fixed(None, 1), "—");
        assert_eq!(fixed(f64::NAN, 0), "—");
        assert_eq!(fixed(Some(f64::INFINITY), 3), "—");
    }

    #[test]
    fn thousands_are_grouped_after_rounding() {
        assert_eq!(grouped(1_234_567.4), "1,234,567");
        assert_eq!(grouped(999.5), "1,000");
        assert_eq!(grouped(999.0), "999");
        assert_eq!(grouped(0.0), "0");
        assert_eq!(grouped(-0.4), "0", "no minus sign on a zero");
        assert_eq!(grouped(-12_345.0), "-12,345");
        assert_eq!(grouped(-123_456.0), "-123,456");
        assert_eq!(grouped(f64::NAN), "—");
    }

    #[test]
    fn durations_switch_to_seconds_at_one_second() {
        assert_eq!(ms_or_s(850.4), "850 ms");
        assert_eq!(ms_or_s(999.4), "999 ms");
        assert_eq!(ms_or_s(1000.0), "1.00 s");
        assert_eq!(ms_or_s(Some(2312.0)), "2.31 s");
        assert_eq!(ms_or_s(None), "—");
        assert_eq!(ms_or_s(f64::NAN), "—");
    }

    #[test]
    fn shares_and_sizes() {
        assert_eq!(percent(0.934), "93 %");
        assert_eq!(mib(3.0 * MIB), "3.0 MiB");
        assert_eq!(kib(2048.0), "2.0 KiB");
    }
}
