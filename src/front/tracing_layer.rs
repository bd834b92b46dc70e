//! The `tracing` front door (cargo feature `tracing`): [`BrickLayer`], a tracing-subscriber
//! [`Layer`] that turns the spans an engine already emits into bricks on the thread-local
//! profiler ([`crate::front::thread`]), with no code change in the engine (spec/front-doors.md
//! "tracing layer").
//!
//! ```
//! use brickprof::tracing_layer::{BrickLayer, SpanMap};
//! use brickprof::{thread as bp, ProfilerConfig};
//! use tracing_subscriber::layer::SubscriberExt;
//!
//! bp::configure(ProfilerConfig::with_layers(2))?;
//! bp::set_enabled(true);
//! let subscriber = tracing_subscriber::registry().with(BrickLayer::new(SpanMap::default()));
//! tracing::subscriber::with_default(subscriber, || {
//!     let layers: Vec<_> = (0..2).map(|_| tracing::trace_span!("attn")).collect();
//!     let model = tracing::trace_span!("model");
//!     let _pass = model.enter(); // a pass span: its exit ends the pass
//!     for span in &layers {
//!         let _l = span.enter(); // layer 0, then layer 1 (creation order)
//!         let _rot = tracing::trace_span!("attn-rot").entered(); // RopeEmbedding, same layer
//!     }
//! });
//! let profile = bp::collect()?;
//! assert_eq!(profile.brick("RopeEmbedding").unwrap().rows.len(), 2);
//! assert_eq!(profile.meta.counters.passes, 1);
//! # bp::set_enabled(false);
//! # Ok::<(), brickprof::Error>(())
//! ```
//!
//! Cost: each callsite's rule is looked up once (hashing, at [`Layer::register_callsite`] or the
//! span's creation); each span's brick and layer are computed once, when it is created, and
//! kept in its extensions. Entering and exiting a span read them back (the registry's slab, no
//! hashing, no allocation) and start or stop a brick on the thread's profiler.

use std::cell::RefCell;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use fnv::FnvHashMap;
use tracing::callsite::Identifier;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

use crate::front::thread::{self as bp, with_local, with_local_from, TimelineFactory};
use crate::{
    timeline::BoxedTimeline, BrickCategory, BrickHandle, BrickId, BrickToken, PassShape, Phase,
    Work,
};

/// A brick as a span table names it: built-in, or a dynamic brick registered by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BrickName {
    /// A built-in brick.
    Builtin(BrickId),
    /// A dynamic brick, registered globally the first time a span maps to it.
    Dynamic(String, BrickCategory),
}

impl From<BrickId> for BrickName {
    fn from(id: BrickId) -> Self {
        BrickName::Builtin(id)
    }
}

impl BrickName {
    /// A dynamic brick named `name` in `category`.
    pub(crate) fn dynamic(name: &str, category: BrickCategory) -> Self {
        BrickName::Dynamic(name.to_string(), category)
    }

    fn handle(&self) -> Option<BrickHandle> {
        match self {
            BrickName::Builtin(id) => Some((*id).into()),
            BrickName::Dynamic(name, cat) => bp::register(name, *cat).ok(),
        }
    }
}

/// What spans of one name mean.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpanRule {
    /// A brick in the layer of the enclosing span (or the span's `layer`/`idx` field).
    Brick(BrickName),
    /// A brick that also sets the layer of the spans inside it: from its `layer`/`idx` field,
    /// else from its identity (the n-th span of this name created is layer `n % layers`; an
    /// engine that creates one span per layer, in layer order, gets exact layers).
    Layer(BrickName),
    /// Spans of this name are created in a fixed order, `bricks.len()` per layer after `skip`
    /// leading ones: the n-th (n ≥ skip) is `bricks[(n - skip) % len]` in layer
    /// `(n - skip) / len`. Spans before `skip` or past the last layer are `outside`, in the
    /// model row.
    Instances {
        /// Spans created before the first layer's.
        skip: usize,
        /// The bricks of one layer, in creation order.
        bricks: Vec<BrickName>,
        /// The brick of spans outside every layer.
        outside: BrickName,
    },
    /// A forward pass: entering the outermost one begins a pass, exiting it ends the pass
    /// (one token, or the span's `tokens` field). Not a brick. With a `context` or
    /// `sequences` field (or `phase`: `"prefill"`, `"decode"`, `"mixed"`) the pass has a
    /// shape, [`PassShape::new`]`(tokens, sequences or 1, context or tokens)`, and lands in its
    /// phase's books; a shape that describes no pass leaves it unshaped.
    Pass,
    /// Not timed.
    Ignore,
}

/// The table from span names to [`SpanRule`]s: [`SpanMap::default`]'s rules, each replaced or
/// added by [`SpanMap::with`]. Names not in the table become bricks: a built-in brick if the
/// name parses as one (`rms_norm`, `softmax`, ...), else a dynamic brick of that name (what
/// `SpanRule::Brick(BrickName::Dynamic(name, BrickCategory::Other))` gives a name the defaults
/// have).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpanMap {
    rules: Vec<(String, SpanRule)>,
}

impl Default for SpanMap {
    /// Sensible defaults, including candle-transformers 0.11's quantized Llama spans:
    ///
    /// | span | rule |
    /// |---|---|
    /// | `model`, `forward` | pass |
    /// | `attn` | layer, dynamic brick `Attention` (Attention) |
    /// | `attn-mlp`, `mlp` | layer, dynamic brick `Mlp` (Ffn) |
    /// | `attn-rot`, `rope` | `RopeEmbedding` |
    /// | `qmatmul` | dynamic brick `QMatMul` (Other) |
    /// | `output`, `lm_head` | `LmHead` |
    /// | `rms-norm` | `RmsNorm` |
    /// | `embedding` | `Embedding` |
    /// | `softmax` | `AttentionSoftmax` |
    fn default() -> Self {
        use SpanRule::*;
        let attention = || BrickName::dynamic("Attention", BrickCategory::Attention);
        let mlp = || BrickName::dynamic("Mlp", BrickCategory::Ffn);
        SpanMap {
            rules: vec![
                ("model".into(), Pass),
                ("forward".into(), Pass),
                ("attn".into(), Layer(attention())),
                ("attn-mlp".into(), Layer(mlp())),
                ("mlp".into(), Layer(mlp())),
                ("attn-rot".into(), Brick(BrickId::RopeEmbedding.into())),
                ("rope".into(), Brick(BrickId::RopeEmbedding.into())),
                (
                    "qmatmul".into(),
                    Brick(BrickName::dynamic("QMatMul", BrickCategory::Other)),
                ),
                ("output".into(), Brick(BrickId::LmHead.into())),
                ("lm_head".into(), Brick(BrickId::LmHead.into())),
                ("rms-norm".into(), Brick(BrickId::RmsNorm.into())),
                ("embedding".into(), Brick(BrickId::Embedding.into())),
                ("softmax".into(), Brick(BrickId::AttentionSoftmax.into())),
            ],
        }
    }
}

impl SpanMap {
    /// This table with `name` mapped to `rule` (replacing any rule for `name`).
    pub fn with(mut self, name: &str, rule: SpanRule) -> Self {
        self.rules.retain(|(n, _)| n != name);
        self.rules.push((name.to_string(), rule));
        self
    }

    /// The rule for spans named `name`.
    pub(crate) fn rule(&self, name: &str) -> SpanRule {
        if let Some((_, r)) = self.rules.iter().find(|(n, _)| n == name) {
            return r.clone();
        }
        match name.parse::<BrickId>() {
            Ok(id) => SpanRule::Brick(id.into()),
            Err(_) => SpanRule::Brick(BrickName::dynamic(name, BrickCategory::Other)),
        }
    }
}

/// A callsite's rule with its bricks resolved to handles, and its instance counter.
#[derive(Debug)]
struct Resolved {
    kind: Kind,
    created: AtomicUsize,
}

#[derive(Debug)]
enum Kind {
    Brick(BrickHandle),
    Layer(BrickHandle),
    Instances {
        skip: usize,
        bricks: Vec<BrickHandle>,
        outside: BrickHandle,
    },
    Pass,
    Ignore,
}

/// What one span does when entered, computed once at its creation.
#[derive(Debug, Clone, Copy)]
struct Mapped {
    brick: Option<BrickHandle>,
    /// `Some(row)`: the spans inside it land in `row` (`None`: the model row).
    layer: Option<Option<usize>>,
    /// `Some(fields)`: a pass span.
    pass: Option<PassFields>,
}

/// A pass span's fields, as created and as recorded since ([`Layer::on_record`]).
#[derive(Debug, Clone, Copy, Default)]
struct PassFields {
    tokens: Option<u64>,
    sequences: Option<u64>,
    context: Option<u64>,
    phase: Option<Phase>,
}

impl PassFields {
    fn of(f: &Fields) -> PassFields {
        PassFields {
            tokens: f.tokens,
            sequences: f.sequences,
            context: f.context,
            phase: f.phase,
        }
    }

    /// Fields recorded later replace those given before.
    fn update(&mut self, f: &Fields) {
        let now = PassFields::of(f);
        self.tokens = now.tokens.or(self.tokens);
        self.sequences = now.sequences.or(self.sequences);
        self.context = now.context.or(self.context);
        self.phase = now.phase.or(self.phase);
    }

    /// The pass's tokens: one unless the span says.
    fn tokens(&self) -> u64 {
        self.tokens.unwrap_or(1)
    }

    /// The pass's shape, when the span gives one that describes a pass.
    fn shape(&self) -> Option<PassShape> {
        if self.sequences.is_none() && self.context.is_none() && self.phase.is_none() {
            return None; // `tokens` alone: an unshaped pass, as before shapes
        }
        let tokens = self.tokens();
        let shape = PassShape::new(
            u32::try_from(tokens).ok()?,
            u32::try_from(self.sequences.unwrap_or(1)).ok()?,
            self.context.unwrap_or(tokens),
        )
        .ok()?;
        Some(self.phase.map_or(shape, |p| shape.with_phase(p)))
    }
}

/// One entered span on this thread.
struct Frame {
    id: u64,
    token: Option<BrickToken>,
    layer_before: Option<Option<usize>>,
    pass: Option<u64>,
}

thread_local! {
    static FRAMES: RefCell<Vec<Frame>> = const { RefCell::new(Vec::new()) };
}

/// A tracing-subscriber [`Layer`] that turns spans into bricks on the thread-local profiler.
/// Measuring follows [`crate::front::thread::set_enabled`]; the layer count
/// follows [`crate::front::thread::configure`]. Read the results with [`crate::front::thread::collect`].
/// With [`BrickLayer::with_timeline`], the threads it sees mark a device timeline.
pub struct BrickLayer {
    map: SpanMap,
    /// Makes the timeline of a thread that meets its first span with no profiler yet.
    timeline: Option<TimelineFactory>,
    /// Callsite -> its name's rule; every callsite of one name shares it (and its counter).
    callsites: RwLock<FnvHashMap<Identifier, Arc<Resolved>>>,
    by_name: RwLock<FnvHashMap<&'static str, Arc<Resolved>>>,
}

impl fmt::Debug for BrickLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BrickLayer")
            .field("map", &self.map)
            .field("device_timeline", &self.timeline.is_some())
            .finish()
    }
}

impl BrickLayer {
    /// A layer mapping spans with `map`.
    pub fn new(map: SpanMap) -> Self {
        BrickLayer {
            map,
            timeline: None,
            callsites: RwLock::new(FnvHashMap::default()),
            by_name: RwLock::new(FnvHashMap::default()),
        }
    }

    /// This layer, giving each thread that enters its first span without a profiler the
    /// timeline `factory` makes on that thread (`None`: the host clock). The thread's spans then
    /// resolve to device time, so an engine on a GPU gets its kernels' durations from its own
    /// spans; its profile and trace name the timeline (spec/front-doors.md "Device
    /// timelines"). A thread that already has a profiler keeps its timeline (see
    /// [`crate::front::thread::init_thread`]).
    ///
    /// ```
    /// use brickprof::tracing_layer::{BrickLayer, SpanMap};
    /// use brickprof::{thread as bp, timeline::{BoxedTimeline, SimDevice, TimelineKind}, ProfilerConfig};
    /// use tracing_subscriber::layer::SubscriberExt;
    ///
    /// thread_local! {
    ///     // The engine's device stream on this thread (simulated).
    ///     static DEVICE: SimDevice = SimDevice::new(0);
    /// }
    /// bp::configure(ProfilerConfig::with_layers(1))?;
    /// bp::set_enabled(true);
    /// let layer = BrickLayer::new(SpanMap::default())
    ///     .with_timeline(|| Some(BoxedTimeline::new(DEVICE.with(|d| d.timeline(1024)))));
    /// let subscriber = tracing_subscriber::registry().with(layer);
    /// tracing::subscriber::with_default(subscriber, || {
    ///     for _ in 0..2 {
    ///         let _pass = tracing::trace_span!("model").entered();
    ///         let _attn = tracing::trace_span!("attn").entered(); // layer 0
    ///         let _rope = tracing::trace_span!("rope").entered();
    ///         DEVICE.with(|d| d.launch(80_000)); // an 80 µs kernel inside the span
    ///     } // the pass span's exit ends the pass: one sync, every brick resolved
    /// });
    /// let profile = bp::collect()?;
    /// assert_eq!(profile.meta.timeline, TimelineKind::Sim);
    /// let rope = profile.brick("RopeEmbedding").unwrap().stats.summary();
    /// assert_eq!((rope.count, rope.min_ns), (2, 80_000)); // the kernel's device time
    /// # bp::set_enabled(false);
    /// # bp::reset();
    /// # Ok::<(), brickprof::Error>(())
    /// ```
    pub fn with_timeline<F>(mut self, factory: F) -> Self
    where
        F: Fn() -> Option<BoxedTimeline> + Send + Sync + 'static,
    {
        self.timeline = Some(Arc::new(factory));
        self
    }

    fn resolve(&self, meta: &'static Metadata<'static>) -> Arc<Resolved> {
        let key = meta.callsite();
        if let Some(r) = self
            .callsites
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return Arc::clone(r);
        }
        let resolved = self.resolve_name(meta.name());
        let mut map = self.callsites.write().unwrap_or_else(|e| e.into_inner());
        Arc::clone(map.entry(key).or_insert(resolved))
    }

    /// The rule of spans named `name`, shared by every callsite of that name.
    fn resolve_name(&self, name: &'static str) -> Arc<Resolved> {
        if let Some(r) = self
            .by_name
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
        {
            return Arc::clone(r);
        }
        // A brick that cannot be registered (every slot taken) leaves its spans untimed.
        let kind = match self.map.rule(name) {
            SpanRule::Brick(b) => b.handle().map_or(Kind::Ignore, Kind::Brick),
            SpanRule::Layer(b) => b.handle().map_or(Kind::Ignore, Kind::Layer),
            SpanRule::Instances {
                skip,
                bricks,
                outside,
            } => {
                let bricks: Option<Vec<BrickHandle>> =
                    bricks.iter().map(BrickName::handle).collect();
                match (bricks, outside.handle()) {
                    (Some(bricks), Some(outside)) if !bricks.is_empty() => Kind::Instances {
                        skip,
                        bricks,
                        outside,
                    },
                    (_, Some(outside)) => Kind::Brick(outside),
                    _ => Kind::Ignore,
                }
            }
            SpanRule::Pass => Kind::Pass,
            SpanRule::Ignore => Kind::Ignore,
        };
        let resolved = Arc::new(Resolved {
            kind,
            created: AtomicUsize::new(0),
        });
        let mut map = self.by_name.write().unwrap_or_else(|e| e.into_inner());
        Arc::clone(map.entry(name).or_insert(resolved))
    }

    fn map_span(&self, attrs: &Attributes<'_>) -> Option<Mapped> {
        let rule = self.resolve(attrs.metadata());
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        let layers = bp::configured_layers();
        let in_range = |l: usize| Some((l < layers).then_some(l));
        let from_field = fields.layer.map(|l| Some(l as usize));
        let next = || rule.created.fetch_add(1, Ordering::Relaxed);
        let mapped = match &rule.kind {
            Kind::Ignore => return None,
            Kind::Pass => Mapped {
                brick: None,
                layer: None,
                pass: Some(PassFields::of(&fields)),
            },
            Kind::Brick(h) => Mapped {
                brick: Some(*h),
                layer: from_field,
                pass: None,
            },
            Kind::Layer(h) => Mapped {
                brick: Some(*h),
                layer: from_field.or_else(|| Some(Some(next() % layers.max(1)))),
                pass: None,
            },
            Kind::Instances {
                skip,
                bricks,
                outside,
            } => {
                let n = next();
                let (brick, layer) = match n.checked_sub(*skip) {
                    Some(j) if j / bricks.len() < layers => {
                        (bricks[j % bricks.len()], in_range(j / bricks.len()))
                    }
                    _ => (*outside, Some(None)),
                };
                Mapped {
                    brick: Some(brick),
                    layer: from_field.or(layer),
                    pass: None,
                }
            }
        };
        Some(mapped)
    }
}

/// The fields a span may carry: `layer` or `idx` (its layer); a pass span's `tokens`,
/// `context` (context tokens attended, summed over sequences), `sequences` and `phase`
/// (spec/front-doors.md "tracing layer").
#[derive(Default)]
struct Fields {
    layer: Option<u64>,
    tokens: Option<u64>,
    context: Option<u64>,
    sequences: Option<u64>,
    phase: Option<Phase>,
}

impl Visit for Fields {
    fn record_u64(&mut self, field: &Field, value: u64) {
        match field.name() {
            "layer" | "idx" => self.layer = Some(value),
            "tokens" => self.tokens = Some(value),
            "context" => self.context = Some(value),
            "sequences" => self.sequences = Some(value),
            _ => {}
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "phase" {
            // Anything else than a phase's name leaves the phase to the shape.
            self.phase = value.parse().ok();
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        if let Ok(v) = u64::try_from(value) {
            self.record_u64(field, v);
        }
    }

    fn record_debug(&mut self, _field: &Field, _value: &dyn fmt::Debug) {}
}

impl<S> Layer<S> for BrickLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        if metadata.is_span() {
            self.resolve(metadata);
        }
        Interest::always()
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(mapped) = self.map_span(attrs) else {
            return;
        };
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(mapped);
        }
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        if !bp::is_enabled() {
            return;
        }
        let Some(mapped) = ctx
            .span(id)
            .and_then(|s| s.extensions().get::<Mapped>().copied())
        else {
            return;
        };
        let _ = FRAMES.try_with(|frames| {
            let Ok(mut frames) = frames.try_borrow_mut() else {
                return;
            };
            if frames.capacity() == 0 {
                frames.reserve(64);
            }
            let outermost_pass = mapped.pass.is_some() && !frames.iter().any(|f| f.pass.is_some());
            let shape = mapped.pass.and_then(|p| p.shape());
            let (token, layer_before) = with_local_from(self.timeline.as_ref(), |l| {
                match (outermost_pass, shape) {
                    (true, Some(shape)) => {
                        l.begin_pass();
                        l.set_pass_shape(shape);
                    }
                    (true, None) => l.begin_pass(),
                    _ => {}
                }
                let before = mapped.layer.map(|row| l.set_layer(row));
                (mapped.brick.map(|b| l.start(b)), before)
            })
            .unwrap_or((None, None));
            frames.push(Frame {
                id: id.into_u64(),
                token,
                layer_before,
                pass: mapped.pass.filter(|_| outermost_pass).map(|p| p.tokens()),
            });
        });
    }

    /// A pass span's `tokens`, `context`, `sequences` or `phase` recorded after its creation
    /// (`span.record("context", n)`) count from its next entry.
    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else {
            return;
        };
        let mut ext = span.extensions_mut();
        let Some(Mapped {
            pass: Some(pass), ..
        }) = ext.get_mut::<Mapped>()
        else {
            return;
        };
        let mut fields = Fields::default();
        values.record(&mut fields);
        pass.update(&fields);
    }

    fn on_exit(&self, id: &Id, _ctx: Context<'_, S>) {
        let _ = FRAMES.try_with(|frames| {
            let Ok(mut frames) = frames.try_borrow_mut() else {
                return;
            };
            let id = id.into_u64();
            let Some(at) = frames.iter().rposition(|f| f.id == id) else {
                return; // entered while measuring was off
            };
            // Spans exited out of order: the ones above close with it.
            while frames.len() > at {
                let Some(f) = frames.pop() else { break };
                with_local(|l| {
                    if let Some(t) = f.token {
                        l.stop(t, Work::NONE);
                    }
                    if let Some(before) = f.layer_before {
                        l.set_layer(before);
                    }
                    if let Some(tokens) = f.pass {
                        // A failed resolve is counted in the profile's dropped measurements.
                        let _ = l.end_pass(tokens);
                    }
                });
            }
        });
    }
}
