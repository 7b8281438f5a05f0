//! The recovery loop's statements (`recovery.rs`), as methods of [`Db`]: each takes a connection
//! of its own, in autocommit. The twin of blocking-api's `db/recovery_queries.rs`.

use order_core::domain::error::ApiError;
use order_core::domain::recovery::ClaimedKey;
use order_core::domain::sql;
use sqlx::Row;

use super::Db;
use super::error::db_error;

impl Db {
    /// Recovery: claims up to `batch` keys left in `CHARGING` whose lease expired.
    pub async fn claim_charging(
        &self,
        lease_seconds: f64,
        batch: i64,
    ) -> Result<Vec<ClaimedKey>, ApiError> {
        let mut c = self.acquire("recovery").await?;
        let rows = c
            .conn()
            .run(|pg| {
                sqlx::query(sql::CLAIM_CHARGING)
                    .bind(lease_seconds)
                    .bind(batch)
                    .fetch_all(pg)
            })
            .await
            .map_err(db_error)?;
        rows.iter()
            .map(|r| {
                Ok(ClaimedKey {
                    seller_id: r.try_get(0)?,
                    reference_id: r.try_get(1)?,
                    attempt: r.try_get(2)?,
                    gateway_key: r.try_get(3)?,
                    amount: r.try_get(4)?,
                    pending_order: r.try_get(5)?,
                    deferrals: r.try_get(6)?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(db_error)
    }

    /// Recovery: puts a claimed key off for `backoff_seconds` (`sql::DEFER_KEY`).
    pub async fn defer(&self, key: &ClaimedKey, backoff_seconds: f64) -> Result<(), ApiError> {
        let mut c = self.acquire("recovery").await?;
        c.conn()
            .run(|pg| {
                sqlx::query(sql::DEFER_KEY)
                    .bind(&key.seller_id)
                    .bind(&key.reference_id)
                    .bind(key.attempt)
                    .bind(backoff_seconds)
                    .execute(pg)
            })
            .await
            .map_err(db_error)?;
        Ok(())
    }

    /// Recovery: puts off a claimed key whose pending order this release cannot read, marking it
    /// (`sql::DEFER_UNREADABLE`); `true` the first time it is so marked.
    pub async fn defer_unreadable(
        &self,
        key: &ClaimedKey,
        backoff_seconds: f64,
    ) -> Result<bool, ApiError> {
        let mut c = self.acquire("recovery").await?;
        let row = c
            .conn()
            .run(|pg| {
                sqlx::query(sql::DEFER_UNREADABLE)
                    .bind(&key.seller_id)
                    .bind(&key.reference_id)
                    .bind(key.attempt)
                    .bind(backoff_seconds)
                    .fetch_optional(pg)
            })
            .await
            .map_err(db_error)?;
        row.map_or(Ok(false), |r| r.try_get::<bool, _>(0).map_err(db_error))
    }

    /// Recovery, right before a void: whether the claim still holds (`sql::REASSERT_CLAIM`).
    pub async fn reassert_claim(
        &self,
        key: &ClaimedKey,
        lease_seconds: f64,
    ) -> Result<bool, ApiError> {
        let mut c = self.acquire("recovery").await?;
        let done = c
            .conn()
            .run(|pg| {
                sqlx::query(sql::REASSERT_CLAIM)
                    .bind(&key.seller_id)
                    .bind(&key.reference_id)
                    .bind(key.attempt)
                    .bind(lease_seconds)
                    .execute(pg)
            })
            .await
            .map_err(db_error)?;
        Ok(done.rows_affected() == 1)
    }

    /// Recovery's gauges: keys in `CHARGING` put off at least once, and of them those whose
    /// pending order a release could not read (`sql::DEFERRED_KEYS`).
    pub async fn deferred_keys(&self) -> Result<(i64, i64), ApiError> {
        let mut c = self.acquire("recovery").await?;
        let row = c
            .conn()
            .run(|pg| sqlx::query(sql::DEFERRED_KEYS).fetch_one(pg))
            .await
            .map_err(db_error)?;
        Ok((
            row.try_get::<i64, _>(0).map_err(db_error)?,
            row.try_get::<i64, _>(1).map_err(db_error)?,
        ))
    }

    /// Recovery: the key's charge never happened (and is voided at the gateway): release it.
    pub async fn release_uncharged(&self, key: &ClaimedKey) -> Result<bool, ApiError> {
        let mut c = self.acquire("recovery").await?;
        let done = c
            .conn()
            .run(|pg| {
                sqlx::query(sql::RELEASE_UNCHARGED)
                    .bind(&key.seller_id)
                    .bind(&key.reference_id)
                    .bind(key.attempt)
                    .execute(pg)
            })
            .await
            .map_err(db_error)?;
        Ok(done.rows_affected() == 1)
    }
}
