//! The APIs' overload settings (admission control and shedding), as the lab sets and records them.
//!
//! The lab states the timeouts it runs with (as it does the pool and dependency timeouts), so an
//! API whose default changes does not silently change the experiment (`MAX_LOOP_LAG_MS` too:
//! shedding off turns it off). `MAX_IN_FLIGHT` is the one
//! it leaves to the API with shedding on: its default belongs to each execution model (blocking-api:
//! its thread count; reactive-api: 4096). The value in force is read back from the API's
//! `orders_admission_limit` gauge once it runs, so the results record what was applied.

use crate::api_env::ApiSettings;
use crate::lab_args::LabArgs;
use lab_results::Shedding;

/// The overload settings every API the lab starts gets.
pub(super) fn settings(args: &LabArgs, s: &mut ApiSettings) {
    s.queue_timeout_ms = Some(args.queue_timeout_ms);
    s.request_deadline_ms = Some(request_deadline_ms(args));
    s.db_statement_timeout_ms = Some(args.db_statement_timeout_ms);
    (s.max_loop_lag_ms, s.max_in_flight) = match args.shedding {
        Shedding::On => (args.max_loop_lag_ms, None),
        Shedding::Off => (0, Some(0)),
    };
}

/// The deadline the APIs get: the flag's, else 30 s with shedding on and an hour (no deadline
/// within a lab run: work queues and finishes after its client gave up, as in the original
/// experiment) with shedding off.
pub(super) fn request_deadline_ms(args: &LabArgs) -> u64 {
    args.request_deadline_ms.unwrap_or(match args.shedding {
        Shedding::On => 30_000,
        Shedding::Off => 3_600_000,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use lab_results::ApiKind;
    use std::collections::BTreeMap;

    fn args(extra: &[&str]) -> LabArgs {
        LabArgs::from_flags(extra).unwrap()
    }

    /// The environment of a lab API started with these flags.
    fn env(extra: &[&str]) -> BTreeMap<String, String> {
        super::super::api_settings(
            &args(extra),
            ApiKind::Reactive,
            "http://127.0.0.1:9191",
            200,
        )
        .to_env()
    }

    #[test]
    fn shedding_off_is_an_unlimited_admission_and_on_leaves_the_default() {
        let on = env(&[]);
        assert_eq!(on.get("MAX_IN_FLIGHT"), None);
        assert_eq!(on["QUEUE_TIMEOUT_MS"], "100");
        assert_eq!(on["REQUEST_DEADLINE_MS"], "30000");
        assert_eq!(on["DB_STATEMENT_TIMEOUT_MS"], "5000");
        assert_eq!(on["MAX_LOOP_LAG_MS"], "5");
        let off = env(&["--shedding", "off", "--queue-timeout-ms", "50"]);
        assert_eq!(off["MAX_IN_FLIGHT"], "0");
        assert_eq!(off["QUEUE_TIMEOUT_MS"], "50");
        assert_eq!(off["MAX_LOOP_LAG_MS"], "0", "no refusal on loop lag either");
        assert_eq!(
            off["REQUEST_DEADLINE_MS"], "3600000",
            "no deadline with shedding off"
        );
        let explicit = env(&["--shedding", "off", "--request-deadline-ms", "70000"]);
        assert_eq!(explicit["REQUEST_DEADLINE_MS"], "70000");
    }
}
