//! Outputs (spec/profile-format.md "Reports", spec/html-report.md): the output formats as one
//! list, the table layouts against golden files, the HTML report, the brick tree (folded
//! stacks, DOT) and the phase-aware exports. A module of the library's test binary
//! (tests/library.rs); each file is a module.

mod brick_tree;
mod html_report;
mod one_list;
mod phase_exports;
mod table_golden;
