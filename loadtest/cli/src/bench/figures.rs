//! How the bench's tables write a number: one copy for the bench's tables and the cost tables.

/// `x` with `d` decimals, `—` for none.
pub fn num(x: Option<f64>, d: usize) -> String {
    match x {
        Some(v) if v.is_finite() => format!("{v:.d$}"),
        _ => "—".to_owned(),
    }
}

/// Bytes as MiB with one decimal.
pub fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}

/// Bytes as KiB with one decimal.
pub fn kib(bytes: f64) -> String {
    format!("{:.1} KiB", bytes / 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_sizes() {
        assert_eq!(num(Some(2.456), 2), "2.46");
        assert_eq!(num(None, 0), "—");
        assert_eq!(num(Some(f64::NAN), 0), "—");
        assert_eq!(mib(3 << 20), "3.0 MiB");
        assert_eq!(kib(2048.0), "2.0 KiB");
    }
}
