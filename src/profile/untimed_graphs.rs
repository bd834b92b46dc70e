//! [`UntimedGraphs`]: the graphs whose replays a run counted without timing them, by their
//! executable's handle, so that the report can name them (spec/sync-modes.md "Graph capture").
//! Bounded: the first [`UntimedGraphs::MAX`] distinct handles are kept.

/// The executable handles of graphs replayed untimed, each once, in the order first seen;
/// at most [`Self::MAX`]. Fixed size and `Copy`: noting one never allocates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct UntimedGraphs {
    execs: [u64; Self::MAX],
    len: u8,
}

impl UntimedGraphs {
    /// How many distinct graphs are named; replays of others are still counted.
    pub(crate) const MAX: usize = 8;

    /// A replay of `exec` was not timed.
    pub(crate) fn note(&mut self, exec: u64) {
        let len = usize::from(self.len);
        if len < Self::MAX && !self.execs[..len].contains(&exec) {
            self.execs[len] = exec;
            self.len += 1;
        }
    }

    /// The graphs named, in the order first seen.
    pub(crate) fn as_slice(&self) -> &[u64] {
        &self.execs[..usize::from(self.len)]
    }

    /// Forget them all.
    pub(crate) fn clear(&mut self) {
        self.len = 0;
    }
}

/// `a` and `b` as one list of handles, sorted, each once, at most [`UntimedGraphs::MAX`] (the
/// smallest): associative and commutative, for merging runs.
pub(crate) fn union(a: &[u64], b: &[u64]) -> Vec<u64> {
    let mut all: Vec<u64> = a.iter().chain(b).copied().collect();
    all.sort_unstable();
    all.dedup();
    all.truncate(UntimedGraphs::MAX);
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_each_graph_once_up_to_the_bound() {
        let mut u = UntimedGraphs::default();
        for exec in [5, 3, 5, 9, 3] {
            u.note(exec);
        }
        assert_eq!(u.as_slice(), &[5, 3, 9]);
        for exec in 100..120 {
            u.note(exec);
        }
        assert_eq!(u.as_slice().len(), UntimedGraphs::MAX);
        assert_eq!(union(&[9, 1], &[1, 4]), vec![1, 4, 9]);
        assert_eq!(union(&[9, 1], &[1, 4]), union(&[1, 4], &[9, 1]));
    }
}
