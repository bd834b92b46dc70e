//! The NVIDIA timelines without a GPU (spec/sync-modes.md "CUDA", "Graph capture", "CUPTI"):
//! with no driver, the typed error (`cuda`); the real FFI path against the stand-in driver
//! (`cuda_standin`, `cuda_graph_standin`, `cuda_graph_profiler`) and, with the `cupti` feature,
//! the stand-in CUPTI (`cupti_standin`). Needs the `cuda` feature. Each file is a module.
//!
//! `cuda` expects this process to find no CUDA driver (or the machine's real one). The stand-ins
//! are never loaded here: each parent test compiles its stand-in and re-runs this binary's
//! ignored child test alone (`--exact`, `--test-threads=1`) in a process of its own, with the
//! stand-in first on `LD_LIBRARY_PATH`; so one binary is safe for all of them.

#[path = "../common/mod.rs"]
mod common;

mod cuda;
mod cuda_graph_profiler;
mod cuda_graph_standin;
mod cuda_standin;
#[cfg(feature = "cupti")]
mod cupti_standin;
