//! Vendor tool ranges (cargo features `nvtx` and `roctx`): with
//! [`crate::ProfilerConfig::vendor_ranges`] on, every brick is also a range named
//! `L{layer}/{Brick}` (or `{Brick}` outside layers) for NVIDIA Nsight Systems (NVTX, through
//! the `nvtx` crate) and for rocprofv3 (roctx, `libroctx64.so` loaded at run time when present),
//! so those tools show brickprof's names next to their kernels (rocprofv3:
//! `--kernel-rename`). Off by default. Built without either feature, the profiler has no range
//! code at all; built with one and switched off, a brick pays one branch.
//!
//! Names are built once per (layer row, brick) when the profiler is created and when a brick
//! is registered, so pushing a range on the hot path allocates nothing.
//!
//! Each pass begun with `begin_pass` is a range too, `pass/{phase}/{index}`
//! (spec/imports.md "Pass ranges"), pushed at `begin_pass` and popped at `end_pass`, so the
//! bricks' ranges nest inside it: its name is written into one reused buffer (a pass boundary,
//! not the hot path).

use std::ffi::CString;

use crate::model::grid::{Row, Rows};
use crate::model::registry::BrickRegistry;
use crate::model::row_key::RowKey;

/// roctx, loaded at run time.
#[cfg(feature = "roctx")]
struct Roctx {
    push: unsafe extern "C" fn(*const std::os::raw::c_char) -> std::os::raw::c_int,
    pop: unsafe extern "C" fn() -> std::os::raw::c_int,
    _lib: libloading::Library,
}

#[cfg(feature = "roctx")]
impl Roctx {
    fn load() -> Option<Roctx> {
        for name in ["libroctx64.so", "libroctx64.so.4", "libroctx64.so.1"] {
            // SAFETY: loading roctx runs no initializer with preconditions we could break.
            let Ok(lib) = (unsafe { libloading::Library::new(name) }) else {
                continue;
            };
            // SAFETY: the C signatures of roctxRangePushA and roctxRangePop.
            let fns = unsafe {
                let push = lib
                    .get::<unsafe extern "C" fn(*const std::os::raw::c_char) -> std::os::raw::c_int>(
                        b"roctxRangePushA\0",
                    )
                    .map(|f| *f);
                let pop = lib
                    .get::<unsafe extern "C" fn() -> std::os::raw::c_int>(b"roctxRangePop\0")
                    .map(|f| *f);
                push.and_then(|p| pop.map(|q| (p, q)))
            };
            if let Ok((push, pop)) = fns {
                return Some(Roctx {
                    push,
                    pop,
                    _lib: lib,
                });
            }
        }
        None
    }
}

/// The range names and the tools they go to.
pub(crate) struct VendorRanges {
    /// `[slot * rows + row]`.
    names: Vec<CString>,
    rows: Rows,
    /// The open pass range's name, NUL-terminated (reused from pass to pass).
    pass_name: Vec<u8>,
    /// Whether a pass range is open.
    pass_open: bool,
    /// The phase in the open pass range's name.
    pass_phase: crate::Phase,
    #[cfg(feature = "roctx")]
    roctx: Option<Roctx>,
}

impl std::fmt::Debug for VendorRanges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VendorRanges")
            .field("names", &self.names.len())
            .field("tools", &self.tools())
            .finish()
    }
}

impl VendorRanges {
    /// Ranges for `layers` layers and the bricks of `registry`.
    pub(crate) fn new(rows: Rows, registry: &BrickRegistry) -> Self {
        let mut r = VendorRanges {
            names: Vec::new(),
            rows,
            pass_name: Vec::with_capacity(40),
            pass_open: false,
            pass_phase: crate::Phase::Unspecified,
            #[cfg(feature = "roctx")]
            roctx: Roctx::load(),
        };
        r.rebuild(registry);
        r
    }

    /// The range name of (row, brick name): `L{layer}/{Brick}`, `{Brick}` outside layers,
    /// `L?/{Brick}` for an out-of-range layer.
    pub(crate) fn name(row: RowKey, brick: &str) -> String {
        match row {
            RowKey::Layer(l) => format!("L{l}/{brick}"),
            RowKey::Model => brick.to_string(),
            RowKey::Unassigned => format!("L?/{brick}"),
        }
    }

    /// Rebuild the names after a brick was registered (not on the hot path).
    pub(crate) fn rebuild(&mut self, registry: &BrickRegistry) {
        self.names.clear();
        for h in registry.handles() {
            let brick = registry.name(h).unwrap_or("?");
            for row in self.rows.iter() {
                let name = Self::name(self.rows.kind(row), brick).replace('\0', " ");
                self.names
                    .push(CString::new(name).unwrap_or_else(|_| CString::default()));
            }
        }
    }

    /// The tools ranges go to: "nvtx" (the feature; NVTX is free until a tool attaches) and
    /// "roctx" (when the library loaded).
    pub(crate) fn tools(&self) -> &'static [&'static str] {
        #[cfg(feature = "roctx")]
        let roctx = self.roctx.is_some();
        #[cfg(not(feature = "roctx"))]
        let roctx = false;
        match (cfg!(feature = "nvtx"), roctx) {
            (true, true) => &["nvtx", "roctx"],
            (true, false) => &["nvtx"],
            (false, true) => &["roctx"],
            (false, false) => &[],
        }
    }

    /// The range name pushed for (row, slot), if any.
    pub(crate) fn name_of(&self, row: Row, slot: u16) -> Option<&CString> {
        self.names
            .get(slot as usize * self.rows.count() + row.index())
    }

    /// Open the range of pass `index` of `phase` (closing one still open: a `begin_pass`
    /// without its `end_pass`). A pass boundary: the name is written into a reused buffer.
    pub(crate) fn push_pass(&mut self, phase: crate::Phase, index: u64) {
        use std::io::Write;
        self.pop_pass();
        self.pass_name.clear();
        let _ = write!(
            self.pass_name,
            "{}{phase}/{index}\0",
            crate::model::phase::PASS_RANGE_PREFIX
        );
        let Ok(name) = std::ffi::CStr::from_bytes_with_nul(&self.pass_name) else {
            return;
        };
        self.push_name(name);
        self.pass_open = true;
        self.pass_phase = phase;
    }

    /// Give the open pass range `phase` (closed and opened again under its new name, the
    /// same `index`), when it has another; nothing when no pass range is open. The caller
    /// makes sure no brick range is open inside it.
    pub(crate) fn rename_pass(&mut self, phase: crate::Phase, index: u64) {
        if self.pass_open && self.pass_phase != phase {
            self.push_pass(phase, index);
        }
    }

    /// Close the pass range, if one is open.
    pub(crate) fn pop_pass(&mut self) {
        if std::mem::take(&mut self.pass_open) {
            self.pop();
        }
    }

    /// The pass range's name while one is open.
    #[cfg(test)]
    pub(crate) fn open_pass(&self) -> Option<&str> {
        let name = self.pass_name.strip_suffix(&[0])?;
        self.pass_open
            .then(|| std::str::from_utf8(name).ok())
            .flatten()
    }

    /// Open the range of (row, slot). Hot path: no allocation.
    #[inline]
    pub(crate) fn push(&self, row: Row, slot: u16) {
        let Some(name) = self.name_of(row, slot) else {
            return;
        };
        self.push_name(name);
    }

    /// Open a range named `name` in every tool.
    #[inline]
    fn push_name(&self, name: &std::ffi::CStr) {
        #[cfg(feature = "nvtx")]
        nvtx::sys::range_push_ascii(name);
        #[cfg(feature = "roctx")]
        if let Some(r) = &self.roctx {
            // SAFETY: a NUL-terminated string that outlives the call.
            unsafe {
                (r.push)(name.as_ptr());
            }
        }
        let _ = name;
    }

    /// Close the innermost open range.
    #[inline]
    pub(crate) fn pop(&self) {
        #[cfg(feature = "nvtx")]
        nvtx::sys::range_pop();
        #[cfg(feature = "roctx")]
        if let Some(r) = &self.roctx {
            // SAFETY: pops the range pushed by `push` on this thread.
            unsafe {
                (r.pop)();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_layer_and_brick() {
        assert_eq!(
            VendorRanges::name(RowKey::Layer(2), "RmsNorm"),
            "L2/RmsNorm"
        );
        assert_eq!(VendorRanges::name(RowKey::Model, "LmHead"), "LmHead");
        assert_eq!(
            VendorRanges::name(RowKey::Unassigned, "RmsNorm"),
            "L?/RmsNorm"
        );
        let registry = BrickRegistry::default();
        let rows = Rows::new(2).unwrap();
        let r = VendorRanges::new(rows, &registry);
        let rms = crate::BrickHandle::from(crate::BrickId::RmsNorm).slot() as u16;
        let name = |row| r.name_of(row, rms).unwrap().to_str().unwrap().to_string();
        assert_eq!(name(rows.layer(1)), "L1/RmsNorm");
        assert_eq!(name(rows.model()), "RmsNorm");
    }

    // spec/imports.md "Pass ranges": `pass/{phase}/{index}`, read back as that phase's pass.
    #[test]
    fn pass_ranges_are_named_by_phase_and_index() {
        let mut r = VendorRanges::new(Rows::new(1).unwrap(), &BrickRegistry::default());
        assert_eq!(r.open_pass(), None);
        r.push_pass(crate::Phase::Decode, 17);
        assert_eq!(r.open_pass(), Some("pass/decode/17"));
        assert_eq!(
            crate::Phase::of_pass_range(r.open_pass().unwrap()),
            Some(crate::Phase::Decode)
        );
        r.push_pass(crate::Phase::Unspecified, 18);
        assert_eq!(r.open_pass(), Some("pass/unspecified/18"));
        // A shape given after `begin_pass` renames the open pass range (same index).
        r.rename_pass(crate::Phase::Prefill, 18);
        assert_eq!(r.open_pass(), Some("pass/prefill/18"));
        r.rename_pass(crate::Phase::Prefill, 18);
        assert_eq!(r.open_pass(), Some("pass/prefill/18"));
        r.pop_pass();
        assert_eq!(r.open_pass(), None);
        // No pass range open: nothing to rename, none opened.
        r.rename_pass(crate::Phase::Decode, 19);
        assert_eq!(r.open_pass(), None);
    }
}
