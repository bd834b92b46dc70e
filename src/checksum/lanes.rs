//! The summary's lane accumulators ([`Acc`]): what one pass over memory updates per value, in
//! the order every code path (portable, AVX2, AVX-512) performs it. A leaf: the pass
//! (`pass.rs`) feeds it, the summary (`summary.rs`) finishes it into a [`super::TensorSummary`].

/// Independent lanes per summary pass; element `k` of a tensor goes to lane `k % 16`.
pub(crate) const ACC_LANES: usize = 16;

/// Rows of [`ACC_LANES`] values per window: each lane sums 16 values in f32, then adds that
/// partial sum to its f64 sum.
pub(crate) const WINDOW_ROWS: usize = 16;

/// Values per window: 256. Windows start at element 0, 256, 512, ... of the tensor.
pub(crate) const WINDOW: usize = ACC_LANES * WINDOW_ROWS;

/// Per-lane accumulators of a [`TensorSummary`] pass over raw values (spec/checksums.md
/// "Summary"): min/max in f32 (exact); the sum and the sum of squares of each window in f32,
/// added to f64 sums at the window's end. Non-finite values are not masked here (that would
/// double the work of the common case): they make the sums non-finite, and [`Acc::finish`]
/// then recomputes the summary in a masked f64 pass. Every code path (portable, AVX2,
/// AVX-512) performs these operations in this order, so summaries are bit-identical.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Acc {
    pub(super) min: [f32; ACC_LANES],
    pub(super) max: [f32; ACC_LANES],
    pub(super) part_sum: [f32; ACC_LANES],
    pub(super) part_sq: [f32; ACC_LANES],
    /// Rows in the current window (0 after a flush).
    pub(super) rows: usize,
    pub(super) sum: [f64; ACC_LANES],
    pub(super) sum_sq: [f64; ACC_LANES],
}

impl Default for Acc {
    fn default() -> Self {
        Acc {
            min: [f32::INFINITY; ACC_LANES],
            max: [f32::NEG_INFINITY; ACC_LANES],
            part_sum: [0.0; ACC_LANES],
            part_sq: [0.0; ACC_LANES],
            rows: 0,
            sum: [0.0; ACC_LANES],
            sum_sq: [0.0; ACC_LANES],
        }
    }
}

impl Acc {
    /// Feed the next values of the tensor, in order. Every call but the last must hold a
    /// multiple of [`ACC_LANES`] values (every block of the hashing pass does: 16, 32 or 64).
    #[inline(always)]
    pub(crate) fn block<X: Copy>(&mut self, c: &[X], decode: impl Fn(X) -> f32) {
        let mut rows = c.chunks_exact(ACC_LANES);
        for row in &mut rows {
            let v: [f32; ACC_LANES] = std::array::from_fn(|i| decode(row[i]));
            self.row(v);
        }
        for (i, &x) in rows.remainder().iter().enumerate() {
            self.update(i, decode(x));
        }
    }

    /// One value per lane; the window's partial sums go to the f64 sums after its last row.
    #[inline(always)]
    fn row(&mut self, v: [f32; ACC_LANES]) {
        for (i, &x) in v.iter().enumerate() {
            self.update(i, x);
        }
        self.rows += 1;
        if self.rows == WINDOW_ROWS {
            self.flush();
        }
    }

    /// A NaN leaves min and max alone (the comparisons are false) and poisons the sums.
    #[inline(always)]
    fn update(&mut self, i: usize, v: f32) {
        self.min[i] = if v < self.min[i] { v } else { self.min[i] };
        self.max[i] = if v > self.max[i] { v } else { self.max[i] };
        self.part_sum[i] += v;
        self.part_sq[i] += v * v;
    }

    /// Add the window's partial sums to the f64 sums and start a new window.
    #[inline(always)]
    pub(super) fn flush(&mut self) {
        for i in 0..ACC_LANES {
            self.sum[i] += f64::from(self.part_sum[i]);
            self.sum_sq[i] += f64::from(self.part_sq[i]);
        }
        self.part_sum = [0.0; ACC_LANES];
        self.part_sq = [0.0; ACC_LANES];
        self.rows = 0;
    }
}
