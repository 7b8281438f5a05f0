//! The retention sweep (what it keeps and drops: `order_core::domain::retention`), run on the recovery
//! thread after each recovery pass, as plain blocking calls. Step for step the same as
//! reactive-api's `retention.rs`.

use order_core::domain::retention::{self, SWEEP_BATCH, Swept};

use crate::state::AppState;

/// Sweeps every kind whose retention is set, a bounded number of batches each (a failure ends
/// that kind's sweep until the next pass). Returns the rows dropped.
pub fn sweep(app: &AppState) -> i64 {
    let mut total = 0;
    for kind in Swept::ALL {
        let Some(age) = kind.retention(&app.settings) else {
            continue;
        };
        let mut batches = 0;
        loop {
            let swept = match app.db.sweep(kind, age.as_secs_f64(), SWEEP_BATCH) {
                Ok(swept) => swept,
                Err(e) => {
                    tracing::warn!(kind = kind.as_str(), error = %e, "retention sweep failed; the next pass tries again");
                    break;
                }
            };
            batches += 1;
            total += swept;
            app.metrics
                .retention_swept
                .with_label_values(&[kind.as_str()])
                .inc_by(swept.unsigned_abs());
            if !retention::more(swept, batches) {
                break;
            }
        }
    }
    total
}
