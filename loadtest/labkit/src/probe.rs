//! A fixed amount of work, timed on the API's CPU: how fast the machine was beside a step's
//! figures. Two searches of one cell minutes apart found CPU per order a quarter apart at the
//! same rate (2026-12-07); steal time, which the sampler records, was under 1 %. A probe that
//! does the same work every time tells a machine that got slower (a neighbour on the host, its
//! caches, its clock) from an API that got dearer.

use std::time::{Duration, Instant};

use anyhow::Context;

/// How many times the work runs; the fastest is the reading (anything else on the CPU only
/// ever makes a run slower).
pub const RUNS: usize = 5;
/// The work's table: 2 MiB, beyond a core's L2 on this VM, so that the probe also feels what
/// the host's other guests do to the shared cache.
const TABLE_WORDS: usize = 256 * 1024;
/// Lookups per run: about 20 ms on this VM's cores.
const LOOKUPS: u64 = 4_000_000;

/// The fastest of [`RUNS`] runs of the fixed work, on a thread pinned to `cpus`, in ms.
pub fn fixed_work_ms(cpus: &[usize]) -> anyhow::Result<f64> {
    let cpus = cpus.to_vec();
    std::thread::spawn(move || -> anyhow::Result<f64> {
        crate::affinity::pin_this_thread(&cpus).context("pinning the probe")?;
        let mut table = vec![0u64; TABLE_WORDS];
        let fastest = (0..RUNS)
            .map(|_| time(|| work(&mut table)))
            .min()
            .context("no run")?;
        Ok(fastest.as_secs_f64() * 1000.0)
    })
    .join()
    .map_err(|_| anyhow::anyhow!("the probe's thread panicked"))?
}

fn time(f: impl FnOnce() -> u64) -> Duration {
    let t0 = Instant::now();
    std::hint::black_box(f());
    t0.elapsed()
}

/// The same lookups and writes every time: a xorshift walk over `table`.
fn work(table: &mut [u64]) -> u64 {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut sum = 0u64;
    for _ in 0..LOOKUPS {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let i = (x as usize) % table.len();
        table[i] = table[i].wrapping_add(x);
        sum = sum.wrapping_add(table[i]);
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_work_is_the_same_every_time() {
        let a = work(&mut vec![0; TABLE_WORDS]);
        let b = work(&mut vec![0; TABLE_WORDS]);
        assert_eq!(a, b);
        assert_ne!(a, 0);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_probe_runs_on_the_cpu_it_is_given() {
        let cpus = crate::affinity::allowed_cpus().unwrap();
        let last = *cpus.last().unwrap();
        let on = std::thread::spawn(move || {
            crate::affinity::pin_this_thread(&[last]).unwrap();
            nix::sched::sched_getcpu().unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(on, last);
        assert!(fixed_work_ms(&[last]).unwrap() > 0.0);
        assert!(
            fixed_work_ms(&[usize::MAX / 2]).is_err(),
            "a CPU that is not there"
        );
    }
}
