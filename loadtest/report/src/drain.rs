//! What the per-second series says about the answers that came after their window: requests still
//! open when the plateau ended (answered late, or never), and each API's drain — the time from the
//! last arrival to the last answer and the answers that came in it.
//!
//! Both are read from the generator's own counts: each second's arrivals by the second their answer
//! came (`answered_after`, exact per arrival), `completed` in a second for the drain. They exist because a rate that divides every answer by the schedule's
//! length makes an API that answered late look as if it had kept up.

use lab_results::{RunResults, SecondArrivals, WindowFate, window_fate};

use super::model::{plateau_seconds, schedule_s};

/// The plateau's arrivals still open when it ended: answered after it (late), or never. Exact
/// when the file records each second's answers by arrival ([`plateau_fate`]); in an older file,
/// the generator's open requests at the end of the plateau's last second (which may include a few
/// arrivals from before it). `None` without a plateau or its seconds.
pub fn open_at_plateau_end(run: &RunResults) -> Option<u64> {
    if let Some(f) = plateau_fate(run) {
        return Some(f.answered_late + f.unanswered);
    }
    let (from, to) = plateau_seconds(run)?;
    let last = to.checked_sub(1).filter(|&l| l >= from)?;
    run.seconds
        .iter()
        .find(|s| s.t == last)
        .map(|s| s.in_flight)
}

/// What became of the plateau's arrivals — answered within it, after it (late), never — counted
/// per arrival by the generator. `None` without a plateau, or in a file written before the
/// generator recorded it (no second has `answered_after` though some answer came).
pub fn plateau_fate(run: &RunResults) -> Option<WindowFate> {
    let (from, to) = plateau_seconds(run)?;
    let recorded = run.seconds.iter().any(|s| !s.answered_after.is_empty());
    let answered = run.seconds.iter().any(|s| s.completed > 0);
    if answered && !recorded {
        return None;
    }
    let seconds = run.seconds.iter().map(|s| SecondArrivals {
        t: s.t,
        offered: s.offered,
        not_sent: s.not_sent,
        answered_after: &s.answered_after,
    });
    Some(window_fate(seconds, from, to))
}

/// The drain of one run: from the end of the arrival schedule to the last answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Drain {
    /// Seconds from the last scheduled arrival to the end of the second of the last answer (0
    /// when every answer came before the schedule ended).
    pub seconds: f64,
    /// Answers that came after the schedule ended.
    pub answers: u64,
}

/// `None` for the closed model (no schedule) or a run without a per-second series.
pub fn drain(run: &RunResults) -> Option<Drain> {
    let end = schedule_s(run)?;
    let last_answer = run
        .seconds
        .iter()
        .filter(|s| s.completed > 0)
        .map(|s| f64::from(s.t) + 1.0)
        .fold(None, |m: Option<f64>, t| Some(m.map_or(t, |m| m.max(t))))?;
    let answers = run
        .seconds
        .iter()
        .filter(|s| f64::from(s.t) >= end)
        .map(|s| s.completed)
        .sum();
    Some(Drain {
        seconds: (last_answer - end).max(0.0),
        answers,
    })
}

/// Seconds from the first arrival to the last answer: the denominator of a whole run's answer
/// rates (the schedule, plus the drain).
pub fn answering_s(run: &RunResults) -> Option<f64> {
    Some(schedule_s(run)? + drain(run)?.seconds)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lab_results::{PhaseInfo, SecondSample};

    fn run(completed: &[u64], in_flight: &[u64]) -> RunResults {
        let mut r: RunResults =
            serde_json::from_str(include_str!("../tests/fixtures/reactive-api-0.json"))
                .expect("fixture");
        r.config.profile.phases = vec![PhaseInfo {
            name: "constant".into(),
            start_s: 1.0,
            duration_s: 2.0,
            from_rate: 10.0,
            to_rate: 10.0,
            arrivals: 20,
        }];
        r.seconds = completed
            .iter()
            .zip(in_flight)
            .enumerate()
            .map(|(t, (&completed, &in_flight))| SecondSample {
                t: t as u32,
                completed,
                in_flight,
                ..SecondSample::default()
            })
            .collect();
        r
    }

    #[test]
    fn drain_runs_from_the_schedule_end_to_the_last_answer() {
        // The schedule ends at 3 s; answers at 3 and 5 s, none at 6 s.
        let r = run(&[0, 5, 5, 4, 0, 6, 0], &[0, 5, 9, 6, 6, 0, 0]);
        let d = drain(&r).expect("drain");
        assert_eq!((d.seconds, d.answers), (3.0, 10));
        assert_eq!(answering_s(&r), Some(6.0));
        assert_eq!(open_at_plateau_end(&r), Some(9), "the end of second 2");
        assert_eq!(plateau_fate(&r), None, "answers not recorded by arrival");
        let kept_up = run(&[0, 10, 10, 0], &[0, 0, 0, 0]);
        let d = drain(&kept_up).expect("drain");
        assert_eq!((d.seconds, d.answers), (0.0, 0));
    }

    #[test]
    fn the_plateau_counts_its_late_and_unanswered_arrivals_exactly() {
        // Plateau = seconds 1 and 2. Second 1's 10 arrivals: 6 answered in it, 1 in second 2, 2
        // in second 4; second 2's: 7 in it, 2 in second 3; 2 arrivals never answered.
        let mut r = run(&[0, 6, 8, 2, 2], &[0, 4, 4, 2, 0]);
        r.seconds[1].offered = 10;
        r.seconds[1].answered_after = vec![6, 1, 0, 2];
        r.seconds[2].offered = 10;
        r.seconds[2].answered_after = vec![7, 2];
        let f = plateau_fate(&r).expect("recorded");
        assert_eq!(
            (f.arrivals, f.answered_within, f.answered_late, f.unanswered),
            (20, 14, 4, 2)
        );
        assert_eq!(open_at_plateau_end(&r), Some(6), "late or never, exactly");
    }
}
