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
    pub(crate) fn tools(&self) -> Vec<&'static str> {
        let mut t = Vec::new();
        if cfg!(feature = "nvtx") {
            t.push("nvtx");
        }
        #[cfg(feature = "roctx")]
        if self.roctx.is_some() {
            t.push("roctx");
        }
        t
    }

    /// The range name pushed for (row, slot), if any.
    pub(crate) fn name_of(&self, row: Row, slot: u16) -> Option<&CString> {
        self.names
            .get(slot as usize * self.rows.count() + row.index())
    }

    /// Open the range of (row, slot). Hot path: no allocation.
    #[inline]
    pub(crate) fn push(&self, row: Row, slot: u16) {
        let Some(name) = self.name_of(row, slot) else {
            return;
        };
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
}
