//! Outputs (spec/profile-format.md "Reports", spec/html-report.md): the output formats as one
//! list, the table layouts against golden files, the HTML report, the brick tree (folded
//! stacks, DOT) and the phase-aware exports. One test binary for the layer; each file is a
//! module.

#[path = "../common/mod.rs"]
mod common;

mod brick_tree;
mod html_report;
mod outputs;
mod phase_exports;
mod table_golden;
