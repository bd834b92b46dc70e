//! Chains of bricks for the folded stacks ([`super::folded`]): a trie of frames below a row,
//! in which the two cuts of spec/work-accounting.md "Brick tree" happen as a chain grows.
//! - **Recursion.** A brick already on the chain is not added again: the chain stops at its
//!   outer frame, which keeps its time.
//! - **Depth.** At most [`MAX_FRAMES`] brick frames; a brick deeper than that lands on one
//!   [`CUT`] frame under the last of them, with every brick deeper still.

use std::collections::HashMap;

/// The most brick frames a stack has below its row frame.
pub(crate) const MAX_FRAMES: usize = 32;

/// The frame that holds the time of bricks cut off a stack: under the [`MAX_FRAMES`]-th brick
/// frame of a deeper chain, and above a brick whose chain of parents is not drawn.
pub(crate) const CUT: &str = "…";

/// A chain: an index into [`Chains`]. [`Chains::ROOT`] is the empty chain (the row frame).
pub(crate) type Chain = u32;

/// A brick's index in the caller's list of names, or [`CUT_FRAME`].
pub(crate) type Frame = u32;

/// The cut marker as a frame.
pub(crate) const CUT_FRAME: Frame = Frame::MAX;

/// Every chain made so far, each once.
#[derive(Debug)]
pub(crate) struct Chains {
    /// (parent chain, last frame, brick frames) per chain; the root's parent is itself.
    nodes: Vec<(Chain, Frame, u8)>,
    children: HashMap<(Chain, Frame), Chain>,
}

impl Chains {
    /// The empty chain.
    pub(crate) const ROOT: Chain = 0;

    pub(crate) fn new() -> Chains {
        Chains {
            nodes: vec![(Self::ROOT, CUT_FRAME, 0)],
            children: HashMap::new(),
        }
    }

    /// The chain of `brick` nested in the last brick of `chain`, after both cuts.
    pub(crate) fn nest(&mut self, chain: Chain, brick: Frame) -> Chain {
        if let Some(outer) = self.find(chain, brick) {
            return outer; // recursion: the outer frame keeps the time
        }
        let (_, last, depth) = self.nodes[chain as usize];
        if chain != Self::ROOT && last == CUT_FRAME {
            chain
        } else if usize::from(depth) >= MAX_FRAMES {
            self.child(chain, CUT_FRAME)
        } else {
            self.child(chain, brick)
        }
    }

    /// `brick` under a cut marker: a brick whose chain of parents is not drawn.
    pub(crate) fn unplaced(&mut self, brick: Frame) -> Chain {
        let cut = self.child(Self::ROOT, CUT_FRAME);
        self.child(cut, brick)
    }

    /// The frames of `chain`, outermost first.
    pub(crate) fn frames(&self, mut chain: Chain) -> Vec<Frame> {
        let mut out = Vec::new();
        while chain != Self::ROOT {
            let (parent, frame, _) = self.nodes[chain as usize];
            out.push(frame);
            chain = parent;
        }
        out.reverse();
        out
    }

    /// The chain ending at `brick`'s frame within `chain`, if `brick` is on it.
    fn find(&self, mut chain: Chain, brick: Frame) -> Option<Chain> {
        while chain != Self::ROOT {
            let (parent, frame, _) = self.nodes[chain as usize];
            if frame == brick {
                return Some(chain);
            }
            chain = parent;
        }
        None
    }

    fn child(&mut self, chain: Chain, frame: Frame) -> Chain {
        if let Some(&c) = self.children.get(&(chain, frame)) {
            return c;
        }
        let depth = self.nodes[chain as usize].2 + u8::from(frame != CUT_FRAME);
        let c = self.nodes.len() as Chain;
        self.nodes.push((chain, frame, depth));
        self.children.insert((chain, frame), c);
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_cut_recursion_and_depth() {
        // spec/work-accounting.md "Brick tree"
        let mut c = Chains::new();
        let a = c.nest(Chains::ROOT, 1);
        let ab = c.nest(a, 2);
        assert_eq!(c.nest(ab, 1), a, "A in B in A is the outer A");
        assert_eq!(c.nest(a, 1), a);
        let mut deep = Chains::ROOT;
        for b in 0..MAX_FRAMES as Frame {
            deep = c.nest(deep, b + 10);
        }
        assert_eq!(c.frames(deep).len(), MAX_FRAMES);
        let cut = c.nest(deep, 100);
        assert_eq!(c.frames(cut).last(), Some(&CUT_FRAME));
        assert_eq!(c.nest(cut, 101), cut, "deeper still stays on the cut");
        let unplaced = c.unplaced(7);
        assert_eq!(c.frames(unplaced), vec![CUT_FRAME, 7]);
    }
}
