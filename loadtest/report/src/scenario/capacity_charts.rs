//! The charts of `--scenario threads`, `--scenario capacity` and `loadtest crossover`, drawn only
//! from the rows of `scenario.json`: blocking-api's orders/s and peak RSS against its thread
//! count (a line per offered rate, Little's-law bound dashed, reactive-api at the same rate as a
//! reference line), each API's capacity as a bar, and capacity against the dependencies' critical
//! path (a line per API). Drawn with the report's SVG module, like every scenario chart.

use lab_results::numbers::fixed;
use lab_results::scenario::{CapacityFile, CapacityPoint, StepPoint, StoppedBy};

use crate::svg::{Bar, Dash, LineChart, PALETTE, Panel, RefLine, Series, TickFormat, bars};

use super::ScenarioChart;

/// The offered rates of the sweep, ascending.
fn rates(sweep: &[StepPoint]) -> Vec<f64> {
    let mut rates: Vec<f64> = sweep.iter().map(|s| s.rate_rps).collect();
    rates.sort_by(f64::total_cmp);
    rates.dedup();
    rates
}

/// blocking-api's points at `rate`, by thread count, as (log10 threads, y).
fn line(sweep: &[StepPoint], rate: f64, y: impl Fn(&StepPoint) -> Option<f64>) -> Vec<(f64, f64)> {
    let mut pts: Vec<(f64, f64)> = sweep
        .iter()
        .filter(|s| s.rate_rps == rate)
        .filter_map(|s| Some((f64::from(s.blocking_threads?).log10(), y(s)?)))
        .collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    pts
}

/// `threads`: orders/s against `BLOCKING_THREADS`, one solid line per offered rate, the
/// Little's-law bound min(threads ÷ critical path, rate) dashed beside it, and reactive-api's
/// orders/s at each rate as a reference line.
pub fn threads_orders(file: &CapacityFile) -> ScenarioChart {
    let path_s = file.critical_path_ms as f64 / 1000.0;
    let mut series = Vec::new();
    let mut ref_lines = Vec::new();
    for (i, rate) in rates(&file.sweep).into_iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        let measured = line(&file.sweep, rate, |s| Some(s.orders_rps));
        let bound = measured
            .iter()
            .map(|&(x, _)| (x, (10f64.powf(x) / path_s).min(rate)))
            .collect();
        let mut s = Series::new(
            format!("blocking-api at {rate:.0}/s"),
            measured,
            colour,
            Dash::Solid,
        );
        s.dots = true;
        series.push(s);
        series.push(Series::new(
            format!("Little's-law bound at {rate:.0}/s"),
            bound,
            colour,
            Dash::Dashed,
        ));
        if let Some(r) = file
            .sweep
            .iter()
            .find(|s| s.rate_rps == rate && s.blocking_threads.is_none())
        {
            ref_lines.push(RefLine {
                y: r.orders_rps,
                label: format!("{} at {rate:.0}/s: {}", r.api, fixed(Some(r.orders_rps), 1)),
            });
        }
    }
    let chart = LineChart {
        ref_lines,
        y_format: TickFormat::PerSecond,
        ..LineChart::log_x(
            "Orders per second against blocking-api's threads",
            "BLOCKING_THREADS (log spacing)",
            "orders per second (plateau)",
            series,
        )
    };
    ScenarioChart {
        title: chart.title.clone(),
        caption: format!(
            "A solid line per offered rate (each dot one run), the Little's-law bound \
             (threads ÷ {path_s:.2} s, at most the rate) dashed in the same colour; the \
             horizontal lines are reactive-api at the same rates. Where a solid line leaves its \
             dashed one, something other than the thread count stopped blocking-api (the table \
             says what)."
        ),
        svg: chart.to_svg(),
    }
}

/// `threads`: peak RSS against `BLOCKING_THREADS`, one line per offered rate.
pub fn threads_rss(file: &CapacityFile) -> ScenarioChart {
    let series = rates(&file.sweep)
        .into_iter()
        .enumerate()
        .map(|(i, rate)| {
            let mut s = Series::new(
                format!("blocking-api at {rate:.0}/s"),
                line(&file.sweep, rate, |s| s.peak_rss_mib),
                PALETTE[i % PALETTE.len()],
                Dash::ALL[i % 4],
            );
            s.dots = true;
            s
        })
        .collect();
    let chart = LineChart::log_x(
        "Peak RSS against blocking-api's threads",
        "BLOCKING_THREADS (log spacing)",
        "peak RSS (MiB)",
        series,
    );
    ScenarioChart {
        title: chart.title.clone(),
        caption: "A line per offered rate, each dot one run; the limit is 1,024 MiB. RSS follows \
                  the threads the load made busy (the table's peak threads), not the pool's size."
            .to_owned(),
        svg: chart.to_svg(),
    }
}

/// `capacity`: a bar per API searched, its capacity (a harness-bound one marked as a lower bound).
pub fn capacities(file: &CapacityFile) -> ScenarioChart {
    let bar_list = file
        .capacities
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let who = match c.blocking_threads {
                Some(t) => format!("{} · {t} threads", c.api),
                None => c.api.clone(),
            };
            let note = if c.is_lower_bound() {
                " (at least)"
            } else {
                ""
            };
            Bar {
                label: format!("{who}{note}"),
                tip: format!("{who}: stopped by {}", c.stopped_by.as_str()),
                colour: PALETTE[i % PALETTE.len()],
                value: c.capacity_rps.unwrap_or(0.0),
            }
        })
        .collect();
    ScenarioChart {
        title: "Capacity within the objective".to_owned(),
        caption: format!(
            "The highest rate each API met the objective at, ± {:.0}/s; \"at least\" where the \
             rig, not the API, stopped the search.",
            file.capacities.first().map_or(0.0, |c| c.resolution_rps)
        ),
        svg: bars(
            "Capacity within the objective",
            &[Panel {
                title: "orders per second",
                unit: "/s",
                bars: bar_list,
            }],
        ),
    }
}

/// `crossover`: capacity against the critical path (log spacing), one line per API (and thread
/// count), from capacity runs at several dependency latencies.
pub fn crossover(files: &[CapacityFile]) -> ScenarioChart {
    // A line per API and way of setting its threads (a fixed count, or sized for each rate).
    let key = |c: &CapacityPoint| (c.api.clone(), c.threads_text());
    let mut who: Vec<(String, Option<String>)> = Vec::new();
    for c in files.iter().flat_map(|f| &f.capacities) {
        if !who.contains(&key(c)) {
            who.push(key(c));
        }
    }
    let series = who
        .iter()
        .enumerate()
        .map(|(i, (api, threads))| {
            let mut pts: Vec<(f64, f64, String)> = files
                .iter()
                .filter_map(|f| {
                    let c = f
                        .capacities
                        .iter()
                        .find(|c| key(c) == (api.clone(), threads.clone()))?;
                    let stopped = match c.stopped_by {
                        StoppedBy::None => String::new(),
                        by => by.as_str().to_owned(),
                    };
                    Some((
                        (f.critical_path_ms as f64).log10(),
                        c.capacity_rps.unwrap_or(0.0),
                        stopped,
                    ))
                })
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let name = match threads {
                Some(t) => format!("{api}, {t}"),
                None => api.clone(),
            };
            let points = pts.iter().map(|p| (p.0, p.1)).collect();
            let mut s = Series::new(name, points, PALETTE[i % PALETTE.len()], Dash::ALL[i % 4]);
            s.dots = true;
            s.labels = pts.into_iter().map(|p| p.2).collect();
            s
        })
        .collect();
    let chart = LineChart {
        x_format: TickFormat::PowersOfTenMillis,
        y_format: TickFormat::PerSecond,
        ..LineChart::log_x(
            "Capacity against the dependencies' critical path",
            "critical path of the dependencies (log spacing)",
            "capacity within the objective",
            series,
        )
    };
    ScenarioChart {
        title: chart.title.clone(),
        caption: "A line per API, each dot one capacity search (its objective in the table: the \
                  derived one, or the one given with --slo), labelled with what stopped the API \
                  there; 0 where no rate tried met it; a harness-bound search is a lower bound."
            .to_owned(),
        svg: chart.to_svg(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(api: &str, threads: Option<u32>, rate: f64, orders: f64, rss: f64) -> StepPoint {
        StepPoint {
            api: api.to_owned(),
            blocking_threads: threads,
            allocator: None,
            rate_rps: rate,
            met_objective: true,
            harness_bound: None,
            orders_rps: orders,
            ok_share_pct: 100.0,
            p99_ms: 2300.0,
            peak_rss_mib: Some(rss),
            peak_threads: threads.map(u64::from),
            rss_per_thread_kib: None,
            cpu_s_per_1000: None,
            money_balanced: Some(true),
            died: None,
            cause: None,
            cpu_by_role: None,
            plateau_orders: None,
            peak_in_flight: None,
            rss_per_in_flight_kib: None,
            refused: None,
            refused_per_second: Vec::new(),
            in_flight_rise_pct: None,
            thread_hold_ms: None,
            cgroup_peak_mib: None,
            probe_ms: None,
        }
    }

    fn sweep() -> CapacityFile {
        CapacityFile {
            superseded: None,
            scenario: lab_results::ScenarioName::Threads,
            objective: String::new(),
            critical_path_ms: 2000,
            limits: None,
            capacities: Vec::new(),
            sweep: vec![
                step("blocking-api", Some(1000), 300.0, 290.0, 130.0),
                step("blocking-api", Some(100), 300.0, 49.0, 40.0),
                step("reactive-api", None, 300.0, 296.1, 90.0),
            ],
            cell_settings: Default::default(),
        }
    }

    #[test]
    fn the_thread_chart_draws_the_bound_each_rate_and_reactive_api_beside_it() {
        let file = sweep();
        let chart = threads_orders(&file);
        for text in [
            "blocking-api at 300/s",
            "Little&#39;s-law bound at 300/s",
            "reactive-api at 300/s: 296.1",
        ] {
            assert!(
                chart.svg.contains(text) || chart.svg.contains(&text.replace("&#39;", "'")),
                "{text} missing"
            );
        }
        // The bound: 100 threads ÷ 2 s = 50/s; 1,000 threads ÷ 2 s = 500/s, capped at the rate.
        let pts = line(&file.sweep, 300.0, |s| Some(s.orders_rps));
        assert_eq!(pts, vec![(2.0, 49.0), (3.0, 290.0)]);
        assert!(!threads_rss(&file).svg.contains("reactive-api"));
    }

    /// A search of `api` at `path_ms` whose steps ran with `threads` (one count per step).
    fn search(api: &str, path_ms: u64, threads: &[u32], rps: f64, by: StoppedBy) -> CapacityFile {
        let steps = if threads.is_empty() {
            vec![step(api, None, rps, rps, 50.0)]
        } else {
            threads
                .iter()
                .map(|&t| step(api, Some(t), rps, rps, 50.0))
                .collect()
        };
        CapacityFile {
            superseded: None,
            scenario: lab_results::ScenarioName::Capacity,
            objective: String::new(),
            critical_path_ms: path_ms,
            limits: None,
            capacities: vec![CapacityPoint {
                api: api.to_owned(),
                blocking_threads: threads.first().copied(),
                allocator: None,
                capacity_rps: Some(rps),
                resolution_rps: 5.0,
                first_failing_rps: None,
                lowest_missed_rps: None,
                resolution: None,
                stopped_by: by,
                evidence: None,
                steps,
                superseded: None,
            }],
            sweep: Vec::new(),
            cell_settings: Default::default(),
        }
    }

    #[test]
    fn the_crossover_draws_a_line_per_way_of_setting_threads_each_dot_named_by_its_stop() {
        let files = [
            search("blocking-api", 22_000, &[300, 600], 30.0, StoppedBy::Memory),
            search("blocking-api", 2_200, &[100, 264], 84.0, StoppedBy::Cpu),
            search("blocking-api", 2_200, &[200, 200], 84.0, StoppedBy::Cpu),
            search("reactive-api", 2_200, &[], 191.0, StoppedBy::Cpu),
        ];
        let chart = crossover(&files);
        // Sized per rate at two critical paths: one line, not one per first thread count.
        assert!(chart.svg.contains("blocking-api, threads sized per rate"));
        assert!(chart.svg.contains("blocking-api, 200 threads"));
        assert!(!chart.svg.contains("264 threads"));
        assert_eq!(chart.svg.matches(r#"class="point-label""#).count(), 4);
        assert!(chart.svg.contains(">memory</text>"));
        assert_eq!(chart.svg.matches(">cpu</text>").count(), 3);
    }
}
