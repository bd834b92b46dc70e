//! Clocks around a subscriber's or a layer's span callbacks, to measure directly what they cost
//! an engine: every `enter`/`exit` (or `on_enter`/`on_exit`) is bracketed by two TSC reads and
//! the ticks inside are summed. Everything else is forwarded as it is.
//!
//! - [`ClockedSubscriber`] around `registry().with(BrickLayer)`: what the whole subscriber costs
//!   (the registry's span stack plus the layer).
//! - [`ClockedLayer`] around `BrickLayer`: what the layer's own callbacks cost.
//!
//! The two TSC reads of each bracket are not billed: [`Clock::bracket_ticks`] measures an empty
//! bracket, and [`Totals::callback_ns`] subtracts it per callback.

use std::any::TypeId;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use brickprof::timeline::HostClock;
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Dispatch, Event, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

/// Ticks spent inside the clocked callbacks and how many there were (shared with the caller).
#[derive(Debug, Default)]
pub struct Totals {
    ticks: AtomicU64,
    calls: AtomicU64,
    longest: AtomicU64,
    /// Callbacks over [`LONG_NS`] (a pass's end: resolving its bricks), their count and ticks.
    long_calls: AtomicU64,
    long_ticks: AtomicU64,
    /// [`LONG_NS`] in ticks (0: not set, nothing counts as long).
    long_threshold: AtomicU64,
}

/// A callback longer than this is counted apart (ns).
pub const LONG_NS: f64 = 20_000.0;

impl Totals {
    fn add(&self, ticks: u64) {
        self.ticks.fetch_add(ticks, Ordering::Relaxed);
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.longest.fetch_max(ticks, Ordering::Relaxed);
        let threshold = self.long_threshold.load(Ordering::Relaxed);
        if threshold > 0 && ticks > threshold {
            self.long_calls.fetch_add(1, Ordering::Relaxed);
            self.long_ticks.fetch_add(ticks, Ordering::Relaxed);
        }
    }

    /// Count callbacks over [`LONG_NS`] apart, on `clock`'s ticks.
    pub fn count_long(&self, clock: &Clock) {
        let ticks = (LONG_NS / clock.ns_per_tick.max(1e-9)) as u64;
        self.long_threshold.store(ticks.max(1), Ordering::Relaxed);
    }

    /// Callbacks over [`LONG_NS`] and the ns inside them.
    pub fn long(&self, clock: &Clock) -> (u64, f64) {
        let n = self.long_calls.load(Ordering::Relaxed);
        let ticks = self.long_ticks.load(Ordering::Relaxed) as f64;
        (
            n,
            (ticks - n as f64 * clock.bracket_ticks).max(0.0) * clock.ns_per_tick,
        )
    }

    /// Forget what was counted.
    pub fn reset(&self) {
        self.ticks.store(0, Ordering::Relaxed);
        self.calls.store(0, Ordering::Relaxed);
        self.longest.store(0, Ordering::Relaxed);
        self.long_calls.store(0, Ordering::Relaxed);
        self.long_ticks.store(0, Ordering::Relaxed);
    }

    /// The longest single callback, in ns (its bracket included).
    pub fn longest_ns(&self, clock: &Clock) -> f64 {
        self.longest.load(Ordering::Relaxed) as f64 * clock.ns_per_tick
    }

    /// Callbacks counted (enters plus exits).
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    /// Nanoseconds inside the callbacks, less an empty bracket's cost per callback.
    pub fn callback_ns(&self, clock: &Clock) -> f64 {
        let ticks = self.ticks.load(Ordering::Relaxed) as f64;
        let calls = self.calls() as f64;
        (ticks - calls * clock.bracket_ticks).max(0.0) * clock.ns_per_tick
    }
}

/// The TSC, its rate, and what an empty bracket (two reads) costs.
#[derive(Debug, Clone)]
pub struct Clock {
    host: HostClock,
    ns_per_tick: f64,
    bracket_ticks: f64,
}

impl Clock {
    /// Calibrate: the tick rate against itself over a million ticks, and the median cost of
    /// an empty bracket over many tries.
    pub fn calibrate() -> Clock {
        let host = HostClock::default();
        let a = host.ticks();
        let mut b = a;
        while b.wrapping_sub(a) < 1_000_000 {
            b = host.ticks();
        }
        let ns_per_tick = host.ticks_to_ns(a, b) as f64 / b.wrapping_sub(a) as f64;
        let mut empty: Vec<u64> = (0..10_001)
            .map(|_| {
                let t0 = host.ticks();
                let t1 = host.ticks();
                t1.wrapping_sub(t0)
            })
            .collect();
        empty.sort_unstable();
        Clock {
            host,
            ns_per_tick,
            bracket_ticks: empty[empty.len() / 2] as f64,
        }
    }

    /// An empty bracket, in ns (what each callback's measurement itself costs, subtracted).
    pub fn bracket_ns(&self) -> f64 {
        self.bracket_ticks * self.ns_per_tick
    }

    #[inline(always)]
    fn time(&self, totals: &Totals, f: impl FnOnce()) {
        let t0 = self.host.ticks();
        f();
        let t1 = self.host.ticks();
        totals.add(t1.wrapping_sub(t0));
    }
}

/// A subscriber whose `enter` and `exit` are clocked.
pub struct ClockedSubscriber<S> {
    inner: S,
    clock: Clock,
    totals: Arc<Totals>,
}

impl<S> ClockedSubscriber<S> {
    /// Clock `inner`'s enters and exits into `totals`.
    pub fn new(inner: S, clock: Clock, totals: Arc<Totals>) -> Self {
        ClockedSubscriber {
            inner,
            clock,
            totals,
        }
    }
}

impl<S: Subscriber> Subscriber for ClockedSubscriber<S> {
    fn on_register_dispatch(&self, subscriber: &Dispatch) {
        self.inner.on_register_dispatch(subscriber)
    }
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        self.inner.register_callsite(metadata)
    }
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        self.inner.enabled(metadata)
    }
    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        self.inner.max_level_hint()
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        self.inner.new_span(span)
    }
    fn record(&self, span: &Id, values: &Record<'_>) {
        self.inner.record(span, values)
    }
    fn record_follows_from(&self, span: &Id, follows: &Id) {
        self.inner.record_follows_from(span, follows)
    }
    fn event_enabled(&self, event: &Event<'_>) -> bool {
        self.inner.event_enabled(event)
    }
    fn event(&self, event: &Event<'_>) {
        self.inner.event(event)
    }
    fn enter(&self, span: &Id) {
        self.clock.time(&self.totals, || self.inner.enter(span))
    }
    fn exit(&self, span: &Id) {
        self.clock.time(&self.totals, || self.inner.exit(span))
    }
    fn clone_span(&self, id: &Id) -> Id {
        self.inner.clone_span(id)
    }
    fn try_close(&self, id: Id) -> bool {
        self.inner.try_close(id)
    }
    fn current_span(&self) -> tracing_core::span::Current {
        self.inner.current_span()
    }
    unsafe fn downcast_raw(&self, id: TypeId) -> Option<*const ()> {
        if id == TypeId::of::<Self>() {
            return Some(self as *const Self as *const ());
        }
        // SAFETY: forwarded as the caller asked; the inner subscriber upholds the contract.
        unsafe { self.inner.downcast_raw(id) }
    }
}

/// A layer whose `on_enter` and `on_exit` are clocked.
pub struct ClockedLayer<L> {
    inner: L,
    clock: Clock,
    totals: Arc<Totals>,
}

impl<L> ClockedLayer<L> {
    /// Clock `inner`'s `on_enter` and `on_exit` into `totals`.
    pub fn new(inner: L, clock: Clock, totals: Arc<Totals>) -> Self {
        ClockedLayer {
            inner,
            clock,
            totals,
        }
    }
}

impl<S, L> Layer<S> for ClockedLayer<L>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    L: Layer<S>,
{
    fn on_register_dispatch(&self, subscriber: &Dispatch) {
        self.inner.on_register_dispatch(subscriber)
    }
    fn on_layer(&mut self, subscriber: &mut S) {
        self.inner.on_layer(subscriber)
    }
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        self.inner.register_callsite(metadata)
    }
    fn enabled(&self, metadata: &Metadata<'_>, ctx: Context<'_, S>) -> bool {
        self.inner.enabled(metadata, ctx)
    }
    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        self.inner.max_level_hint()
    }
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        self.inner.on_new_span(attrs, id, ctx)
    }
    fn on_record(&self, span: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        self.inner.on_record(span, values, ctx)
    }
    fn on_follows_from(&self, span: &Id, follows: &Id, ctx: Context<'_, S>) {
        self.inner.on_follows_from(span, follows, ctx)
    }
    fn event_enabled(&self, event: &Event<'_>, ctx: Context<'_, S>) -> bool {
        self.inner.event_enabled(event, ctx)
    }
    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        self.inner.on_event(event, ctx)
    }
    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        self.clock
            .time(&self.totals, || self.inner.on_enter(id, ctx))
    }
    fn on_exit(&self, id: &Id, ctx: Context<'_, S>) {
        self.clock
            .time(&self.totals, || self.inner.on_exit(id, ctx))
    }
    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        self.inner.on_close(id, ctx)
    }
    fn on_id_change(&self, old: &Id, new: &Id, ctx: Context<'_, S>) {
        self.inner.on_id_change(old, new, ctx)
    }
    unsafe fn downcast_raw(&self, id: TypeId) -> Option<*const ()> {
        if id == TypeId::of::<Self>() {
            return Some(self as *const Self as *const ());
        }
        // SAFETY: forwarded as the caller asked; the inner layer upholds the contract.
        unsafe { self.inner.downcast_raw(id) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each callback's empty bracket is subtracted, never below zero.
    #[test]
    fn callback_time_excludes_the_empty_brackets() {
        let clock = Clock {
            host: HostClock::default(),
            ns_per_tick: 0.5,
            bracket_ticks: 20.0,
        };
        let t = Totals::default();
        t.add(100);
        t.add(60);
        assert_eq!(t.calls(), 2);
        assert_eq!(t.callback_ns(&clock), (160.0 - 40.0) * 0.5);
        t.reset();
        t.add(5);
        assert_eq!(t.callback_ns(&clock), 0.0);
    }
}
