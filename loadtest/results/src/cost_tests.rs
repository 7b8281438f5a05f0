use super::*;

#[test]
fn a_window_is_the_difference_of_two_readings() {
    let a = PgCounters {
        wal_records: 100,
        wal_fpi: 3,
        wal_bytes: 10_000,
        wal_syncs: 40,
        commits: 50,
        rollbacks: 0,
        blocks_hit: 900,
        blocks_read: 10,
    };
    let b = PgCounters {
        wal_records: 1100,
        wal_fpi: 13,
        wal_bytes: 210_000,
        wal_syncs: 240,
        commits: 350,
        rollbacks: 1,
        blocks_hit: 20_900,
        blocks_read: 110,
    };
    let d = a.delta(&b);
    let p = d.per_order(100).unwrap();
    assert_eq!((p.wal_records, p.wal_fpi, p.wal_bytes), (10.0, 0.1, 2000.0));
    assert_eq!((p.commits, p.blocks_hit, p.blocks_read), (3.0, 200.0, 1.0));
    assert_eq!(p.wal_syncs, 2.0);
    assert_eq!(b.delta(&a), PgCounters::default());
    assert_eq!(d.per_order(0), None);
}
