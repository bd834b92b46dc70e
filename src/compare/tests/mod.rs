//! Unit tests of the comparison layer that reach its internals: the timing verdicts' measured
//! rates (`timing_verdicts`) and the verdict rule's invariants (`timing_verdict_props`).

mod timing_verdict_props;
mod timing_verdicts;
