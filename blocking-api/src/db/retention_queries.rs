//! The retention sweep's statement (`retention.rs`), as a method of [`Db`]: a connection of its
//! own, in autocommit. The twin of reactive-api's `db/retention_queries.rs`.

use diesel::sql_types::{BigInt, Double};
use diesel::{QueryableByName, RunQueryDsl, sql_query};
use order_core::domain::error::ApiError;
use order_core::domain::retention::Swept;

use super::Db;
use super::error::db_error;
use super::prepared::Prepare;

impl Db {
    /// Sweeps up to `batch` rows of `kind` older than `age_seconds`; returns how many it dropped.
    pub fn sweep(&self, kind: Swept, age_seconds: f64, batch: i64) -> Result<i64, ApiError> {
        #[derive(QueryableByName)]
        struct Count {
            #[diesel(sql_type = BigInt)]
            swept: i64,
        }
        let mut c = self.acquire("retention")?;
        let row: Count = c
            .conn()
            .run(|pg| {
                sql_query(kind.statement())
                    .bind::<Double, _>(age_seconds)
                    .bind::<BigInt, _>(batch)
                    .prepared()
                    .get_result(pg)
            })
            .map_err(db_error)?;
        Ok(row.swept)
    }
}
