//! What became of a window's arrivals: answered within the window, answered after it (late), or
//! never answered by the run's end — counted exactly, per arrival, from each second's
//! `answered_after` (the arrivals due in that second, by how many whole seconds later their answer
//! came). One rule for the generator's recorder and for a results file's seconds.

/// One second's arrivals, as the rule reads them.
#[derive(Debug, Clone, Copy)]
pub struct SecondArrivals<'a> {
    /// The second (since the schedule's origin) the arrivals were due in.
    pub t: u32,
    pub offered: u64,
    pub not_sent: u64,
    /// `answered_after[k]`: arrivals of second `t` answered in second `t + k`.
    pub answered_after: &'a [u64],
}

/// The fate of the arrivals due in a window `[from, to)` of whole seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WindowFate {
    /// Arrivals due in the window.
    pub arrivals: u64,
    /// Of those, refused by the generator's in-flight cap (never sent).
    pub not_sent: u64,
    /// Answered before the window's end.
    pub answered_within: u64,
    /// Answered after the window's end (late): their latencies, from the intended send time, are
    /// in the window's histogram all the same.
    pub answered_late: u64,
    /// Sent and never answered by the run's end.
    pub unanswered: u64,
}

/// The fate of the arrivals due in `[from, to)`. Arrivals, answers and the not-sent add up:
/// `arrivals = not_sent + answered_within + answered_late + unanswered`.
pub fn window_fate<'a>(
    seconds: impl IntoIterator<Item = SecondArrivals<'a>>,
    from: u32,
    to: u32,
) -> WindowFate {
    let mut f = WindowFate::default();
    for s in seconds.into_iter().filter(|s| s.t >= from && s.t < to) {
        f.arrivals += s.offered;
        f.not_sent += s.not_sent;
        // Answered within: in a second before `to`, i.e. k < to − t.
        let within = (to - s.t) as usize;
        f.answered_within += s.answered_after.iter().take(within).sum::<u64>();
        f.answered_late += s.answered_after.iter().skip(within).sum::<u64>();
    }
    f.unanswered = f
        .arrivals
        .saturating_sub(f.not_sent + f.answered_within + f.answered_late);
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_splits_its_arrivals_by_when_their_answer_came() {
        let a = [5, 3, 1];
        let b = [2, 0, 0, 4];
        let seconds = [
            SecondArrivals {
                t: 0,
                offered: 9,
                not_sent: 0,
                answered_after: &a,
            },
            SecondArrivals {
                t: 1,
                offered: 10,
                not_sent: 1,
                answered_after: &b,
            },
            SecondArrivals {
                t: 2,
                offered: 7,
                not_sent: 0,
                answered_after: &[7],
            },
        ];
        // [1, 2): second 1's answers in second 1 are within; 4 came 3 s later; 3 never.
        let f = window_fate(seconds, 1, 2);
        assert_eq!(
            f,
            WindowFate {
                arrivals: 10,
                not_sent: 1,
                answered_within: 2,
                answered_late: 4,
                unanswered: 3
            }
        );
        // [0, 2): second 0's answers in seconds 0 and 1 are within, the one in second 2 late.
        let f = window_fate(seconds, 0, 2);
        assert_eq!(
            (f.arrivals, f.answered_within, f.answered_late, f.unanswered),
            (19, 10, 5, 3)
        );
        // The whole run: nothing late.
        let f = window_fate(seconds, 0, 10);
        assert_eq!(
            (f.answered_within, f.answered_late, f.unanswered),
            (22, 0, 3)
        );
    }
}
