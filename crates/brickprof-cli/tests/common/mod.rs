//! Helpers shared by the CLI's integration tests: the library's deterministic profile, included
//! from its tests by path (one copy), and running the binary (common/cli.rs).

#![allow(dead_code)]

/// Running the binary as a user would.
pub mod cli;

#[path = "../../../../tests/common/fixed.rs"]
mod fixed;
#[allow(unused_imports)] // not every test uses it
pub use fixed::*;

/// Files whose fixed-choice fields hold a terminal escape sequence (the library's copy).
#[path = "../../../../tests/common/hostile.rs"]
pub mod hostile;

/// Every JUnit and SVG file parsed as XML 1.0 (the library's copy).
#[path = "../../../../tests/common/xml.rs"]
pub mod xml;
