//! The retention sweep's statement (`retention.rs`), as a method of [`Db`]: a connection of its
//! own, in autocommit. The twin of blocking-api's `db/retention_queries.rs`.

use order_core::domain::error::ApiError;
use order_core::domain::retention::Swept;
use sqlx::Row;

use super::Db;
use super::error::db_error;

impl Db {
    /// Sweeps up to `batch` rows of `kind` older than `age_seconds`; returns how many it dropped.
    pub async fn sweep(&self, kind: Swept, age_seconds: f64, batch: i64) -> Result<i64, ApiError> {
        let mut c = self.acquire("retention").await?;
        let row = c
            .conn()
            .run(|pg| {
                sqlx::query(kind.statement())
                    .bind(age_seconds)
                    .bind(batch)
                    .fetch_one(pg)
            })
            .await
            .map_err(db_error)?;
        row.try_get::<i64, _>(0).map_err(db_error)
    }
}
