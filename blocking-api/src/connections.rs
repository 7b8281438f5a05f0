//! blocking-api's connection pool: r2d2 with diesel's connection manager, and the rule both
//! APIs share for testing a pooled connection (`order_core::connections`).
//!
//! r2d2 is told to test a connection as it is taken (`test_on_check_out`), and [`Manager`]
//! makes that test a round trip only when a connection may have been lost since this one was
//! last known good. diesel's own check on return (`has_broken`) is local and only catches a
//! connection left in a transaction: a connection whose server is gone (PostgreSQL restarted, a
//! reset socket) looks healthy to it, so without this r2d2 lent every dead connection again and
//! each failed its order, for ever.

use diesel::pg::PgConnection;
use diesel::r2d2::{self, ConnectionManager, ManageConnection};
use order_core::connections;

/// A pooled connection, and when it was last known good (`order_core::connections::mark`).
pub struct PgConn {
    pub(crate) raw: PgConnection,
    tested_at: u64,
}

pub struct Manager(ConnectionManager<PgConnection>);

impl Manager {
    pub fn new(url: String) -> Self {
        Manager(ConnectionManager::new(url))
    }
}

impl ManageConnection for Manager {
    type Connection = PgConn;
    type Error = r2d2::Error;

    fn connect(&self) -> Result<PgConn, r2d2::Error> {
        let tested_at = connections::mark();
        Ok(PgConn {
            raw: self.0.connect()?,
            tested_at,
        })
    }

    /// Runs when a pooled connection is taken: a round trip (`SELECT 1`) only if a connection
    /// may have been lost since this one was known good.
    fn is_valid(&self, conn: &mut PgConn) -> Result<(), r2d2::Error> {
        if connections::needs_test(conn.tested_at) {
            let tested_at = connections::mark();
            self.0.is_valid(&mut conn.raw)?;
            conn.tested_at = tested_at;
        }
        Ok(())
    }

    fn has_broken(&self, conn: &mut PgConn) -> bool {
        self.0.has_broken(&mut conn.raw)
    }
}
