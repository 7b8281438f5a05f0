//! The recovery loop's statements (`recovery.rs`), as methods of [`Db`]: each takes a connection
//! of its own, in autocommit. The twin of reactive-api's `db/recovery_queries.rs`.

use diesel::sql_types::{BigInt, Bool, Double, Integer, Text};
use diesel::{QueryableByName, RunQueryDsl, sql_query};
use order_core::domain::error::ApiError;
use order_core::domain::recovery::ClaimedKey;
use order_core::domain::sql;

use super::Db;
use super::error::db_error;
use super::prepared::Prepare;

impl Db {
    /// Recovery: claims up to `batch` keys left in `CHARGING` whose lease expired.
    pub fn claim_charging(
        &self,
        lease_seconds: f64,
        batch: i64,
    ) -> Result<Vec<ClaimedKey>, ApiError> {
        #[derive(QueryableByName)]
        struct Claimed {
            #[diesel(sql_type = Text)]
            seller_id: String,
            #[diesel(sql_type = Text)]
            reference_id: String,
            #[diesel(sql_type = Integer)]
            attempt: i32,
            #[diesel(sql_type = Text)]
            gateway_key: String,
            #[diesel(sql_type = BigInt)]
            amount: i64,
            #[diesel(sql_type = Text)]
            pending_order: String,
            #[diesel(sql_type = Integer)]
            deferrals: i32,
        }
        let mut c = self.acquire("recovery")?;
        let rows: Vec<Claimed> = c
            .conn()
            .run(|pg| {
                sql_query(sql::CLAIM_CHARGING)
                    .bind::<Double, _>(lease_seconds)
                    .bind::<BigInt, _>(batch)
                    .prepared()
                    .load(pg)
            })
            .map_err(db_error)?;
        Ok(rows
            .into_iter()
            .map(|r| ClaimedKey {
                seller_id: r.seller_id,
                reference_id: r.reference_id,
                attempt: r.attempt,
                gateway_key: r.gateway_key,
                amount: r.amount,
                pending_order: r.pending_order,
                deferrals: r.deferrals,
            })
            .collect())
    }

    /// Recovery: puts a claimed key off for `backoff_seconds` (`sql::DEFER_KEY`).
    pub fn defer(&self, key: &ClaimedKey, backoff_seconds: f64) -> Result<(), ApiError> {
        let mut c = self.acquire("recovery")?;
        c.conn()
            .run(|pg| {
                sql_query(sql::DEFER_KEY)
                    .bind::<Text, _>(&key.seller_id)
                    .bind::<Text, _>(&key.reference_id)
                    .bind::<Integer, _>(key.attempt)
                    .bind::<Double, _>(backoff_seconds)
                    .prepared()
                    .execute(pg)
            })
            .map_err(db_error)?;
        Ok(())
    }

    /// Recovery: puts off a claimed key whose pending order this release cannot read, marking it
    /// (`sql::DEFER_UNREADABLE`); `true` the first time it is so marked.
    pub fn defer_unreadable(
        &self,
        key: &ClaimedKey,
        backoff_seconds: f64,
    ) -> Result<bool, ApiError> {
        #[derive(QueryableByName)]
        struct First {
            #[diesel(sql_type = Bool)]
            first: bool,
        }
        let mut c = self.acquire("recovery")?;
        let rows: Vec<First> = c
            .conn()
            .run(|pg| {
                sql_query(sql::DEFER_UNREADABLE)
                    .bind::<Text, _>(&key.seller_id)
                    .bind::<Text, _>(&key.reference_id)
                    .bind::<Integer, _>(key.attempt)
                    .bind::<Double, _>(backoff_seconds)
                    .prepared()
                    .load(pg)
            })
            .map_err(db_error)?;
        Ok(rows.first().is_some_and(|r| r.first))
    }

    /// Recovery, right before a void: whether the claim still holds (`sql::REASSERT_CLAIM`).
    pub fn reassert_claim(&self, key: &ClaimedKey, lease_seconds: f64) -> Result<bool, ApiError> {
        let mut c = self.acquire("recovery")?;
        let rows = c
            .conn()
            .run(|pg| {
                sql_query(sql::REASSERT_CLAIM)
                    .bind::<Text, _>(&key.seller_id)
                    .bind::<Text, _>(&key.reference_id)
                    .bind::<Integer, _>(key.attempt)
                    .bind::<Double, _>(lease_seconds)
                    .prepared()
                    .execute(pg)
            })
            .map_err(db_error)?;
        Ok(rows == 1)
    }

    /// Recovery's gauges: keys in `CHARGING` put off at least once, and of them those whose
    /// pending order a release could not read (`sql::DEFERRED_KEYS`).
    pub fn deferred_keys(&self) -> Result<(i64, i64), ApiError> {
        #[derive(QueryableByName)]
        struct Count {
            #[diesel(sql_type = BigInt)]
            deferred: i64,
            #[diesel(sql_type = BigInt)]
            unreadable: i64,
        }
        let mut c = self.acquire("recovery")?;
        let row: Count = c
            .conn()
            .run(|pg| sql_query(sql::DEFERRED_KEYS).prepared().get_result(pg))
            .map_err(db_error)?;
        Ok((row.deferred, row.unreadable))
    }

    /// Recovery: the key's charge never happened (and is voided at the gateway): release it.
    pub fn release_uncharged(&self, key: &ClaimedKey) -> Result<bool, ApiError> {
        let mut c = self.acquire("recovery")?;
        let rows = c
            .conn()
            .run(|pg| {
                sql_query(sql::RELEASE_UNCHARGED)
                    .bind::<Text, _>(&key.seller_id)
                    .bind::<Text, _>(&key.reference_id)
                    .bind::<Integer, _>(key.attempt)
                    .prepared()
                    .execute(pg)
            })
            .map_err(db_error)?;
        Ok(rows == 1)
    }
}
