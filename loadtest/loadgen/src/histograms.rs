//! A [`Recorder`] to and from the results file's [`HistogramSet`]: what lets `loadtest merge` add
//! shards exactly instead of averaging their percentiles.
//!
//! Each histogram is HdrHistogram's V2 format, deflated (hdrhistogram's `V2DeflateSerializer`),
//! in base64 — the interchange format every HdrHistogram library reads, so a results file's
//! histograms can be re-analysed outside this workspace. A set keeps, per second, per phase and
//! for the run, the counts, the latency histogram of each outcome kind (they add up to the
//! latency of every request) and the lateness histogram.

use anyhow::{Context, Result, bail};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};

use crate::recorder::{Acc, Recorder};
use lab_results::{CountsAndHistograms, HISTOGRAM_ENCODING, HistogramSet};

/// Every histogram of `rec`, encoded.
pub fn encode(rec: &Recorder) -> HistogramSet {
    let mut ser = V2DeflateSerializer::new();
    let mut one = |acc: &Acc| CountsAndHistograms {
        offered: acc.offered,
        sent: acc.sent,
        not_sent: acc.not_sent,
        completed: acc.completed,
        slow: acc.slow,
        outcomes: acc.outcomes.clone(),
        latency_us: acc
            .by_outcome
            .iter()
            .map(|(k, h)| (k.clone(), encode_one(&mut ser, h)))
            .collect(),
        lateness_us: encode_one(&mut ser, &acc.lateness),
        answered_after: acc.answered_after.clone(),
    };
    HistogramSet {
        encoding: HISTOGRAM_ENCODING.to_owned(),
        total: one(&rec.total),
        phases: rec.phases.iter().map(&mut one).collect(),
        seconds: rec.seconds.iter().map(&mut one).collect(),
    }
}

/// The recorder a [`HistogramSet`] was encoded from (its per-key notes excepted: those stay with
/// the generator that sent the keys).
pub fn decode(set: &HistogramSet) -> Result<Recorder> {
    if set.encoding != HISTOGRAM_ENCODING {
        bail!(
            "histograms encoded as {:?}; this loadtest reads {HISTOGRAM_ENCODING:?}",
            set.encoding
        );
    }
    let mut de = Deserializer::new();
    let mut one = |c: &CountsAndHistograms, sigfig: u8| -> Result<Acc> {
        let mut acc = Acc::new(sigfig);
        acc.offered = c.offered;
        acc.sent = c.sent;
        acc.not_sent = c.not_sent;
        acc.completed = c.completed;
        acc.slow = c.slow;
        acc.outcomes = c.outcomes.clone();
        acc.answered_after = c.answered_after.clone();
        for (kind, text) in &c.latency_us {
            let h = decode_one(&mut de, text).with_context(|| format!("latency of {kind}"))?;
            acc.latency.add(&h).context("adding a decoded histogram")?;
            acc.by_outcome.insert(kind.clone(), h);
        }
        let lateness = decode_one(&mut de, &c.lateness_us).context("lateness")?;
        acc.lateness
            .add(&lateness)
            .context("adding a decoded histogram")?;
        Ok(acc)
    };
    let mut rec = Recorder::new(set.phases.len());
    rec.total = one(&set.total, 3).context("the run's histograms")?;
    for (i, p) in set.phases.iter().enumerate() {
        rec.phases[i] = one(p, 3).with_context(|| format!("phase {i}'s histograms"))?;
    }
    rec.seconds = set
        .seconds
        .iter()
        .enumerate()
        .map(|(t, s)| one(s, 2).with_context(|| format!("second {t}'s histograms")))
        .collect::<Result<_>>()?;
    Ok(rec)
}

fn encode_one(ser: &mut V2DeflateSerializer, h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    ser.serialize(h, &mut bytes)
        .expect("a histogram serialises into memory");
    STANDARD.encode(bytes)
}

fn decode_one(de: &mut Deserializer, text: &str) -> Result<Histogram<u64>> {
    let bytes = STANDARD.decode(text).context("not base64")?;
    de.deserialize(&mut bytes.as_slice())
        .map_err(|e| anyhow::anyhow!("not an HdrHistogram V2 (deflate) histogram: {e:?}"))
}

#[cfg(test)]
#[path = "histograms_tests.rs"]
mod tests;
