//! Merging another profiler's statistics into this one (threads of one process).

use super::BrickProfiler;
use crate::timeline::Timeline;
use crate::{BrickCategory, Error, Result};

impl<T: Timeline> BrickProfiler<T> {
    /// Add another profiler's statistics and counters to this one's. Layer counts, sync modes
    /// and timeline kinds must match (as for [`crate::Profile::merge`]); dynamic bricks are
    /// matched by name (registered here if new). Pending measurements of `other` are not
    /// included: finalize it first. The fit sums add; the pass series stays this profiler's
    /// own (a profile's merge keeps runs apart: [`crate::Profile::merge`]).
    pub fn merge<U: Timeline>(&mut self, other: &BrickProfiler<U>) -> Result<()> {
        let (mine, theirs) = (self.timeline().kind(), other.timeline().kind());
        if other.layers() != self.layers()
            || other.sync_mode() != self.sync_mode()
            || theirs != mine
        {
            return Err(Error::Merge(format!(
                "profilers differ in layers/sync mode/timeline: {}/{}/{} vs {}/{}/{}",
                self.layers(),
                self.sync_mode(),
                mine,
                other.layers(),
                other.sync_mode(),
                theirs
            )));
        }
        // Register first, so a failure (a limit) leaves this profiler unchanged.
        let mut mapping = Vec::with_capacity(other.registry().len());
        for h in other.registry().handles() {
            let name = other.registry().name(h).unwrap_or_default();
            let cat = other.registry().category(h).unwrap_or(BrickCategory::Other);
            mapping.push((h, self.register_with_category(name, cat)?));
        }
        let counters = other.counters();
        let theirs_books = &other.ledger().books;
        let mut ledger = self.shelf.write();
        for &(theirs, mine) in &mapping {
            ledger
                .books
                .merge_slot(mine.slot(), theirs_books, theirs.slot());
            ledger
                .tally
                .merge_slot(mine.slot(), &other.ledger().tally, theirs.slot());
        }
        let map = |slot: usize| {
            mapping
                .iter()
                .find(|(t, _)| t.slot() == slot)
                .map(|(_, m)| m.slot())
        };
        ledger.books.merge_nesting(theirs_books, map);
        ledger.books.merge_rest(theirs_books, &counters);
        Ok(())
    }
}
