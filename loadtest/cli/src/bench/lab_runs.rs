//! The benches that measure under the open model (`--memory`, `--harness`): one lab run of each
//! API with the bench's harness flags.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::BenchArgs;

/// One lab run of each of `args.apis` under `plan` (the profile and its flags) with the harness
/// flags the bench was given, each in `<out>/<api>/`, `out` being `--out` or
/// `reports/<UTC timestamp>-bench-<what>`: the benches that measure under the open model
/// (`--memory`, `--harness`). Returns the folder and each API's run.
pub async fn lab_runs(
    args: &BenchArgs,
    what: &str,
    plan: &[&str],
) -> Result<(PathBuf, Vec<(String, lab_results::RunResults)>)> {
    let out = args.out.clone().unwrap_or_else(|| {
        Path::new("reports").join(format!(
            "{}-bench-{what}",
            chrono::Utc::now().format("%Y%m%dT%H%M%SZ")
        ))
    });
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let mut runs = Vec::new();
    for api in &args.apis {
        let mut argv: Vec<String> = ["--apis", api.as_str(), "--no-progress"]
            .iter()
            .chain(plan)
            .map(|s| s.to_string())
            .collect();
        argv.extend(["--db-pool-size".to_owned(), args.db_pool_size.to_string()]);
        argv.extend(args.pg_settings.iter().map(|s| format!("--pg-setting={s}")));
        if args.no_limits {
            argv.push("--no-limits".to_owned());
        }
        if args.no_pin {
            argv.push("--no-pin".to_owned());
        }
        let mut lab = crate::lab_args::LabArgs::from_flags(argv)?;
        // The bench's pod, as given (`--api-cpus`, `--api-memory-mib`, the CFS period and burst).
        (lab.harness.api_cpus, lab.harness.api_memory_mib) = (args.api_cpus, args.api_memory_mib);
        (lab.harness.api_cfs_period_ms, lab.harness.api_cfs_burst_ms) =
            (args.api_cfs_period_ms, args.api_cfs_burst_ms);
        // And its clients (`--blocking-client`, `--deps-http`).
        (lab.blocking_client, lab.deps_http) = (args.blocking_client, Some(args.deps_http));
        lab.harness.out = Some(out.join(api));
        let (mut done, _) = crate::lab::lab(lab, None).await?;
        anyhow::ensure!(!done.is_empty(), "{api}: the {what} run made no results");
        runs.push((api.clone(), done.remove(0)));
    }
    Ok((out, runs))
}
