//! What a bench's results say about the conditions it ran in, beside its figures: the build
//! profile of the APIs, and the notes on other load on the machine that its windows saw.

/// `release` or `debug`: where the API binary was found.
pub(super) fn build_profile(api: &str) -> String {
    labkit::process::find_binary(api)
        .ok()
        .map(|b| {
            if b.components().any(|c| c.as_os_str() == "release") {
                "release"
            } else {
                "debug"
            }
        })
        .unwrap_or("unknown")
        .to_owned()
}

/// What the windows say about other load on the machine.
pub(super) fn contention_notes(cells: &[lab_results::bench::BenchCell]) -> Vec<String> {
    let mut notes = Vec::new();
    for c in cells {
        let w = &c.window;
        if let Some(wait) = w.api_cpu_wait_s.filter(|s| *s / w.seconds >= 0.05) {
            notes.push(format!(
                "{} mocks {}: on average {:.2} of the API's threads were runnable without a CPU \
                 (other processes on its CPU, or its own threads queueing for it)",
                c.api,
                c.mocks,
                wait / w.seconds
            ));
        }
        if let Some(other) = w.other_cpu_s().filter(|s| *s / w.seconds >= 0.1) {
            notes.push(format!(
                "{} mocks {}: {:.0} % of a CPU was busy outside the measured processes (other \
                 tenants of this machine, kernel threads — PostgreSQL's disk flushes among them)",
                c.api,
                c.mocks,
                100.0 * other / w.seconds
            ));
        }
    }
    notes
}
