//! diesel's statement cache opened to the fixed raw SQL of `order_core::domain::sql` ([`Prepared`]), and
//! the order path's statements named by type ([`statement`]). blocking-api only: sqlx prepares
//! and caches every statement itself.

use std::marker::PhantomData;

use diesel::pg::Pg;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::sql_types::Untyped;
use diesel::{QueryResult, RunQueryDsl};

/// A statement of `order_core::domain::sql`, kept as a prepared statement on its connection. diesel
/// caches the statements its query builder makes, but never raw SQL (it cannot know that the
/// text is fixed), so every `sql_query` would be parsed and planned again by PostgreSQL at each
/// execution — about 0.9 ms of database CPU per order for the persist statement alone, where
/// reactive-api (sqlx prepares and caches every statement) paid nothing. The texts are constants,
/// so the cache (keyed by text and bind types) stays as small as the list of statements.
/// Overriding `is_safe_to_cache_prepared` uses the API diesel opens with its
/// `i-implement-a-third-party-backend-and-opt-into-breaking-changes` feature (enabled in the
/// workspace's Cargo.toml for this).
///
/// diesel finds a statement in that cache by its text, which it builds and hashes (SipHash, up to
/// 1.5 KB for the persist statement) at every execution — unless the query has a type of its
/// own. The order path's statements are named ([`statement`], [`Prepare::prepared_as`]), so they
/// are found by type: about 15 k instructions an order fewer (docs/benchmarks.md).
pub(crate) struct Prepared<Q, S = ByText>(Q, PhantomData<S>);

/// How diesel finds a [`Prepared`] statement in its cache: by its text ([`ByText`]), or by a
/// type named for it ([`statement`]).
pub(crate) trait Keying {
    /// `TypeId` diesel keys the statement by, when [`Keying::BY_TYPE`].
    type Id: 'static;
    const BY_TYPE: bool;
    /// The statement's text, for the debug-build check that a name is used with its own text.
    const SQL: Option<&'static str>;
}

/// Found by its text.
pub(crate) struct ByText;

impl Keying for ByText {
    type Id = ();
    const BY_TYPE: bool = false;
    const SQL: Option<&'static str> = None;
}

pub(crate) trait Prepare: Sized {
    fn prepared(self) -> Prepared<Self> {
        Prepared(self, PhantomData)
    }

    /// Prepared and found by the type `S` names it by. `S` must name this query's own text:
    /// diesel would run the statement cached under `S` whatever the text, so debug builds (every
    /// test) check it.
    fn prepared_as<S: Keying>(self) -> Prepared<Self, S>
    where
        Self: QueryFragment<Pg>,
    {
        if cfg!(debug_assertions)
            && let Some(expected) = S::SQL
        {
            let text = diesel::debug_query::<Pg, _>(&self).to_string();
            assert!(
                text.starts_with(expected),
                "statement named for another text: {text}"
            );
        }
        Prepared(self, PhantomData)
    }
}

impl<Q: QueryFragment<Pg>> Prepare for Q {}

impl<Q: QueryFragment<Pg>, S> QueryFragment<Pg> for Prepared<Q, S> {
    fn walk_ast<'b>(&'b self, pass: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        self.0.walk_ast(pass)
    }

    fn is_safe_to_cache_prepared(&self, _backend: &Pg) -> QueryResult<bool> {
        Ok(true)
    }
}

impl<Q, S: Keying> QueryId for Prepared<Q, S> {
    type QueryId = S::Id;
    const HAS_STATIC_QUERY_ID: bool = S::BY_TYPE;
}

impl<Q, S> Query for Prepared<Q, S> {
    type SqlType = Untyped;
}

impl<Q, C, S> RunQueryDsl<C> for Prepared<Q, S> {}

/// The statements of the order path, each a type named for its text (see [`Prepared`]).
#[allow(non_camel_case_types)]
pub(crate) mod statement {
    macro_rules! named {
        ($($name:ident = $sql:path;)*) => {$(
            pub(crate) struct $name;

            impl super::Keying for $name {
                type Id = $name;
                const BY_TYPE: bool = true;
                const SQL: Option<&'static str> = Some($sql);
            }
        )*};
    }

    named! {
        RESERVE_KEY = order_core::domain::sql::RESERVE_KEY;
        FIND_KEY = order_core::domain::sql::FIND_KEY;
        MARK_CHARGING = order_core::domain::sql::MARK_CHARGING;
        RELEASE_KEY = order_core::domain::sql::RELEASE_KEY;
        COMPLETE_KEY = order_core::domain::sql::COMPLETE_KEY;
        PERSIST_ORDER = order_core::domain::sql::PERSIST_ORDER;
        FIND_ORDER = order_core::domain::sql::FIND_ORDER;
        PERSIST_ORDERS = order_core::plumbing::batch::PERSIST_ORDERS;
    }
}

#[cfg(test)]
mod tests {
    use super::{Prepare, statement};
    use diesel::sql_query;
    use diesel::sql_types::Text;
    use order_core::domain::sql;

    #[test]
    fn a_statement_name_goes_with_its_own_text_only() {
        let _ = sql_query(sql::FIND_KEY)
            .bind::<Text, _>("seller")
            .bind::<Text, _>("ref")
            .prepared_as::<statement::FIND_KEY>();
        let wrong = std::panic::catch_unwind(|| {
            sql_query(sql::FIND_KEY).prepared_as::<statement::RESERVE_KEY>()
        });
        assert!(
            wrong.is_err(),
            "a name used with another text must not pass"
        );
    }
}
