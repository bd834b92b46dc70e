//! Unit tests of the thread-local front door's internals (moved from tests/thread_local.rs
//! when the items they read stopped being public). They share the process's global collector
//! with nothing else: no other unit test uses the thread-local front door.

use super::*;
use crate::BrickId;

/// From tests/thread_local.rs `disabled_guards_record_nothing`: a guard started while
/// measuring is off is inert, one started while it is on records.
#[test]
fn a_guard_is_live_only_while_measuring_is_on() {
    set_enabled(false);
    {
        let _l = layer(0);
        let g = start(BrickId::RmsNorm);
        assert!(!g.is_live());
    }
    set_enabled(true);
    let g = start(BrickId::Sampling);
    assert!(g.is_live());
    drop(g);
    set_enabled(false);
    reset();
}

/// From tests/thread_local.rs `a_brick_registered_after_a_thread_started_is_caught_up`: a
/// dynamic brick registered globally is found by its name (the collector's registry, which
/// `thread::lookup` read before it went).
#[test]
fn a_registered_brick_is_found_by_name() {
    init_thread(None).unwrap();
    let late = register("registered_late", BrickCategory::Other).unwrap();
    assert_eq!(
        with_collector(|c| c.names.lookup("registered_late")),
        Some(late)
    );
    reset();
}
