//! The order's domain: what an order is and what may be done with it, decided without a socket,
//! a pool or a clock of its own — each rule a function of its inputs, tested beside it.
//!
//! The HTTP contract and its validation ([`contract`]), the error enum with its stable codes and
//! statuses ([`error`]), the dependencies' wire format and what their answers mean ([`deps`]),
//! the order document returned and replayed ([`order`]), the keyed request hash
//! ([`request_hash`]), the idempotency decision ([`idempotency`]), what recovery does with a
//! charge left unfinished ([`recovery`]), how a database failure is judged by its SQLSTATE
//! ([`db_failure`]), what the retention sweep keeps ([`retention`]) and the SQL text both
//! database layers run ([`sql`]).
//!
//! It reads two things of the plumbing: the request hash's key and the retention's days come
//! from the typed settings (`plumbing::settings`). Two framework traits are implemented here, as
//! parts of the contract: the error's status mapping (actix-web's `ResponseError`) and the
//! types' schemas for the OpenAPI document (utoipa's `ToSchema`).

pub mod contract;
pub mod db_failure;
pub mod deps;
pub mod error;
pub mod idempotency;
pub mod order;
pub mod recovery;
pub mod request_hash;
pub mod retention;
pub mod sql;
