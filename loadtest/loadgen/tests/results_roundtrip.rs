//! Results files: assembled from recorded data, saved, loaded back identical; a newer schema is
//! refused; the harness-bound rules fire on the harness, not on a busy API.

use std::time::Duration;

use lab_results::*;
use loadgen::assemble::{RunMeta, assemble, harness_bound};
use loadgen::driver::DriverOutput;
use loadgen::profile::Profile;
use loadgen::recorder::Recorder;
use loadgen::sampler::SampleRow;

fn meta(profile: &Profile) -> RunMeta {
    let mut api_settings = std::collections::BTreeMap::new();
    api_settings.insert("BLOCKING_THREADS".to_owned(), "200".to_owned());
    RunMeta {
        api: "blocking-api".into(),
        label: "blocking".into(),
        target_url: "http://127.0.0.1:1".into(),
        run_id: "t".into(),
        repeat_index: 0,
        repeats: 1,
        config: RunConfig {
            profile: profile.info(),
            mock_latency_ms: Some(MockLatencies {
                seller: 200,
                risk: 1000,
                payment: 1000,
            }),
            injection: None,
            faults: None,
            api_settings,
            limits: Limits {
                limits_enforced: true,
                cpu_cores: Some(1.0),
                cpu_period_us: None,
                cpu_burst_us: None,
                memory_bytes: Some(1 << 30),
                mechanism: "cgroup v2".into(),
                note: String::new(),
                pinning: None,
            },
            tx_scope: "short".into(),
            request_timeout_ms: 60_000,
            max_in_flight: 20_000,
            duplicate_ratio: 0.0,
            sellers: 16,
            warmup_s: 0.0,
            shedding: Some(Shedding::On),
        },
        environment: Environment {
            cores: 2,
            ..Default::default()
        },
        goose_reports: vec![],
        timeline: vec![],
        keep_histograms: true,
    }
}

fn recorded(profile: &Profile) -> DriverOutput {
    let mut rec = Recorder::new(profile.phases.len());
    for a in profile.arrivals() {
        rec.offered(a.at_s, a.phase);
        rec.sent(a.at_s, Duration::from_millis(1), a.phase);
        rec.completed(
            a.at_s,
            a.at_s + 2.2,
            Duration::from_millis(2200),
            a.phase,
            OUTCOME_CREATED,
        );
    }
    DriverOutput {
        recorder: rec,
        phases_run: profile.phases.len(),
        started_at: chrono::Utc::now(),
        elapsed_s: Some(profile.duration_s() + 2.2),
        last_answer_s: Some(profile.duration_s() + 2.0),
        retries: None,
        start: None,
        tally: Default::default(),
        shard: Default::default(),
        seed: 0,
    }
}

#[test]
fn assembled_results_round_trip() {
    let profile = Profile::parse("ramp-100", 0.1).unwrap();
    let out = recorded(&profile);
    let rows: Vec<SampleRow> = (0..20)
        .map(|_| SampleRow {
            api: Some(ProcessSample {
                cpu_percent: 50.0,
                cpu_wait_percent: None,
                rss_bytes: 1 << 24,
                threads: 210,
                fds: 300,
            }),
            api_cpu_seconds: Some(0.5),
            ..Default::default()
        })
        .collect();
    let r = assemble(meta(&profile), &profile, &out, &rows);
    assert_eq!(r.schema_version, SCHEMA_VERSION);
    let histograms = r.histograms.as_ref().expect("kept");
    let decoded = loadgen::histograms::decode(histograms).unwrap();
    assert_eq!(decoded.total.latency, out.recorder.total.latency);
    assert_eq!(decoded.seconds.len(), out.recorder.seconds.len());
    assert_eq!(r.summary.offered, profile.planned_requests());
    assert_eq!(r.summary.ok, r.summary.offered);
    assert!(
        (r.summary.latency_ms.p99 - 2200.0).abs() < 5.0,
        "{:?}",
        r.summary.latency_ms
    );
    let plateau = r.plateau.as_ref().unwrap();
    assert_eq!(plateau.offered, 300);
    assert_eq!(plateau.offered_rps, 100.0);
    assert_eq!(r.summary.peak_threads, Some(210));
    let ll = r.littles_law.as_ref().unwrap();
    assert!((ll.bound_rps - 200.0 / 2.2).abs() < 1e-9);
    assert_eq!(r.harness_bound, None);
    assert_eq!(
        r.seconds.iter().map(|s| s.completed).sum::<u64>(),
        r.summary.completed
    );

    let path = std::env::temp_dir().join(format!("loadtest-roundtrip-{}.json", std::process::id()));
    r.save(&path).unwrap();
    assert_eq!(RunResults::load(&path).unwrap(), r);

    let mut newer: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    // The timeline is written as `events`, the name every committed results file has.
    assert!(!r.timeline.is_empty());
    assert_eq!(newer["events"][0]["label"], r.timeline[0].label.as_str());
    assert_eq!(
        newer["events"].as_array().map(Vec::len),
        Some(r.timeline.len())
    );
    assert!(newer.get("timeline").is_none());
    newer["schema_version"] = (SCHEMA_VERSION + 1).into();
    std::fs::write(&path, newer.to_string()).unwrap();
    assert!(
        RunResults::load(&path)
            .unwrap_err()
            .to_string()
            .contains("schema_version")
    );
    std::fs::remove_file(&path).ok();
}

#[test]
fn shed_requests_are_their_own_kind_with_their_own_latency_and_round_trip() {
    let profile = Profile::parse("ramp-100", 0.1).unwrap();
    let mut out = recorded(&profile);
    // A second wave, refused at admission within 5 ms; and one client that gave up.
    for a in profile.arrivals() {
        out.recorder.offered(a.at_s, a.phase);
        out.recorder.sent(a.at_s, Duration::from_millis(1), a.phase);
        out.recorder.completed(
            a.at_s,
            a.at_s + 0.005,
            Duration::from_millis(5),
            a.phase,
            OUTCOME_OVERLOADED,
        );
    }
    let mut r = assemble(meta(&profile), &profile, &out, &[]);
    let s = &r.summary;
    assert_eq!(s.errors_by_kind.get(OUTCOME_OVERLOADED), Some(&s.ok));
    assert_eq!(s.errors_by_kind.get(OUTCOME_TIMEOUT), None);
    let shed = s
        .overloaded_latency_ms
        .expect("overloaded latency recorded");
    assert!((shed.p99 - 5.0).abs() < 0.1, "{shed:?}");
    let ok = s.ok_latency_ms.expect("201 latency recorded");
    assert!(
        (ok.p99 - 2200.0).abs() < 5.0,
        "refusals stay out of the 201s: {ok:?}"
    );
    r.after_give_up = Some(AfterGiveUp {
        gave_up: 3,
        orders: Some(1),
        detail: "counted".into(),
    });
    let path = std::env::temp_dir().join(format!("loadtest-shed-{}.json", std::process::id()));
    r.save(&path).unwrap();
    let back = RunResults::load(&path).unwrap();
    std::fs::remove_file(&path).ok();
    // Field by field: a per-second mean may lose its last digit in JSON (serde_json's float parsing).
    assert_eq!(back.config, r.config);
    assert_eq!(back.config.shedding, Some(Shedding::On));
    assert_eq!(back.summary, r.summary);
    assert_eq!(back.after_give_up, r.after_give_up);
}

#[test]
fn a_slowdown_over_the_plateau_moves_the_littles_law_bound() {
    let profile = Profile::parse("ramp-100", 0.1).unwrap();
    let out = recorded(&profile);
    let mut meta = meta(&profile);
    // ramp-100 × 0.1: the plateau runs from 3 s to 6 s; payment at 5 s covers all of it.
    meta.config.injection =
        Some(lab_results::inject::Injection::parse("pay=5000@30+30", 0.1).unwrap());
    let r = assemble(meta, &profile, &out, &[]);
    let ll = r.littles_law.as_ref().unwrap();
    assert_eq!(ll.critical_path_ms, 6200.0);
    assert!((ll.bound_rps - 200.0 / 6.2).abs() < 1e-9);
    assert!(ll.note.as_deref().unwrap().contains("whole plateau"));
    let path = std::env::temp_dir().join(format!("loadtest-inject-{}.json", std::process::id()));
    r.save(&path).unwrap();
    let back = RunResults::load(&path).unwrap();
    std::fs::remove_file(&path).ok();
    assert_eq!(back.config.injection, r.config.injection);
    assert_eq!(back, r);
}

#[test]
fn harness_bound_blames_the_harness_not_a_busy_api() {
    let limits = Limits {
        limits_enforced: true,
        cpu_cores: Some(1.0),
        cpu_period_us: None,
        cpu_burst_us: None,
        memory_bytes: None,
        mechanism: String::new(),
        note: String::new(),
        pinning: None,
    };
    let second = |t: u32, api_cpu: f64, mock: f64, late: f64| SecondSample {
        t,
        lateness_ms: Some(Lateness {
            p99: late,
            max: late,
        }),
        api_process: Some(ProcessSample {
            cpu_percent: api_cpu,
            cpu_wait_percent: None,
            ..Default::default()
        }),
        harness: HarnessSample {
            mock_deps_cpu_percent: Some(mock),
            ..Default::default()
        },
        ..Default::default()
    };
    let calm: Vec<_> = (0..10).map(|t| second(t, 50.0, 10.0, 1.0)).collect();
    assert_eq!(harness_bound(&calm, &limits, 4), None);
    // mock-deps pegged while the API idles: the mocks are the limit.
    let mock_bound: Vec<_> = (0..10).map(|t| second(t, 30.0, 98.0, 1.0)).collect();
    assert!(
        harness_bound(&mock_bound, &limits, 4)
            .unwrap()
            .contains("mock-deps")
    );
    // mock-deps pegged while the API is at its 1-CPU quota: the API is the limit.
    let api_bound: Vec<_> = (0..10).map(|t| second(t, 99.0, 98.0, 1.0)).collect();
    assert_eq!(harness_bound(&api_bound, &limits, 4), None);
    // A late generator is always flagged.
    let late: Vec<_> = (0..10).map(|t| second(t, 99.0, 10.0, 120.0)).collect();
    let why = harness_bound(&late, &limits, 4).unwrap();
    assert!(why.contains("lateness"), "{why}");
    assert!(
        !why.contains("outside"),
        "no machine reading, nothing said: {why}"
    );
    // … and when the machine was busier than the lab's processes in those seconds, by how much.
    let busy_elsewhere = |outside: f64| -> Vec<SecondSample> {
        (0..10)
            .map(|t| {
                let mut s = second(t, 12.0, 5.0, if t >= 6 { 90.0 } else { 2.0 });
                s.harness.generator_cpu_percent = Some(7.0);
                s.harness.postgres_cpu_percent = Some(33.0);
                s.harness.machine_cpu_percent = Some(57.0 + if t >= 6 { outside } else { 0.0 });
                s
            })
            .collect()
    };
    let why = harness_bound(&busy_elsewhere(52.0), &limits, 2).unwrap();
    assert!(
        why.contains("in those seconds 52 % of a core ran outside the lab's processes"),
        "{why}"
    );
    assert!(!why.contains("steal"), "no steal reading, none said: {why}");
    let mut stolen = busy_elsewhere(52.0);
    for s in &mut stolen {
        s.harness.machine_steal_percent = Some(if s.t >= 6 { 40.0 } else { 0.0 });
    }
    let why = harness_bound(&stolen, &limits, 2).unwrap();
    assert!(
        why.contains("52 % of a core ran outside the lab's processes, 40 % of it the host's"),
        "{why}"
    );
    let why = harness_bound(&busy_elsewhere(8.0), &limits, 2).unwrap();
    assert!(
        !why.contains("outside"),
        "a few % is the kernel's own: {why}"
    );
}

#[test]
fn harness_bound_blames_the_machine_when_the_api_waits_for_a_cpu() {
    let limits = Limits {
        limits_enforced: true,
        cpu_cores: Some(1.0),
        cpu_period_us: None,
        cpu_burst_us: None,
        memory_bytes: None,
        mechanism: String::new(),
        note: String::new(),
        pinning: None,
    };
    let second = |t: u32, api_cpu: f64, wait: f64| SecondSample {
        t,
        api_process: Some(ProcessSample {
            cpu_percent: api_cpu,
            cpu_wait_percent: Some(wait),
            ..Default::default()
        }),
        ..Default::default()
    };
    // Runnable but kept off the cores 44 % of the time while using 40 % of its quota.
    let starved: Vec<_> = (0..10).map(|t| second(t, 40.0, 44.0)).collect();
    let why = harness_bound(&starved, &limits, 2).unwrap();
    assert!(why.contains("waiting for a CPU ≥ 20 %"), "{why}");
    assert!(why.contains("10 s (first at t=0 s)"), "{why}");
    // The same wait at its own quota is the API's limit, and a short wait is nobody's.
    let at_quota: Vec<_> = (0..10).map(|t| second(t, 99.0, 44.0)).collect();
    assert_eq!(harness_bound(&at_quota, &limits, 2), None);
    let brief: Vec<_> = (0..10).map(|t| second(t, 40.0, 5.0)).collect();
    assert_eq!(harness_bound(&brief, &limits, 2), None);
    // Pinned alone to its CPU, the API waits for its own threads, not for the harness's.
    let pinned = Limits {
        pinning: Some(Pinning {
            api_cpus: vec![1],
            harness_cpus: vec![0],
        }),
        ..limits.clone()
    };
    assert_eq!(harness_bound(&starved, &pinned, 2), None);
}
