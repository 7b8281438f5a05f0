//! The lab's one median, for the report's spreads over repeats and the scenarios' tables: of the
//! finite values, the middle one of an odd count and the mean of the two middle ones of an even
//! count (the textbook rule, numpy's and PostgreSQL's `percentile_cont(0.5)`). NaN and infinities
//! are left out: a repeat without the figure is not a repeat with a figure of zero.

/// The median of the finite `values`; `None` when there is none.
pub fn median(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn the_middle_of_an_odd_count_and_the_mean_of_the_two_middles_of_an_even_one() {
        assert_eq!(median([3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median([4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median([7.0]), Some(7.0));
    }

    #[test]
    fn values_that_are_not_finite_are_left_out() {
        assert_eq!(median([f64::NAN, 1.0, f64::INFINITY, 3.0]), Some(2.0));
        assert_eq!(median([f64::NAN]), None);
        assert_eq!(median(std::iter::empty()), None);
    }
}
