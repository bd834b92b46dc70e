//! Unit tests of the comparison layer that reach its internals: the timing verdicts' measured
//! rates (`timing_verdicts`), the verdict rule's invariants (`timing_verdict_props`) and the
//! elementwise error statistics' invariants (`metrics_props`), a timing diff's
//! rows phase by phase (`timing_diff_phases`), the size each verdict is asked about
//! (`verdict_asks`).

mod metrics_props;
mod timing_diff_phases;
mod timing_verdict_props;
mod timing_verdicts;
mod verdict_asks;
