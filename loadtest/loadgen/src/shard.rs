//! Splitting one arrival schedule over N generators (`--shard I/N`) so that the N shards together
//! send exactly what one generator would.
//!
//! Every shard builds the *whole* schedule from the profile and keeps arrival `j` when
//! `j mod N = I`; everything random about an arrival (its body, key, seller, whether it re-sends an
//! earlier order, its retry jitter) is drawn from a generator seeded by `(seed, j)` alone
//! ([`arrival_seed`]), never from a stream shared with the arrivals before it. So the union of the
//! N shards' arrivals is the N = 1 schedule — the same instants, bodies and idempotency keys — for
//! any N, and two shards never send the same fresh key.
//!
//! Round-robin rather than contiguous blocks: each shard then offers 1/N of the rate at every
//! instant (a ramp stays a ramp on every shard), so no shard carries the peak alone.
//!
//! [`Tally`] is what lets `loadtest merge` prove the shards add up: each shard counts the arrivals
//! it offered and adds up a fingerprint of their indices; the fingerprints are order-free sums, so
//! the shards' sums add up to the whole schedule's only if together they offered every arrival
//! once (a missing or doubled arrival changes the sum; two errors cancelling out would need two
//! 64-bit mixes to collide).

use anyhow::{Result, bail};

use crate::profile::{Arrival, Profile};

/// This generator's share of the schedule: arrivals `j` with `j mod count = index`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Default for Shard {
    fn default() -> Self {
        Shard::WHOLE
    }
}

impl Shard {
    /// The whole schedule (one generator).
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Parses `I/N` (0 ≤ I < N).
    pub fn parse(text: &str) -> Result<Shard> {
        let Some((i, n)) = text.split_once('/') else {
            bail!("--shard {text:?}: expected I/N, e.g. 0/2");
        };
        let (Ok(index), Ok(count)) = (i.trim().parse::<u32>(), n.trim().parse::<u32>()) else {
            bail!("--shard {text:?}: I and N must be whole numbers");
        };
        if count == 0 || index >= count {
            bail!("--shard {text:?}: needs 0 ≤ I < N");
        }
        Ok(Shard { index, count })
    }

    /// `true` for the whole schedule.
    pub fn is_whole(self) -> bool {
        self.count == 1
    }

    /// Whether arrival `j` is this shard's.
    pub fn keeps(self, j: u64) -> bool {
        j % u64::from(self.count) == u64::from(self.index)
    }

    /// This shard's arrivals, in time order, with their indices in the whole schedule.
    pub fn arrivals(self, profile: &Profile) -> impl Iterator<Item = Arrival> + '_ {
        profile.arrivals().filter(move |a| self.keeps(a.index))
    }

    /// What this shard must offer of `profile`, as [`Tally`] computes it from the schedule.
    pub fn expected(self, profile: &Profile) -> Tally {
        let mut t = Tally::default();
        for a in self.arrivals(profile) {
            t.add(a.index);
        }
        t
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// The arrivals a shard offered: how many, and the wrapping sum of their indices' fingerprints.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub arrivals: u64,
    /// Σ `mix(j)` over the offered arrivals, wrapping.
    pub fingerprint: u64,
}

impl Tally {
    pub fn add(&mut self, j: u64) {
        self.arrivals += 1;
        self.fingerprint = self.fingerprint.wrapping_add(mix(j));
    }

    /// Two tallies together.
    pub fn plus(self, other: Tally) -> Tally {
        Tally {
            arrivals: self.arrivals + other.arrivals,
            fingerprint: self.fingerprint.wrapping_add(other.fingerprint),
        }
    }
}

/// The seed of arrival `j`'s own random generator; `stream` separates independent draws (the
/// body, the retry jitter) of the same arrival.
pub fn arrival_seed(seed: u64, j: u64, stream: u64) -> u64 {
    mix(seed ^ mix(j ^ mix(stream)))
}

/// SplitMix64's finaliser: a bijection on u64 whose outputs look independent for neighbouring
/// inputs (Steele, Lea & Flood, 2014).
pub fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
#[path = "shard_tests.rs"]
mod tests;
