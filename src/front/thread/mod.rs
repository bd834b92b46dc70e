//! The thread-local front door: a per-thread [`BrickProfiler`] reachable from anywhere, so an
//! engine times a scope with one line instead of threading `&mut BrickProfiler` through every
//! forward function (spec/front-doors.md "Thread-local profiler").
//!
//! ```
//! use brickprof::{brick, thread as bp, BrickId, ProfilerConfig};
//!
//! bp::configure(ProfilerConfig::with_layers(2))?;
//! bp::set_enabled(true);
//! for layer in 0..2 {
//!     let _l = bp::layer(layer);
//!     let mut g = brick!(BrickId::RmsNorm);
//!     let x: f32 = (0..256).map(|i| i as f32).sum(); // your kernel
//!     g.set_work(brickprof::Work::elements(256));
//!     # let _ = x;
//! } // guards stop their bricks when they drop
//! bp::end_pass(1)?;
//! let profile = bp::collect()?; // every registered thread, merged
//! assert_eq!(profile.brick("RmsNorm").unwrap().stats.summary().count, 2);
//! # bp::set_enabled(false);
//! # Ok::<(), brickprof::Error>(())
//! ```
//!
//! Design:
//! - Each thread that times a brick owns a [`BrickProfiler`] in a thread-local, created at its
//!   first use (or [`init_thread`]) with the configuration of [`configure`]. The hot path
//!   touches only that thread's profiler: no lock, no allocation, no hashing.
//! - Globally disabled ([`set_enabled`]`(false)`, the default), a guard costs one relaxed atomic load and a
//!   branch, and touches no thread-local.
//! - A thread *publishes* at every [`end_pass`] and [`flush`], and when it exits, without
//!   building anything: its books (statistics, trace, brick names) live on a *shelf* that the
//!   collector can read, and `end_pass` resolves the pass into them under the shelf's own lock,
//!   taken once per pass and contended only while a collector reads that thread. The marker
//!   stays thread-local and lock-free, and the cost of a pass does not grow with the run or the
//!   trace (spec/front-doors.md "Publishing"). So a pass is in the collector by the time its
//!   `end_pass` returns: threads joined by [`std::thread::scope`], whose thread-local
//!   destructors may still be running when the scope returns, are collected in full (see
//!   [`end_pass`]). [`collect`] publishes the calling thread first, then builds each published
//!   thread's profile from its shelf and merges them with [`Profile::merge`]; [`collect_trace`]
//!   puts each thread on its own process track of a Chrome trace.
//! - [`reset`] starts a fresh measurement: nothing a thread measured before it is collected
//!   after it, even when the thread publishes later (a scoped thread still exiting, a worker
//!   that keeps running). The collector counts resets and forgets the shelves it knew; each
//!   thread profiler carries the count it was made under, and one made under an older count
//!   starts afresh at its next pass ([`reset`] has the rule and an example).
//! - Dynamic bricks are registered once, globally ([`register`]), so a [`BrickHandle`] means the
//!   same brick on every thread.
//! - A thread marks the host clock unless it is given a device timeline: by
//!   [`init_thread`] before its first brick, or by a factory that every new
//!   thread profiler asks ([`set_timeline_factory`], or `BrickLayer::with_timeline` for the
//!   threads a tracing layer sees). Its bricks then resolve to device durations, and its
//!   profile and trace say which timeline they were measured on (spec/front-doors.md "Device
//!   timelines"). The host-clock path is unchanged: no indirect call, one clock read.
//!
//! A device timeline through the thread-local front door (the simulated device here; an
//! `OpenClTimeline`, `HipTimeline` or `CudaTimeline` the same way):
//!
//! ```
//! use brickprof::{brick, thread as bp, BrickId, ProfilerConfig};
//! use brickprof::timeline::{BoxedTimeline, SimDevice, TimelineKind};
//!
//! bp::configure(ProfilerConfig::with_layers(1))?;
//! bp::set_enabled(true);
//! let device = SimDevice::new(0);
//! bp::init_thread(Some(BoxedTimeline::new(device.timeline(1024))))?;
//! for _ in 0..3 {
//!     let _l = bp::layer(0);
//!     let _g = brick!(BrickId::QkvProjection);
//!     device.launch(120_000); // a 120 µs kernel, queued: the host does not wait for it
//!     # drop(_g); drop(_l);
//!     bp::end_pass(1)?; // one sync, the pass's bricks resolved on the device
//! }
//! let profile = bp::collect()?;
//! assert_eq!(profile.meta.timeline, TimelineKind::Sim);
//! let qkv = profile.brick("QkvProjection").unwrap().stats.summary();
//! assert_eq!((qkv.count, qkv.min_ns), (3, 120_000)); // the kernel's device time
//! # bp::set_enabled(false);
//! # bp::reset();
//! # Ok::<(), brickprof::Error>(())
//! ```

mod profiler;
#[cfg(test)]
mod tests;

use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use profiler::ThreadProfiler;

use crate::model::registry::BrickRegistry;
use crate::output::chrome_trace::{build_threads, ThreadTrace};
use crate::profiler::ShelfReader;
use crate::{
    timeline::{BoxedTimeline, TimelineKind},
    BrickCategory, BrickHandle, BrickProfiler, BrickToken, Error, Profile, ProfilerConfig, Result,
    Work,
};

static ENABLED: AtomicBool = AtomicBool::new(false);
static NEXT_THREAD_ID: AtomicU32 = AtomicU32::new(0);
/// [`Collector::epoch`], for a thread's `end_pass` to compare without the collector's lock.
/// Written under that lock.
static EPOCH: AtomicU64 = AtomicU64::new(0);

/// What the collector holds: the configuration for new threads, the global names of dynamic
/// bricks, and each registered thread's shelf.
struct Collector {
    config: ProfilerConfig,
    /// Dynamic bricks in slot order (slot `BrickId::COUNT + i`).
    names: BrickRegistry,
    /// Asked for a timeline by every thread profiler created from now on.
    factory: Option<TimelineFactory>,
    threads: Vec<Published>,
    /// Counts [`reset`]s: a thread profiler made before the latest one belongs to an older
    /// measurement, and what it publishes is dropped (see [`reset`]).
    epoch: u64,
}

/// Makes the timeline of a new thread profiler, on that thread (see [`set_timeline_factory`]):
/// `None` leaves the thread on the host clock.
pub(crate) type TimelineFactory = Arc<dyn Fn() -> Option<BoxedTimeline> + Send + Sync>;

/// A registered thread: its name, its timeline, and the shelf its profile is built from.
struct Published {
    id: u32,
    name: String,
    timeline: TimelineKind,
    shelf: ShelfReader,
    /// Whether the thread reached a pass boundary ([`end_pass`], [`flush`], its exit) since it
    /// registered: only then is it collected.
    published: bool,
}

impl Published {
    /// The calling thread, registered as `id`, with nothing published yet.
    fn new(id: u32, timeline: TimelineKind, shelf: ShelfReader) -> Published {
        Published {
            id,
            name: thread_name(id),
            timeline,
            shelf,
            published: false,
        }
    }
}

/// The calling thread's name, or `thread {id}`.
fn thread_name(id: u32) -> String {
    std::thread::current()
        .name()
        .map_or_else(|| format!("thread {id}"), str::to_string)
}

static COLLECTOR: Mutex<Option<Collector>> = Mutex::new(None);

fn collector() -> MutexGuard<'static, Option<Collector>> {
    // A panic while holding the lock leaves data that is still consistent (whole snapshots).
    COLLECTOR.lock().unwrap_or_else(|e| e.into_inner())
}

fn with_collector<R>(f: impl FnOnce(&mut Collector) -> R) -> R {
    let mut guard = collector();
    let c = guard.get_or_insert_with(|| Collector {
        config: ProfilerConfig::default(),
        names: BrickRegistry::default(),
        factory: None,
        threads: Vec::new(),
        epoch: 0,
    });
    f(c)
}

/// Set the configuration of thread profilers created from now on (layers, sync mode, trace
/// capacity, warm-up, ...). Threads already registered keep theirs; [`reset`] drops them.
/// The `enabled` field is ignored: [`set_enabled`] switches every thread at once.
/// A configuration out of [`BrickProfiler::new`]'s limits is refused with its error.
pub fn configure(config: ProfilerConfig) -> Result<()> {
    BrickProfiler::new(config.clone())?; // the same validation, once, at setup
    with_collector(|c| c.config = config);
    Ok(())
}

/// The layer count thread profilers are created with (from [`configure`]).
#[cfg(feature = "tracing")]
pub(crate) fn configured_layers() -> usize {
    with_collector(|c| c.config.layers)
}

/// Turn measuring on or off for every thread. Off (the default), a guard costs a load and a
/// branch. Guards already open still record when they drop.
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// Whether measuring is on.
#[inline(always)]
pub(crate) fn is_enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Register a dynamic brick for every thread, in `category` (the per-category breakdown;
/// [`BrickCategory::Other`] when it has none). A [`BrickId`](crate::BrickId) name returns the built-in brick.
/// Takes a lock and may allocate: call it at setup, keep the handle.
pub fn register(name: &str, category: BrickCategory) -> Result<BrickHandle> {
    with_collector(|c| c.names.register(name, category))
}

/// Give every thread profiler created from now on the timeline `factory` makes, called on the
/// new profiler's thread at its creation (its first guard, layer or pass, or [`init_thread`]);
/// `None` forgets the factory, and thread profilers created from then on mark the host clock.
/// A factory that returns `None` leaves that thread on the host clock, so one engine thread can
/// mark the device while the others time the host. Threads that already have a profiler keep
/// theirs; [`reset`] drops the calling thread's.
///
/// ```
/// use brickprof::{thread as bp, timeline::{BoxedTimeline, SimDevice, TimelineKind}};
/// bp::set_timeline_factory(Some(Box::new(|| {
///     Some(BoxedTimeline::new(SimDevice::new(0).timeline(256)))
/// })));
/// let kind = std::thread::spawn(|| {
///     bp::init_thread(None) // asks the factory, on this thread
/// })
/// .join()
/// .unwrap()?;
/// assert_eq!(kind, TimelineKind::Sim);
/// bp::set_timeline_factory(None);
/// # Ok::<(), brickprof::Error>(())
/// ```
pub fn set_timeline_factory(factory: Option<Box<dyn Fn() -> Option<BoxedTimeline> + Send + Sync>>) {
    let factory: Option<TimelineFactory> = factory.map(Arc::from);
    with_collector(|c| c.factory = factory);
}

/// The timeline of a thread no factory or call chose: CUPTI's records on NVIDIA, with the
/// `cupti` feature, when CUPTI can be had (`crate::timeline::default_thread_timeline`); the
/// host clock otherwise.
fn default_timeline() -> Option<BoxedTimeline> {
    #[cfg(feature = "cupti")]
    {
        crate::timeline::default_thread_timeline()
    }
    #[cfg(not(feature = "cupti"))]
    {
        None
    }
}

/// Where a new thread profiler's timeline comes from.
pub(crate) enum Source<'a> {
    /// The global factory, if one is set; else the host clock.
    Global,
    /// This factory (a tracing layer's).
    Factory(&'a TimelineFactory),
    /// This timeline.
    Given(BoxedTimeline),
}

/// The calling thread's profiler and what the front doors keep next to it.
pub(crate) struct Local {
    prof: ThreadProfiler,
    /// Slots the local registry knows; a handle at or past it makes the thread catch up.
    known_slots: usize,
    /// The layer bricks are attributed to now (`None`: outside any layer).
    layer: Option<usize>,
    id: u32,
    publish_on_drop: bool,
    /// The collector's [`Collector::epoch`] this profiler measures for.
    epoch: u64,
    /// Whether the collector was told that this thread published (once per registration).
    announced: bool,
}

/// Owns the calling thread's profiler; dropping it (thread exit) publishes it.
struct Owner(Option<Box<RefCell<Local>>>);

impl Drop for Owner {
    fn drop(&mut self) {
        FAST.with(|p| p.set(std::ptr::null())); // before the profiler goes away
    }
}

thread_local! {
    /// The hot path's way in: a plain pointer to the profiler `OWNER` holds (null: none yet,
    /// or the thread is exiting). No destructor, so reading it is one thread-local load.
    static FAST: Cell<*const RefCell<Local>> = const { Cell::new(std::ptr::null()) };
    static OWNER: RefCell<Owner> = const { RefCell::new(Owner(None)) };
}

impl Local {
    fn new(source: Source<'_>) -> Local {
        // The factory runs outside the collector's lock (it may call into this module).
        let timeline = match source {
            Source::Given(t) => Some(t),
            Source::Factory(f) => f(),
            Source::Global => match with_collector(|c| c.factory.clone()) {
                Some(f) => f(),
                None => default_timeline(),
            },
        };
        let (config, names) = with_collector(|c| (c.config.clone(), c.names.clone()));
        let config = ProfilerConfig {
            enabled: true,
            ..config
        };
        // `configure` validated this configuration (sampling and vendor ranges included); the
        // default is within every limit.
        let mut prof = match timeline {
            Some(t) => match BrickProfiler::with_timeline(config, t) {
                Ok(p) => ThreadProfiler::Device(p),
                Err(_) => ThreadProfiler::Cpu(BrickProfiler::default()),
            },
            None => ThreadProfiler::Cpu(BrickProfiler::new(config).unwrap_or_default()),
        };
        let kind = prof.timeline_kind();
        let shelf = prof.share();
        let (id, epoch) = with_collector(|c| {
            let id = NEXT_THREAD_ID.fetch_add(1, Ordering::Relaxed);
            c.threads.push(Published::new(id, kind, shelf));
            (id, c.epoch)
        });
        let mut local = Local {
            known_slots: prof.registry().len(),
            prof: {
                prof.begin_pass();
                prof
            },
            layer: None,
            id,
            publish_on_drop: true,
            epoch,
            announced: false,
        };
        local.catch_up(&names);
        local
    }

    /// Register locally every global dynamic brick this thread has not seen, in slot order.
    #[cold]
    fn catch_up(&mut self, names: &BrickRegistry) {
        for h in names.handles().skip(self.known_slots) {
            let name = names.name(h).unwrap_or_default();
            let cat = names.category(h).unwrap_or(BrickCategory::Other);
            // Same registration order as the global registry, so the slots coincide.
            if self.prof.register(name, cat).ok() != Some(h) {
                break;
            }
        }
        self.known_slots = self.prof.registry().len();
    }

    #[cold]
    #[inline(never)]
    fn catch_up_global(&mut self) {
        let names = with_collector(|c| c.names.clone());
        self.catch_up(&names);
    }

    /// Start `brick` on this thread's profiler.
    #[inline(always)]
    pub(crate) fn start(&mut self, brick: BrickHandle) -> BrickToken {
        if brick.slot() >= self.known_slots {
            self.catch_up_global();
        }
        self.prof.start_brick(brick)
    }

    /// Stop a brick started on this thread.
    #[inline(always)]
    pub(crate) fn stop(&mut self, token: BrickToken, work: Work) {
        self.prof.stop_brick_with(token, work);
    }

    /// Attribute the following bricks to `layer`; returns the layer they went to before.
    #[inline]
    pub(crate) fn set_layer(&mut self, layer: Option<usize>) -> Option<usize> {
        let before = self.layer;
        if layer != before {
            match layer {
                Some(n) => self.prof.begin_layer(n),
                None => self.prof.end_layer(),
            }
            self.layer = layer;
        }
        before
    }

    pub(crate) fn begin_pass(&mut self) {
        self.prof.begin_pass();
    }

    pub(crate) fn set_pass_shape(&mut self, shape: crate::PassShape) {
        self.prof.set_pass_shape(shape);
    }

    pub(crate) fn end_pass(&mut self, tokens: u64) -> Result<()> {
        let r = self.prof.end_pass(tokens);
        // Every pass: a thread's work must not wait for its thread-local destructor, which
        // may run after a `std::thread::scope` has returned.
        self.publish_or_rejoin();
        r
    }

    fn end_replay(&mut self, replay: crate::profiler::Replay, tokens: u64) -> Result<()> {
        let r = self.prof.end_replay(replay, tokens);
        self.publish_or_rejoin(); // as end_pass: a replay is a pass
        r
    }

    fn flush(&mut self) -> Result<()> {
        let r = self.prof.finalize();
        self.publish_or_rejoin();
        r
    }

    /// Join the collector's current measurement after a [`reset`] from another thread: forget
    /// everything this profiler measured (the pass that just ended may have begun before the
    /// reset, and the statistics hold every earlier pass) and register again, under the same
    /// id. Bricks still open become stray; the current layer is kept.
    #[cold]
    fn rejoin(&mut self) {
        self.prof.reset();
        if let Some(n) = self.layer {
            self.prof.begin_layer(n);
        }
        let (id, kind) = (self.id, self.timeline_kind());
        let shelf = self.prof.share();
        self.epoch = with_collector(|c| {
            if !c.threads.iter().any(|t| t.id == id) {
                c.threads.push(Published::new(id, kind, shelf));
            }
            c.epoch
        });
        self.announced = false;
    }

    /// The timeline this thread marks.
    pub(crate) fn timeline_kind(&self) -> TimelineKind {
        self.prof.timeline_kind()
    }

    /// Publish at a pass boundary: the pass is already in this thread's shelf, which the
    /// collector reads, so this only checks that no [`reset`] came since this profiler was made
    /// (a relaxed load), and the first time tells the collector that the thread published.
    /// `false`: a reset came, and what the thread measured is not collected.
    #[inline]
    fn publish(&mut self) -> bool {
        if EPOCH.load(Ordering::Acquire) != self.epoch {
            return false;
        }
        self.announced || self.announce()
    }

    /// Tell the collector, once per registration, that this thread has published.
    #[cold]
    #[inline(never)]
    fn announce(&mut self) -> bool {
        let (id, epoch) = (self.id, self.epoch);
        self.announced = with_collector(|c| {
            if c.epoch != epoch {
                return false;
            }
            if let Some(p) = c.threads.iter_mut().find(|p| p.id == id) {
                p.published = true;
            }
            true
        });
        self.announced
    }

    /// [`Local::publish`] from a thread that goes on measuring: one that finds a [`reset`]
    /// since its profiler was made rejoins the new measurement.
    #[inline]
    fn publish_or_rejoin(&mut self) {
        if !self.publish() {
            self.rejoin();
        }
    }
}

impl Drop for Local {
    fn drop(&mut self) {
        // Thread exit: whatever is pending is resolved into the shelf the collector keeps
        // (which it forgot if a `reset` came since: this thread's passes belong to an older
        // measurement).
        if self.publish_on_drop {
            let _ = self.prof.finalize();
            self.publish();
        }
    }
}

/// Run `f` on the calling thread's profiler, creating it at first use. `None` while the
/// thread is being torn down, or if called from inside `f`.
#[inline(always)]
pub(crate) fn with_local<R>(f: impl FnOnce(&mut Local) -> R) -> Option<R> {
    with_local_from(None, f)
}

/// [`with_local`], creating the profiler (at first use) on the timeline `factory` makes, or
/// else as the global configuration says.
#[inline(always)]
pub(crate) fn with_local_from<R>(
    factory: Option<&TimelineFactory>,
    f: impl FnOnce(&mut Local) -> R,
) -> Option<R> {
    let mut p = FAST.with(Cell::get);
    if p.is_null() {
        p = create_local(factory.map_or(Source::Global, Source::Factory))?;
    }
    // SAFETY: `p` points into the box `OWNER` holds; `Owner::drop` and `reset` null `FAST`
    // before that box is freed, and only this thread reads this thread's `FAST`.
    let cell = unsafe { &*p };
    let mut local = cell.try_borrow_mut().ok()?;
    Some(f(&mut local))
}

/// Create the calling thread's profiler and publish its address in `FAST`.
#[cold]
#[inline(never)]
fn create_local(source: Source<'_>) -> Option<*const RefCell<Local>> {
    OWNER
        .try_with(|owner| {
            let mut owner = owner.try_borrow_mut().ok()?;
            let b = owner
                .0
                .get_or_insert_with(|| Box::new(RefCell::new(Local::new(source))));
            let p: *const RefCell<Local> = &**b;
            FAST.with(|f| f.set(p));
            Some(p)
        })
        .ok()
        .flatten()
}

/// Whether the calling thread has a profiler.
fn has_local() -> bool {
    !FAST.with(Cell::get).is_null()
}

/// Create the calling thread's profiler now (it is otherwise created at the first guard, layer
/// or pass, which allocates once), and return the timeline it marks. After this, guards on this
/// thread never allocate.
///
/// With `timeline` (a device timeline built on this thread: OpenCL, HIP, CUDA, the simulated
/// device, or your own, in a [`BoxedTimeline`]), the thread's guards, layers, passes and
/// `BrickLayer` spans resolve to device time, one sync per pass in Deferred mode, and its
/// profile and trace name the timeline; this fails with [`Error::ThreadHasProfiler`] when the
/// thread already has a profiler (its first guard, layer, pass or an earlier `init_thread`
/// made one; [`reset`] drops it). Without, the thread keeps a profiler it already has, or gets
/// the [`set_timeline_factory`] factory's timeline (else the host clock). The configuration is
/// [`configure`]'s; the module docs have an example. Fails with [`Error::NothingToDo`] only
/// while the thread is being torn down.
pub fn init_thread(timeline: Option<BoxedTimeline>) -> Result<TimelineKind> {
    if let Some(timeline) = timeline {
        if let Some(kind) = timeline_kind() {
            return Err(Error::ThreadHasProfiler {
                timeline: kind.to_string(),
            });
        }
        create_local(Source::Given(timeline));
    }
    with_local(|l| l.timeline_kind()).ok_or(Error::NothingToDo {
        what: "the thread is being torn down",
        hint: "call brickprof::thread::init_thread while the thread runs",
    })
}

/// The timeline the calling thread's profiler marks; `None` before it has one.
fn timeline_kind() -> Option<TimelineKind> {
    if !has_local() {
        return None;
    }
    with_local(|l| l.timeline_kind())
}

/// An open brick on the calling thread; it stops the brick when it drops. Made by [`start`] or
/// [`brick!`](macro@crate::brick). `!Send`: it must drop on the thread that started it.
///
/// ```compile_fail
/// fn needs_send<T: Send>(_: T) {}
/// needs_send(brickprof::brick!(brickprof::BrickId::RmsNorm));
/// ```
#[must_use = "the brick stops when the guard drops; bind it: `let _g = brick!(...)`"]
pub struct BrickGuard {
    token: Option<BrickToken>,
    work: Work,
    _not_send: PhantomData<*const ()>,
}

impl BrickGuard {
    /// Set the work done (elements, FLOPs, bytes) recorded when the guard drops
    /// (`Work::elements(n)`: what `stop_brick(token, n)` records).
    #[inline(always)]
    pub fn set_work(&mut self, work: Work) {
        if self.token.is_some() {
            self.work = work;
        }
    }

    /// Whether this guard will record a measurement (measuring was on when it started).
    #[cfg(test)]
    pub(crate) fn is_live(&self) -> bool {
        self.token.is_some()
    }
}

impl Drop for BrickGuard {
    #[inline(always)]
    fn drop(&mut self) {
        // A disabled guard folds to this one branch.
        if let Some(token) = &self.token {
            stop_guarded(move_out(token), self.work);
        }
    }
}

/// A live guard's stop, out of line: the profiler's stop is inlined here, which keeps the
/// guard's drop small enough to inline into the caller, so a disabled guard costs one branch.
#[inline(never)]
fn stop_guarded(token: BrickToken, work: Work) {
    with_local(|l| l.stop(token, work));
}

/// Move a token out of a guard that is being dropped, reading it in the 4-byte words `start`
/// wrote it in.
///
/// Why not `take()` or a plain move: the compiler copies the 12-byte token into the argument
/// of the profiler's stop with an 8-byte and a 4-byte load. `start` wrote it with three 4-byte
/// stores a few nanoseconds earlier, still in the store buffer, and a load spanning two of them
/// cannot be forwarded: a store-forwarding stall of about 15 cycles on every guard, most of the
/// gap to the explicit pair. Volatile word loads keep the compiler from merging them again.
#[inline(always)]
fn move_out(token: &BrickToken) -> BrickToken {
    const WORDS: usize = 3;
    const _: () = assert!(
        std::mem::size_of::<BrickToken>() == WORDS * 4 && std::mem::align_of::<BrickToken>() == 4,
        "BrickToken changed layout: revisit thread::move_out"
    );
    let p = std::ptr::from_ref(token).cast::<MaybeUninit<u32>>();
    // SAFETY: `token` is 12 bytes aligned to 4 (checked above), so these are three in-bounds,
    // aligned `MaybeUninit<u32>` reads (no byte needs to be initialised).
    let words: [MaybeUninit<u32>; WORDS] = unsafe {
        [
            p.read_volatile(),
            p.add(1).read_volatile(),
            p.add(2).read_volatile(),
        ]
    };
    // SAFETY: `words` holds every byte of a valid `BrickToken`, copied as they are. The caller
    // drops the guard after this, so the token is never used twice (it owns nothing anyway).
    unsafe { std::mem::transmute::<[MaybeUninit<u32>; WORDS], BrickToken>(words) }
}

/// Start timing `brick` on the calling thread; the returned guard stops it when it drops.
/// Disabled: one relaxed load and a branch.
#[inline(always)]
pub fn start(brick: impl Into<BrickHandle>) -> BrickGuard {
    let token = if is_enabled() {
        let brick = brick.into();
        with_local(|l| l.start(brick)).filter(BrickToken::is_live)
    } else {
        None
    };
    BrickGuard {
        token,
        work: Work::NONE,
        _not_send: PhantomData,
    }
}

/// Time a scope as a brick on the calling thread's profiler:
/// `let _g = brick!(BrickId::RmsNorm);` or, with the elements processed,
/// `let _g = brick!(BrickId::RmsNorm, n);`. The brick stops when the guard drops.
#[macro_export]
macro_rules! brick {
    ($brick:expr) => {
        $crate::thread::start($brick)
    };
    ($brick:expr, $elements:expr) => {{
        let mut guard = $crate::thread::start($brick);
        guard.set_work($crate::Work::elements($elements));
        guard
    }};
}

/// Bricks started on this thread while the guard lives are attributed to one layer; dropping
/// it restores the layer before. `!Send`.
#[must_use = "the layer ends when the guard drops; bind it: `let _l = layer(n)`"]
pub struct LayerGuard {
    before: Option<usize>,
    live: bool,
    _not_send: PhantomData<*const ()>,
}

impl Drop for LayerGuard {
    fn drop(&mut self) {
        if self.live {
            let before = self.before;
            with_local(|l| l.set_layer(before));
        }
    }
}

/// Attribute the calling thread's bricks to layer `n` until the guard drops. An index past the
/// configured layers is counted and lands in the `unassigned` row. Disabled: a load and a branch.
#[inline]
pub fn layer(n: usize) -> LayerGuard {
    let before = if is_enabled() {
        with_local(|l| l.set_layer(Some(n)))
    } else {
        None
    };
    LayerGuard {
        live: before.is_some(),
        before: before.flatten(),
        _not_send: PhantomData,
    }
}

/// Mark the start of a forward pass on the calling thread (optional; see
/// [`BrickProfiler::begin_pass`]).
pub fn begin_pass() {
    if is_enabled() {
        with_local(Local::begin_pass);
    }
}

/// Give the calling thread's current pass `shape`: its bricks and wall time go into the books of
/// the shape's [`crate::Phase`] (see [`BrickProfiler::set_pass_shape`]). After [`begin_pass`],
/// or alone for a pass that runs from the previous [`end_pass`].
///
/// ```
/// use brickprof::{brick, thread as bp, BrickId, PassShape, Phase, ProfilerConfig};
///
/// bp::configure(ProfilerConfig::with_layers(1))?;
/// bp::set_enabled(true);
/// std::thread::spawn(|| {
///     bp::begin_pass();
///     bp::set_pass_shape(PassShape::new(32, 1, 32).unwrap()); // the prompt
///     { let _g = brick!(BrickId::QkvProjection); }
///     bp::end_pass(32).unwrap();
/// })
/// .join()
/// .unwrap();
/// let profile = bp::collect()?;
/// assert_eq!(profile.phase_passes(Phase::Prefill).summary().count, 1);
/// # bp::set_enabled(false);
/// # Ok::<(), brickprof::Error>(())
/// ```
pub fn set_pass_shape(shape: crate::PassShape) {
    if is_enabled() {
        with_local(|l| l.set_pass_shape(shape));
    }
}

/// End a forward pass on the calling thread that produced `tokens` tokens: resolve its pending
/// bricks, count the pass, and publish the thread's statistics to the collector. A no-op while
/// disabled.
///
/// The rule: what a thread did up to its last `end_pass` (or [`flush`]) is collected. A
/// thread's exit publishes too, but its thread-local destructor may run after
/// [`std::thread::scope`] has returned, so end the thread's work with `end_pass` or `flush`:
///
/// ```
/// use brickprof::{brick, thread as bp, BrickId, ProfilerConfig};
///
/// bp::configure(ProfilerConfig::with_layers(1))?;
/// bp::set_enabled(true);
/// std::thread::scope(|s| {
///     for _ in 0..4 {
///         s.spawn(|| {
///             for _ in 0..3 {
///                 {
///                     let _g = brick!(BrickId::RmsNorm); // your kernel
///                 }
///                 bp::end_pass(1).unwrap(); // published now, not at thread exit
///             }
///         });
///     }
/// });
/// let profile = bp::collect()?; // right after the scope: every thread's 3 passes
/// assert_eq!(profile.meta.counters.passes, 12);
/// # bp::set_enabled(false);
/// # Ok::<(), brickprof::Error>(())
/// ```
pub fn end_pass(tokens: u64) -> Result<()> {
    if !is_enabled() {
        return Ok(());
    }
    with_local(|l| l.end_pass(tokens)).unwrap_or(Ok(()))
}

/// The calling thread's profiler adopts `graph`, the graph its last captured pass was
/// captured into (see [`Graphs::adopt`](crate::profiler::Graphs::adopt); spec/sync-modes.md "Graph capture").
/// A no-op while disabled.
///
/// ```
/// use brickprof::{brick, thread as bp, BrickId, ProfilerConfig, timeline::{BoxedTimeline, SimDevice}};
///
/// bp::configure(ProfilerConfig::with_layers(1))?;
/// bp::set_enabled(true);
/// std::thread::spawn(|| -> brickprof::Result<()> {
///     let device = SimDevice::new(0);
///     bp::init_thread(Some(BoxedTimeline::new(device.timeline(256))))?;
///     let graph = device.capture(|| { // the engine captures its decode step
///         {
///             let _l = bp::layer(0);
///             let _g = brick!(BrickId::AttentionScore);
///             device.launch(250_000);
///         }
///         bp::end_pass(1) // captured: kept as the template
///     })?;
///     bp::adopt_graph(graph)?;
///     for _ in 0..4 {
///         let replay = bp::begin_replay(graph)?;
///         device.launch_graph(&graph)?;
///         bp::end_replay(replay, 1)?; // a timed pass, published
///     }
///     Ok(())
/// })
/// .join()
/// .unwrap()?;
/// let profile = bp::collect()?;
/// let attention = profile.brick("AttentionScore").unwrap().stats.summary();
/// assert_eq!((attention.count, attention.total_ns), (4, 1_000_000));
/// assert_eq!(profile.meta.counters.graph_replays, 4);
/// # bp::set_enabled(false);
/// # bp::reset();
/// # Ok::<(), brickprof::Error>(())
/// ```
pub fn adopt_graph(graph: crate::timeline::DeviceGraph) -> Result<()> {
    if !is_enabled() {
        return Ok(());
    }
    with_local(|l| l.prof.adopt_graph(graph)).unwrap_or(Ok(()))
}

/// Just before the calling thread launches `graph`: a replay pass begins on its profiler
/// (see [`Graphs::begin_replay`](crate::profiler::Graphs::begin_replay)); a shaped replay:
/// [`set_pass_shape`] after it. While disabled, an inert replay that ends nothing.
pub fn begin_replay(graph: crate::timeline::DeviceGraph) -> Result<crate::profiler::Replay> {
    if !is_enabled() {
        return Ok(crate::profiler::Replay::inert());
    }
    with_local(|l| l.prof.begin_replay(graph))
        .unwrap_or_else(|| Ok(crate::profiler::Replay::inert()))
}

/// Just after the calling thread launched the graph of `replay`: the replay pass ends, as
/// [`end_pass`] ends a pass, and the thread publishes (see [`Graphs::end_replay`](crate::profiler::Graphs::end_replay)).
pub fn end_replay(replay: crate::profiler::Replay, tokens: u64) -> Result<()> {
    if replay.is_inert() || !has_local() {
        // Begun while measuring was off: nothing to end, nothing to publish (as `end_pass`).
        return Ok(());
    }
    with_local(|l| l.end_replay(replay, tokens)).unwrap_or(Ok(()))
}

/// The calling thread's engine destroyed `graph` (see [`Graphs::forget`](crate::profiler::Graphs::forget)).
pub fn forget_graph(graph: crate::timeline::DeviceGraph) {
    if has_local() {
        with_local(|l| l.prof.forget_graph(graph));
    }
}

/// Resolve the calling thread's pending bricks and publish its statistics now.
pub fn flush() -> Result<()> {
    with_local(Local::flush).unwrap_or(Ok(()))
}

/// Every registered thread's statistics merged into one [`Profile`]: the calling thread as of
/// now, every other thread as of its last publication ([`flush`], its last [`end_pass`], or
/// its exit). Errors when threads were configured differently (their profiles do not merge) or no
/// thread has measured anything.
pub fn collect() -> Result<Profile> {
    let flushed = if has_local() { flush() } else { Ok(()) };
    // The shelves out of the collector's lock, then each built under its own lock (its thread
    // waits at its next pass's end only while its own profile is being built).
    let shelves: Vec<ShelfReader> = with_collector(|c| {
        c.threads
            .iter()
            .filter(|t| t.published)
            .map(|t| t.shelf.clone())
            .collect()
    });
    let mut profiles = shelves.iter().map(|s| {
        let ledger = s.lock();
        crate::profiler::profile_of(&ledger, ledger.facts())
    });
    let mut merged = profiles.next().ok_or(Error::NothingToDo {
        what: "no thread has published a profile",
        hint: "enable measuring (brickprof::thread::set_enabled(true)) and time bricks before collecting",
    })?;
    for p in profiles {
        merged.merge(&p)?;
    }
    flushed.map(|()| merged)
}

/// A Chrome trace (JSON text) of every registered thread whose configuration has a trace capacity: each
/// thread is its own process track (named after the thread), its layers the tracks inside.
/// `None` when no thread traced. Same freshness as [`collect`]; each traced thread's shelf is
/// locked while the trace is built.
pub fn collect_trace() -> Option<String> {
    if has_local() {
        let _ = flush();
    }
    let threads: Vec<(ShelfReader, u32, String, TimelineKind)> = with_collector(|c| {
        c.threads
            .iter()
            .filter(|t| t.published)
            .map(|t| (t.shelf.clone(), t.id, t.name.clone(), t.timeline))
            .collect()
    });
    let ledgers: Vec<_> = threads.iter().map(|(s, ..)| s.lock()).collect();
    let parts: Vec<ThreadTrace<'_>> = ledgers
        .iter()
        .zip(&threads)
        .filter_map(|(ledger, (_, id, name, _))| {
            Some(ThreadTrace {
                buffer: ledger.trace()?,
                registry: ledger.registry(),
                meta: crate::profiler::run_meta_of(ledger, ledger.facts()),
                pid: *id,
                name,
            })
        })
        .collect();
    (!parts.is_empty()).then(|| build_threads(&parts))
}

/// Start a fresh measurement: forget every thread's published statistics, every thread that
/// registered before now, and the calling thread's profiler. Dynamic bricks stay registered.
///
/// The rule: **nothing a thread measured before `reset` is collected after it.** A thread may
/// still publish after `reset` returns: a scoped thread's exit (its thread-local destructor
/// can run after [`std::thread::scope`] has returned), or a thread that keeps running. Each
/// thread profiler is tagged with the reset count it was made under, and a publication tagged
/// with an older one is dropped. A thread that keeps running across `reset` (a pool's worker)
/// rejoins at its next [`end_pass`] or [`flush`]: that publication is dropped, together with
/// everything the thread measured up to it (its profiler cannot tell which of those bricks ran
/// before the reset), and from its next pass on it is collected again.
///
/// ```
/// use brickprof::{brick, thread as bp, BrickId, ProfilerConfig};
///
/// bp::configure(ProfilerConfig::with_layers(1))?;
/// bp::set_enabled(true);
/// for _round in 0..3 {
///     std::thread::scope(|s| {
///         s.spawn(|| {
///             drop(brick!(BrickId::RmsNorm)); // your kernel
///             bp::end_pass(1).unwrap();
///         });
///     });
///     // This round's thread only: an earlier round's thread that published again while
///     // exiting, after the `reset` below, is not counted.
///     assert_eq!(bp::collect()?.meta.counters.passes, 1);
///     bp::reset();
/// }
/// # bp::set_enabled(false);
/// # Ok::<(), brickprof::Error>(())
/// ```
pub fn reset() {
    let _ = OWNER.try_with(|owner| {
        if let Ok(mut owner) = owner.try_borrow_mut() {
            FAST.with(|p| p.set(std::ptr::null())); // before the box goes away
            if let Some(local) = owner.0.take() {
                let mut local = local.into_inner();
                // Dropping would publish: detach it from the collector instead.
                local.publish_on_drop = false;
                drop(local);
            }
        }
    });
    with_collector(|c| {
        // Under the lock, so a thread registers either before (and is forgotten here) or after
        // (under the new count). A thread made before sees the new count at its next pass.
        c.epoch += 1;
        EPOCH.store(c.epoch, Ordering::Release);
        c.threads.clear();
    });
}
