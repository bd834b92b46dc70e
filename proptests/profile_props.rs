//! spec/profile-format.md "Merging".

use brickprof::{Profile, ProfilerConfig};
use proptest::prelude::*;

use crate::common::{mock_profiler, record, samples};

fn profile_of(s: &[crate::common::Sample], host: &str) -> Profile {
    let (mock, mut prof) = mock_profiler(ProfilerConfig::with_layers(2));
    record(&mut prof, &mock, s);
    prof.end_pass(s.len() as u64).unwrap();
    let mut p = prof.profile();
    p.meta.host = host.to_string();
    p.meta.created_unix_s = s.len() as u64;
    p
}

proptest! {
    /// Invariant: Profile::merge is commutative and associative (whole profiles compare equal,
    /// metadata included), and merging equals profiling everything in one run.
    #[test]
    fn profile_merge_is_associative_and_commutative(
        a in samples(2, 30), b in samples(2, 30), c in samples(2, 30),
    ) {
        let (pa, pb, pc) = (profile_of(&a, "h1"), profile_of(&b, "h2"), profile_of(&c, "h1"));
        let mut ab = pa.clone(); ab.merge(&pb).unwrap();
        let mut ba = pb.clone(); ba.merge(&pa).unwrap();
        prop_assert_eq!(&ab, &ba);
        let mut ab_c = ab.clone(); ab_c.merge(&pc).unwrap();
        let mut bc = pb.clone(); bc.merge(&pc).unwrap();
        let mut a_bc = pa.clone(); a_bc.merge(&bc).unwrap();
        prop_assert_eq!(&ab_c, &a_bc);
        prop_assert_eq!(ab_c.meta.merged_from, 3);
        let all: Vec<_> = a.iter().chain(&b).chain(&c).copied().collect();
        let one = profile_of(&all, "h1");
        for brick in &one.bricks {
            let merged = ab_c.brick(&brick.name).unwrap();
            prop_assert_eq!(&merged.stats, &brick.stats);
            prop_assert_eq!(&merged.rows, &brick.rows);
        }
        prop_assert_eq!(ab_c.total_ns(), one.total_ns());
    }
}
