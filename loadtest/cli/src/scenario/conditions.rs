//! The run conditions a scenario's page states (`ScenarioTable::conditions`): read here, from this
//! process and machine, since the page (`lab_report::scenario`) is rendered from what it is given.

/// How, when and where this scenario ran, for the page (what a results file's header says by
/// hand otherwise): the command line, the date, the commit and build, the machine.
pub fn conditions() -> Vec<String> {
    let build = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    let e = crate::run::environment(build);
    let args: Vec<String> = std::env::args().collect();
    vec![
        format!("Written by {}", args.join(" ")),
        format!(
            "on {} UTC, git {} ({build} build of loadtest),",
            chrono::Utc::now().format("%Y-%m-%d %H:%M"),
            e.git_sha
        ),
        format!(
            "on {} ({} cores, {:.0} GiB, {}).",
            e.cpu_model,
            e.cores,
            e.memory_bytes as f64 / (1u64 << 30) as f64,
            e.kernel
        ),
    ]
}
