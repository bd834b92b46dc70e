//! From kernels in ranges to a [`Profile`]: the one place an importer's kernels become brick
//! calls (spec/imports.md "Bricks and calls"). An importer hands each kernel over with its
//! thread, its innermost range and its time; consecutive kernels of one thread in one range
//! instance are one call. A kernel's pass range (`pass/{phase}/{n}`, spec/imports.md "Pass
//! ranges") makes the passes: consecutive kernels of one thread in one pass range are one pass,
//! and each call goes into the books of its pass's phase. Memory: one open call and one open
//! pass a thread and one cell a (brick, row), never one a kernel.

use std::collections::HashMap;
use std::path::Path;

use super::Imported;
use crate::io::json_file::FileKind;
use crate::model::row_key::RowKey;
use crate::profile::{BrickProfile, PhasePasses, RowProfile, PROFILE_FORMAT_VERSION};
use crate::stats::brick_counters::BrickCounters;
use crate::stats::{BrickStats, OutsideBricks};
use crate::timeline::TimelineKind;
use crate::{BrickCategory, BrickId, Error, Phase, Profile, Result, Work};

/// The most threads with an open call at once.
pub(crate) const MAX_THREADS: usize = 4096;
/// The most (brick, row) cells of one import.
pub(crate) const MAX_CELLS: usize = 1 << 16;
/// The longest range name taken as a brick name (bytes).
pub(crate) const MAX_NAME_BYTES: usize = 256;

/// How a kernel's time is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KernelTime {
    /// Its duration only (Nsight Compute: kernels serialised, no timestamps): a call is the
    /// sum of its kernels' durations.
    Duration(u64),
    /// Its start and end on the device clock (rocprofv3): a call runs from its first kernel's
    /// start to its last kernel's end.
    Span { start: u64, end: u64 },
}

impl KernelTime {
    fn busy_ns(self) -> u64 {
        match self {
            KernelTime::Duration(ns) => ns,
            KernelTime::Span { start, end } => end.saturating_sub(start),
        }
    }
}

/// One kernel, as an importer read it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Kernel<'a> {
    /// The line it was read from (for errors).
    pub(crate) line: u64,
    /// The host thread that launched it.
    pub(crate) thread: u64,
    /// Its innermost range's name; `None` outside every range.
    pub(crate) range: Option<&'a str>,
    /// What tells one range instance from the next on the thread (the whole range stack, or
    /// the name): a call ends when it changes.
    pub(crate) instance: &'a str,
    /// Its time.
    pub(crate) time: KernelTime,
    /// Its innermost pass range, if any.
    pub(crate) pass: Option<PassOf<'a>>,
    /// DRAM bytes read and written, when the file has them (`None`: unknown).
    pub(crate) dram_bytes: Option<u64>,
    /// Floating-point operations, when the file has them.
    pub(crate) flops: Option<u64>,
}

/// A kernel's pass range, as an importer read it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PassOf<'a> {
    /// Its name (`pass/decode/17`): the pass's phase, and what tells one pass from the next.
    pub(crate) name: &'a str,
    /// The range's own duration when the file gives it (push to pop on the host); else the
    /// pass's time is its kernels' (as a call's).
    pub(crate) wall_ns: Option<u64>,
}

/// The time of a run of kernels (a call, a pass): their durations summed, or (timestamps)
/// their first start to their last end.
#[derive(Debug, Clone, Copy)]
struct KernelsTime {
    duration_ns: u64,
    first_start: u64,
    last_end: u64,
}

impl KernelsTime {
    const NONE: KernelsTime = KernelsTime {
        duration_ns: 0,
        first_start: u64::MAX,
        last_end: 0,
    };

    fn add(&mut self, time: KernelTime) {
        match time {
            KernelTime::Duration(ns) => self.duration_ns = self.duration_ns.saturating_add(ns),
            KernelTime::Span { start, end } => {
                self.first_start = self.first_start.min(start);
                self.last_end = self.last_end.max(end);
                self.duration_ns = self.last_end.saturating_sub(self.first_start);
            }
        }
    }
}

/// The pass open on one thread.
#[derive(Debug)]
struct OpenPass {
    thread: u64,
    name: String,
    phase: Phase,
    /// The range's own time, when the file gives it.
    wall_ns: Option<u64>,
    time: KernelsTime,
}

/// The call open on one thread.
#[derive(Debug)]
struct OpenCall {
    thread: u64,
    instance: String,
    phase: Phase,
    cell: usize,
    time: KernelsTime,
    kernels: u64,
    dram_bytes: Option<u64>,
    flops: Option<u64>,
}

/// One (brick, row) of the import.
#[derive(Debug)]
struct Cell {
    brick: String,
    row: RowKey,
    /// Its calls, by their pass's phase.
    stats: [BrickStats; Phase::COUNT],
    counters: BrickCounters,
}

/// Collects kernels into calls and calls into a profile.
#[derive(Debug)]
pub(crate) struct ProfileBuilder {
    tool: &'static str,
    /// Whether the file has DRAM byte columns, and FP instruction columns.
    counters_in_file: (bool, bool),
    open: Vec<OpenCall>,
    passes_open: Vec<OpenPass>,
    /// The passes' times, by phase.
    passes: [BrickStats; Phase::COUNT],
    cells: Vec<Cell>,
    index: HashMap<(String, RowKey), usize>,
    outside: OutsideBricks,
    notes: Vec<String>,
}

impl ProfileBuilder {
    /// A builder for the tool `tool` (the timeline's name); `counters_in_file`: whether the
    /// file has DRAM byte columns, and FP instruction columns.
    pub(crate) fn new(tool: &'static str, counters_in_file: (bool, bool)) -> Self {
        ProfileBuilder {
            tool,
            counters_in_file,
            open: Vec::new(),
            passes_open: Vec::new(),
            passes: std::array::from_fn(|_| BrickStats::new()),
            cells: Vec::new(),
            index: HashMap::new(),
            outside: OutsideBricks::default(),
            notes: Vec::new(),
        }
    }

    /// Add a note for the report (a fact about the file the user should know).
    pub(crate) fn note(&mut self, note: String) {
        self.notes.push(note);
    }

    /// Take one kernel. `err` makes an error at a line of the file being read.
    pub(crate) fn kernel(
        &mut self,
        k: &Kernel<'_>,
        err: &dyn Fn(u64, String) -> Error,
    ) -> Result<()> {
        // A pass range given as the innermost range (rocprofv3 names a kernel after it) is no
        // brick: the kernel is outside the bricks.
        let range = k.range.filter(|r| Phase::of_pass_range(r).is_none());
        let phase = self.pass_kernel(k, err)?;
        let at = self.open.iter().position(|c| c.thread == k.thread);
        if let Some(i) = at {
            if range.is_none() || self.open[i].instance != k.instance {
                let call = self.open.swap_remove(i);
                self.close(call);
            }
        }
        let Some(range) = range else {
            self.outside.kernels = self.outside.kernels.saturating_add(1);
            self.outside.busy_ns = self.outside.busy_ns.saturating_add(k.time.busy_ns());
            return Ok(());
        };
        let i = match self.open.iter().position(|c| c.thread == k.thread) {
            Some(i) => i,
            None => {
                room_for_thread(self.open.len(), "ranges").map_err(|m| err(k.line, m))?;
                let (brick, row) = brick_of(range).map_err(|m| err(k.line, m))?;
                let cell = self.cell(brick, row).map_err(|m| err(k.line, m))?;
                self.open.push(OpenCall {
                    thread: k.thread,
                    instance: k.instance.to_string(),
                    phase,
                    cell,
                    time: KernelsTime::NONE,
                    kernels: 0,
                    dram_bytes: Some(0),
                    flops: Some(0),
                });
                self.open.len() - 1
            }
        };
        let c = &mut self.open[i];
        c.kernels += 1;
        c.time.add(k.time);
        c.dram_bytes = add(c.dram_bytes, k.dram_bytes);
        c.flops = add(c.flops, k.flops);
        Ok(())
    }

    /// Count `k` in its thread's open pass (closing the pass before when `k` is in another
    /// pass or in none): the phase of the pass it is in.
    fn pass_kernel(&mut self, k: &Kernel<'_>, err: &dyn Fn(u64, String) -> Error) -> Result<Phase> {
        let at = self.passes_open.iter().position(|p| p.thread == k.thread);
        if let Some(i) = at {
            if k.pass.is_none_or(|p| p.name != self.passes_open[i].name) {
                let pass = self.passes_open.swap_remove(i);
                self.close_pass(&pass);
            }
        }
        let Some(pass) = k.pass else {
            return Ok(Phase::Unspecified);
        };
        let Some(phase) = Phase::of_pass_range(pass.name) else {
            return Ok(Phase::Unspecified);
        };
        let i = match self.passes_open.iter().position(|p| p.thread == k.thread) {
            Some(i) => i,
            None => {
                room_for_thread(self.passes_open.len(), "passes").map_err(|m| err(k.line, m))?;
                self.passes_open.push(OpenPass {
                    thread: k.thread,
                    name: pass.name.to_string(),
                    phase,
                    wall_ns: pass.wall_ns,
                    time: KernelsTime::NONE,
                });
                self.passes_open.len() - 1
            }
        };
        self.passes_open[i].time.add(k.time);
        Ok(phase)
    }

    /// Record a pass: its range's time, else its kernels'.
    fn close_pass(&mut self, pass: &OpenPass) {
        let ns = pass.wall_ns.unwrap_or(pass.time.duration_ns);
        self.passes[pass.phase.index()].record(ns, ns, Work::NONE);
    }

    /// The cell of (brick, row), made on first use.
    fn cell(&mut self, brick: String, row: RowKey) -> std::result::Result<usize, String> {
        if let Some(&i) = self.index.get(&(brick.clone(), row)) {
            return Ok(i);
        }
        if self.cells.len() >= MAX_CELLS {
            return Err(format!("more than {MAX_CELLS} (brick, layer) pairs"));
        }
        let i = self.cells.len();
        self.index.insert((brick.clone(), row), i);
        self.cells.push(Cell {
            counters: BrickCounters::new(
                brick.clone(),
                row,
                self.counters_in_file.0,
                self.counters_in_file.1,
            ),
            brick,
            row,
            stats: std::array::from_fn(|_| BrickStats::new()),
        });
        Ok(i)
    }

    fn close(&mut self, call: OpenCall) {
        let cell = &mut self.cells[call.cell];
        let ns = call.time.duration_ns;
        cell.stats[call.phase.index()].record(ns, 0, Work::NONE);
        cell.counters
            .add_call(call.kernels, ns, call.dram_bytes, call.flops);
    }

    /// Close every open call and build the profile: checked as a loaded file is
    /// ([`Profile::from_loaded`]), so an import is a profile every output takes.
    pub(crate) fn finish(mut self, path: &Path) -> Result<Imported> {
        let mut open = std::mem::take(&mut self.open);
        open.sort_by_key(|c| c.thread);
        for call in open {
            self.close(call);
        }
        let mut passes = std::mem::take(&mut self.passes_open);
        passes.sort_by_key(|p| p.thread);
        for pass in &passes {
            self.close_pass(pass);
        }
        let layers = self
            .cells
            .iter()
            .filter_map(|c| match c.row {
                RowKey::Layer(n) => Some(n + 1),
                RowKey::Model | RowKey::Unassigned => None,
            })
            .max()
            .unwrap_or(0);
        let (bricks, counters) = bricks_of(std::mem::take(&mut self.cells));
        let phase_passes: Vec<PhasePasses> = Phase::ALL
            .into_iter()
            .map(|phase| PhasePasses {
                phase,
                stats: std::mem::replace(&mut self.passes[phase.index()], BrickStats::new()),
            })
            .collect();
        let passes = BrickStats::merged(phase_passes.iter().map(|p| &p.stats));
        let phases: Vec<Phase> = phase_passes
            .iter()
            .filter(|p| !p.stats.is_empty())
            .map(|p| p.phase)
            .collect();
        let timeline = TimelineKind::custom(self.tool)?;
        let mut meta = crate::profile::RunMeta::new(timeline, layers);
        meta.outside_bricks = (!self.outside.is_empty()).then_some(self.outside);
        meta.counters.passes = passes.count();
        if !phases.iter().all(Phase::is_unspecified) {
            meta.phases = phases;
        }
        let profile = Profile {
            kind: FileKind::Profile,
            format_version: PROFILE_FORMAT_VERSION,
            meta,
            bricks,
            categories: Vec::new(),
            unattributed_tiles: Vec::new(),
            passes,
            phase_passes: crate::profile::phases::canonical(phase_passes),
            checksums: None,
            nesting: Vec::new(),
            pass_series: None,
            hardware_counters: counters,
        };
        let profile = Profile::from_loaded(path, profile)?;
        if profile.hardware_counters.is_empty() && self.outside.kernels == 0 {
            self.notes
                .push("the file holds no kernel: the profile is empty".to_string());
        }
        Ok(Imported {
            profile,
            notes: self.notes,
        })
    }
}

/// The cells, sorted, as bricks (one row a phase with calls, in phase order) and their
/// counters (one a cell, in the same order).
fn bricks_of(mut cells: Vec<Cell>) -> (Vec<BrickProfile>, Vec<BrickCounters>) {
    // Built-in bricks in their order, then the others by name; rows in order.
    let order = |name: &str| {
        BrickId::ALL
            .iter()
            .position(|b| b.name() == name)
            .unwrap_or(usize::MAX)
    };
    cells.sort_by(|a, b| {
        (order(&a.brick), &a.brick, a.row).cmp(&(order(&b.brick), &b.brick, b.row))
    });
    let mut bricks: Vec<BrickProfile> = Vec::new();
    let mut counters = Vec::with_capacity(cells.len());
    for cell in cells {
        let rows = Phase::ALL
            .into_iter()
            .zip(cell.stats)
            .filter(|(_, stats)| !stats.is_empty())
            .map(|(phase, stats)| RowProfile {
                phase,
                row: cell.row,
                stats,
            });
        match bricks.last_mut() {
            Some(b) if b.name == cell.brick => b.rows.extend(rows),
            _ => {
                let builtin = BrickId::ALL.iter().find(|b| b.name() == cell.brick);
                bricks.push(BrickProfile {
                    name: cell.brick,
                    category: builtin.map_or(BrickCategory::Other, |b| b.category()),
                    builtin: builtin.is_some(),
                    stats: BrickStats::new(),
                    rows: rows.collect(),
                    tiles: Vec::new(),
                    fits: Vec::new(),
                    host_only: 0,
                });
            }
        }
        counters.push(cell.counters);
    }
    for b in &mut bricks {
        b.stats = BrickStats::merged(b.rows.iter().map(|r| &r.stats));
    }
    (bricks, counters)
}

/// Whether one more thread (beyond `open`) may have an open call or pass (`what`).
fn room_for_thread(open: usize, what: &str) -> std::result::Result<(), String> {
    if open >= MAX_THREADS {
        return Err(format!(
            "more than {MAX_THREADS} threads with kernels in {what}"
        ));
    }
    Ok(())
}

fn add(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    Some(a?.saturating_add(b?))
}

/// The (brick, row) a range named as brickprof names them stands for: `L{layer}/{Brick}` is
/// `Brick` in layer `layer`; any other name is a brick outside layers (spec/imports.md
/// "Range names"). The fault, when the name cannot be a brick.
pub(crate) fn brick_of(range: &str) -> std::result::Result<(String, RowKey), String> {
    let quoted = || format!("{:?}", crate::base::printable::printable(clip(range)));
    if range.len() > MAX_NAME_BYTES {
        return Err(format!(
            "range name {}... is longer than {MAX_NAME_BYTES} bytes",
            quoted()
        ));
    }
    if range.trim().is_empty() {
        return Err("an empty range name".to_string());
    }
    if let Some(rest) = range.strip_prefix('L') {
        if let Some((digits, brick)) = rest.split_once('/') {
            if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
                if brick.is_empty() {
                    return Err(format!("range {} names a layer but no brick", quoted()));
                }
                let layer = digits
                    .parse::<usize>()
                    .ok()
                    .filter(|&n| n < crate::base::limits::MAX_LAYERS)
                    .ok_or_else(|| {
                        format!(
                            "range {}: layer {digits} is over the limit of {} layers",
                            quoted(),
                            crate::base::limits::MAX_LAYERS
                        )
                    })?;
                return Ok((brick.to_string(), RowKey::Layer(layer)));
            }
        }
    }
    Ok((range.to_string(), RowKey::Model))
}

/// At most 64 bytes of `s`, on a character boundary.
fn clip(s: &str) -> &str {
    let mut end = s.len().min(64);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_names() {
        assert_eq!(
            brick_of("L12/RmsNorm").unwrap(),
            ("RmsNorm".to_string(), RowKey::Layer(12))
        );
        assert_eq!(
            brick_of("LmHead").unwrap(),
            ("LmHead".to_string(), RowKey::Model)
        );
        assert_eq!(
            brick_of("Lx/Foo").unwrap(),
            ("Lx/Foo".to_string(), RowKey::Model)
        );
        assert!(brick_of("L3/").is_err());
        assert!(brick_of("L99999/Foo").is_err());
        assert!(brick_of("").is_err());
    }
}
