//! Progress bars on stderr: one per phase (arrivals scheduled so far), then a drain spinner
//! counting the requests still open. Hidden automatically when stderr is not a terminal, so logs
//! and CI output stay clean.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::profile::{Model, Profile};

/// The bars of one run.
#[derive(Debug)]
pub struct Progress {
    multi: MultiProgress,
    label: String,
    phases: Vec<(String, u64)>,
    current: Option<(usize, ProgressBar)>,
    drain: Option<ProgressBar>,
}

impl Progress {
    /// Bars for `profile`, prefixed with `label` (e.g. `blocking #1`); `visible = false` hides them.
    pub fn new(label: &str, profile: &Profile, visible: bool) -> Self {
        let target = if visible {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let phases = match profile.model {
            Model::Open => profile
                .phases
                .iter()
                .map(|p| (p.name.clone(), p.arrivals()))
                .collect(),
            Model::Closed { requests, .. } => vec![("closed".to_owned(), requests)],
            // A length of time, not of requests: the bar counts requests without an end.
            Model::ClosedFor { .. } => vec![("closed".to_owned(), 0)],
        };
        Progress {
            multi: MultiProgress::with_draw_target(target),
            label: label.to_owned(),
            phases,
            current: None,
            drain: None,
        }
    }

    /// One more arrival handled in phase `phase`.
    pub fn arrival(&mut self, phase: usize) {
        if self.current.as_ref().map(|(i, _)| *i) != Some(phase) {
            if let Some((_, bar)) = self.current.take() {
                bar.finish();
            }
            let (name, len) = self.phases.get(phase).cloned().unwrap_or_default();
            let bar = self.multi.add(ProgressBar::new(len));
            bar.set_style(
                ProgressStyle::with_template(
                    "{prefix:>16} {msg:<12} [{bar:30}] {pos}/{len} {elapsed}",
                )
                .expect("valid template")
                .progress_chars("=> "),
            );
            bar.set_prefix(self.label.clone());
            bar.set_message(name);
            self.current = Some((phase, bar));
        }
        if let Some((_, bar)) = &self.current {
            bar.inc(1);
        }
    }

    /// The schedule is done; `open` requests are still in flight.
    pub fn draining(&mut self, open: u64) {
        if let Some((_, bar)) = self.current.take() {
            bar.finish();
        }
        let bar = self.drain.get_or_insert_with(|| {
            let bar = self.multi.add(ProgressBar::new_spinner());
            bar.set_prefix(self.label.clone());
            bar.set_style(
                ProgressStyle::with_template("{prefix:>16} drain        {spinner} {msg}")
                    .expect("valid template"),
            );
            bar
        });
        bar.set_message(format!("{open} requests open"));
        bar.tick();
    }

    /// Everything finished.
    pub fn finish(&mut self) {
        if let Some((_, bar)) = self.current.take() {
            bar.finish();
        }
        if let Some(bar) = self.drain.take() {
            bar.finish_with_message("done");
        }
    }
}
