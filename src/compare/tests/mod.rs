//! Unit tests of the comparison layer that reach its internals: the timing verdicts' measured
//! rates (`timing_verdicts`), the verdict rule's invariants (`timing_verdict_props`) and the
//! elementwise error statistics' invariants (`metrics_props`).

mod metrics_props;
mod timing_verdict_props;
mod timing_verdicts;
