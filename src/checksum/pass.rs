//! The one pass over memory (spec/checksums.md "Summary"): the `fnv1a64-lanes8-v2` lanes and the
//! summary's [`Acc`] lanes over whole windows of 256 values, with the widest code this CPU
//! runs ([`Simd`]): portable Rust, AVX2 or AVX-512. Every path performs the same operations
//! in the same order, so hashes and summaries are bit-identical on every path; only the speed
//! differs.
//!
//! On x86-64 the hash lanes stay scalar (inline assembly: `xor`, `imul`, then `mov`, `shr`,
//! `xor` per lane):
//! left to itself, LLVM turns the eight lanes of a vector function into one vector chain with
//! an emulated 64-bit multiply, latency bound and about 2.5x slower. The scalar multiplies and
//! the summary's vector instructions then use different ports, so the summary costs little.

use std::fmt;

use super::fnv::{hash_block, hash_continue, lane_step, Element, FNV_OFFSET_BASIS, LANES};
use super::lanes::{Acc, WINDOW};

/// Which code computes a checksum's pass over memory. Hashes and summaries are bit-identical
/// on every one; a checksum uses the fastest this CPU has (the first of [`Simd::supported`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Simd {
    /// Plain Rust (every target).
    Portable,
    /// x86-64 AVX2: the summary in two 256-bit registers per 16 lanes.
    Avx2,
    /// x86-64 AVX-512F: the summary in one 512-bit register per 16 lanes.
    Avx512,
}

impl Simd {
    /// Every variant, the portable one first.
    #[cfg(test)]
    pub(crate) const ALL: [Simd; 3] = [Simd::Portable, Simd::Avx2, Simd::Avx512];

    /// The code paths this CPU runs, fastest first: the first is the one a checksum uses, the
    /// last is [`Simd::Portable`].
    ///
    /// ```
    /// use brickprof::checksum::Simd;
    /// assert_eq!(Simd::supported().last(), Some(Simd::Portable));
    /// ```
    pub fn supported() -> impl Iterator<Item = Simd> {
        [Simd::Avx512, Simd::Avx2, Simd::Portable]
            .into_iter()
            .filter(|s| s.is_supported())
    }

    /// The fastest this CPU supports.
    pub(crate) fn detect() -> Simd {
        if Simd::Avx512.is_supported() {
            Simd::Avx512
        } else if Simd::Avx2.is_supported() {
            Simd::Avx2
        } else {
            Simd::Portable
        }
    }

    /// True when this CPU can run it.
    pub(crate) fn is_supported(self) -> bool {
        match self {
            Simd::Portable => true,
            #[cfg(target_arch = "x86_64")]
            Simd::Avx2 => std::arch::is_x86_feature_detected!("avx2"),
            #[cfg(target_arch = "x86_64")]
            Simd::Avx512 => std::arch::is_x86_feature_detected!("avx512f"),
            #[cfg(not(target_arch = "x86_64"))]
            Simd::Avx2 | Simd::Avx512 => false,
        }
    }

    /// The name: `portable`, `avx2`, `avx512`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Simd::Portable => "portable",
            Simd::Avx2 => "avx2",
            Simd::Avx512 => "avx512",
        }
    }
}

impl fmt::Display for Simd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How the elements of a tensor become the f32 values its summary is over.
pub(crate) trait Decode<T: Copy>: Copy {
    /// One element's value.
    fn value(self, x: T) -> f32;

    /// The values of one window: decoded into `buf`, or the window itself when it already is
    /// f32 values.
    #[inline(always)]
    fn window<'a>(self, w: &'a [T], buf: &'a mut [f32; WINDOW]) -> &'a [f32] {
        for (o, &x) in buf.iter_mut().zip(w) {
            *o = self.value(x);
        }
        buf
    }
}

/// f32 elements are their own values (no copy).
#[derive(Clone, Copy)]
pub(crate) struct AsIs;

impl Decode<f32> for AsIs {
    #[inline(always)]
    fn value(self, x: f32) -> f32 {
        x
    }

    #[inline(always)]
    fn window<'a>(self, w: &'a [f32], _: &'a mut [f32; WINDOW]) -> &'a [f32] {
        w
    }
}

impl<T: Copy, F: Fn(T) -> f32 + Copy> Decode<T> for F {
    #[inline(always)]
    fn value(self, x: T) -> f32 {
        self(x)
    }
}

/// The `fnv1a64-lanes8-v2` hash of `data` and the summary lanes of its values, in one pass.
pub(crate) fn hash_summary_pass<T: Element, D: Decode<T>>(
    simd: Simd,
    data: &[T],
    decode: D,
) -> (u64, Acc) {
    let (windows, rest) = data.split_at(data.len() / WINDOW * WINDOW);
    let mut lanes = [FNV_OFFSET_BASIS; LANES];
    let mut acc = Acc::default();
    run_windows::<T, D, true>(simd, &mut lanes, &mut acc, windows, decode);
    // A window is 256, 512 or 1024 bytes: the rest starts at a block boundary.
    let len = std::mem::size_of_val(data) as u64;
    let hash = hash_continue(lanes, rest, len, lane_step, |block| {
        acc.block(block, |x| decode.value(x))
    });
    (hash, acc)
}

/// The `fnv1a64-lanes8-v2` hash of `data` alone. On x86-64 the lanes run in assembly, 256 bytes
/// per call, like the one-pass kernels (no vector instructions needed).
pub(crate) fn hash_pass<T: Element>(data: &[T]) -> u64 {
    let len = std::mem::size_of_val(data) as u64;
    #[cfg(target_arch = "x86_64")]
    {
        // 256 bytes: a whole number of elements of every type.
        let group_bytes = x86::GROUP * super::fnv::BLOCK_BYTES;
        let per_group = group_bytes / std::mem::size_of::<T>();
        let groups = data.len() / per_group;
        let mut lanes = [FNV_OFFSET_BASIS; LANES];
        let p = data.as_ptr().cast::<u8>();
        for g in 0..groups {
            // SAFETY: group `g` lies within `data`.
            unsafe { x86::hash4_asm(&mut lanes, p.add(g * group_bytes)) };
        }
        hash_continue(lanes, &data[groups * per_group..], len, lane_step, |_| {})
    }
    #[cfg(not(target_arch = "x86_64"))]
    hash_continue([FNV_OFFSET_BASIS; LANES], data, len, lane_step, |_| {})
}

/// The summary lanes of the values of `data`, in one pass (no hash).
pub(crate) fn summary_pass<T: Element, D: Decode<T>>(simd: Simd, data: &[T], decode: D) -> Acc {
    let (windows, rest) = data.split_at(data.len() / WINDOW * WINDOW);
    let mut lanes = [FNV_OFFSET_BASIS; LANES];
    let mut acc = Acc::default();
    run_windows::<T, D, false>(simd, &mut lanes, &mut acc, windows, decode);
    acc.block(rest, |x| decode.value(x));
    acc
}

/// Whole windows (`data.len()` a multiple of [`WINDOW`]) on the chosen path; an unsupported
/// one runs the portable code.
fn run_windows<T: Element, D: Decode<T>, const HASH: bool>(
    simd: Simd,
    lanes: &mut [u64; LANES],
    acc: &mut Acc,
    data: &[T],
    decode: D,
) {
    debug_assert_eq!(data.len() % WINDOW, 0);
    debug_assert_eq!(acc.rows, 0);
    #[cfg(target_arch = "x86_64")]
    if simd.is_supported() {
        match simd {
            // SAFETY: the CPU has AVX-512F (checked just above).
            Simd::Avx512 => return unsafe { x86::avx512::<T, D, HASH>(lanes, acc, data, decode) },
            // SAFETY: the CPU has AVX2 (checked just above).
            Simd::Avx2 => return unsafe { x86::avx2::<T, D, HASH>(lanes, acc, data, decode) },
            Simd::Portable => {}
        }
    }
    let _ = simd;
    let mut buf = [0f32; WINDOW];
    for w in data.chunks_exact(WINDOW) {
        if HASH {
            for block in w.chunks_exact(LANES * T::PER_WORD) {
                hash_block(lanes, block, lane_step);
            }
        }
        acc.block(decode.window(w, &mut buf), |v| v);
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::asm;
    use std::arch::x86_64::*;

    use super::*;
    use crate::checksum::fnv::{BLOCK_BYTES, FNV_PRIME, LANE_XOR_SHIFT};
    use crate::checksum::lanes::{ACC_LANES, WINDOW_ROWS};

    /// Blocks per call of [`hash4_asm`]: 256 bytes, 4 rows of f32 values.
    pub(super) const GROUP: usize = 4;

    /// The assembly of one lane step (`fnv::lane_step`, the same operations and constants):
    /// lane register `{$x}` takes the little-endian word at byte `$o + $k` of `{p}`:
    /// `x = (h ^ w) * P; h = x ^ (x >> 32)`.
    macro_rules! lane {
        ($x:literal, $o:literal, $k:literal) => {
            concat!(
                "xor {",
                $x,
                "}, qword ptr [{p} + ",
                $o,
                " + ",
                $k,
                "]\n",
                "imul {",
                $x,
                "}, {prime}\n",
                "mov {t}, {",
                $x,
                "}\n",
                "shr {t}, {s}\n",
                "xor {",
                $x,
                "}, {t}\n",
            )
        };
    }

    /// The assembly of one round at byte offset `$o` of `{p}`: lane `i` takes the word at
    /// `$o + 8 i`.
    macro_rules! round {
        ($o:literal) => {
            concat!(
                lane!("a", $o, "0"),
                lane!("b", $o, "8"),
                lane!("c", $o, "16"),
                lane!("d", $o, "24"),
                lane!("e", $o, "32"),
                lane!("f", $o, "40"),
                lane!("g", $o, "48"),
                lane!("h", $o, "56"),
            )
        };
    }

    /// Four rounds of the eight lanes over the 256 bytes at `p`, in order (x86-64 is
    /// little-endian: a word is its bytes read as a u64). Fixed offsets: no address
    /// arithmetic between blocks.
    ///
    /// SAFETY: `p` points to 256 readable bytes.
    #[inline(always)]
    pub(super) unsafe fn hash4_asm(l: &mut [u64; LANES], p: *const u8) {
        let [a, b, c, d, e, f, g, h] = l;
        asm!(
            round!("0"),
            round!("64"),
            round!("128"),
            round!("192"),
            a = inout(reg) *a,
            b = inout(reg) *b,
            c = inout(reg) *c,
            d = inout(reg) *d,
            e = inout(reg) *e,
            f = inout(reg) *f,
            g = inout(reg) *g,
            h = inout(reg) *h,
            t = out(reg) _,
            p = in(reg) p,
            prime = in(reg) FNV_PRIME,
            s = const LANE_XOR_SHIFT,
            options(pure, readonly, nostack),
        );
    }

    /// Rows of values per [`hash4_asm`] call: 4 for f32, 8 for 16-bit, 16 for 8-bit types.
    const fn rows_per_group<T>() -> usize {
        GROUP * BLOCK_BYTES / (ACC_LANES * std::mem::size_of::<T>())
    }

    /// [`run_windows`] with AVX-512F: lanes `0..16` of [`Acc`] in one register each.
    ///
    /// SAFETY: the CPU has AVX-512F; `data.len()` is a multiple of [`WINDOW`]; `acc` is at a
    /// window boundary.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn avx512<T: Element, D: Decode<T>, const HASH: bool>(
        lanes: &mut [u64; LANES],
        acc: &mut Acc,
        data: &[T],
        decode: D,
    ) {
        let mut l = *lanes;
        let mut mn = _mm512_loadu_ps(acc.min.as_ptr());
        let mut mx = _mm512_loadu_ps(acc.max.as_ptr());
        let (sum, sq) = (acc.sum.as_ptr(), acc.sum_sq.as_ptr());
        let mut s = [_mm512_loadu_pd(sum), _mm512_loadu_pd(sum.add(8))];
        let mut q = [_mm512_loadu_pd(sq), _mm512_loadu_pd(sq.add(8))];
        let mut buf = [0f32; WINDOW];
        for w in data.chunks_exact(WINDOW) {
            let bytes = w.as_ptr().cast::<u8>();
            let v = decode.window(w, &mut buf).as_ptr();
            let (mut ps, mut pq) = (_mm512_setzero_ps(), _mm512_setzero_ps());
            let k = rows_per_group::<T>();
            for g in 0..WINDOW_ROWS / k {
                if HASH {
                    hash4_asm(&mut l, bytes.add(GROUP * BLOCK_BYTES * g));
                }
                for r in g * k..(g + 1) * k {
                    let x = _mm512_loadu_ps(v.add(ACC_LANES * r));
                    mn = _mm512_min_ps(x, mn);
                    mx = _mm512_max_ps(x, mx);
                    ps = _mm512_add_ps(ps, x);
                    pq = _mm512_add_ps(pq, _mm512_mul_ps(x, x));
                }
            }
            // Lanes 0..8, then 8..16, widened exactly to f64.
            let (ps_hi, pq_hi) = (
                _mm512_extractf64x4_pd::<1>(_mm512_castps_pd(ps)),
                _mm512_extractf64x4_pd::<1>(_mm512_castps_pd(pq)),
            );
            s[0] = _mm512_add_pd(s[0], _mm512_cvtps_pd(_mm512_castps512_ps256(ps)));
            s[1] = _mm512_add_pd(s[1], _mm512_cvtps_pd(_mm256_castpd_ps(ps_hi)));
            q[0] = _mm512_add_pd(q[0], _mm512_cvtps_pd(_mm512_castps512_ps256(pq)));
            q[1] = _mm512_add_pd(q[1], _mm512_cvtps_pd(_mm256_castpd_ps(pq_hi)));
        }
        _mm512_storeu_ps(acc.min.as_mut_ptr(), mn);
        _mm512_storeu_ps(acc.max.as_mut_ptr(), mx);
        let (sum, sq) = (acc.sum.as_mut_ptr(), acc.sum_sq.as_mut_ptr());
        for (i, (s, q)) in s.into_iter().zip(q).enumerate() {
            _mm512_storeu_pd(sum.add(8 * i), s);
            _mm512_storeu_pd(sq.add(8 * i), q);
        }
        *lanes = l;
    }

    /// [`run_windows`] with AVX2: lanes `0..8` and `8..16` of [`Acc`] in two registers.
    ///
    /// SAFETY: the CPU has AVX2; `data.len()` is a multiple of [`WINDOW`]; `acc` is at a
    /// window boundary.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn avx2<T: Element, D: Decode<T>, const HASH: bool>(
        lanes: &mut [u64; LANES],
        acc: &mut Acc,
        data: &[T],
        decode: D,
    ) {
        let mut l = *lanes;
        let (min, max) = (acc.min.as_ptr(), acc.max.as_ptr());
        let mut mn = [_mm256_loadu_ps(min), _mm256_loadu_ps(min.add(8))];
        let mut mx = [_mm256_loadu_ps(max), _mm256_loadu_ps(max.add(8))];
        let (sum, sq) = (acc.sum.as_ptr(), acc.sum_sq.as_ptr());
        let mut s = [_mm256_setzero_pd(); 4];
        let mut q = [_mm256_setzero_pd(); 4];
        for i in 0..4 {
            s[i] = _mm256_loadu_pd(sum.add(4 * i));
            q[i] = _mm256_loadu_pd(sq.add(4 * i));
        }
        let mut buf = [0f32; WINDOW];
        for w in data.chunks_exact(WINDOW) {
            let bytes = w.as_ptr().cast::<u8>();
            let v = decode.window(w, &mut buf).as_ptr();
            let mut psum = [_mm256_setzero_ps(); 2];
            let mut psq = [_mm256_setzero_ps(); 2];
            let k = rows_per_group::<T>();
            for g in 0..WINDOW_ROWS / k {
                if HASH {
                    hash4_asm(&mut l, bytes.add(GROUP * BLOCK_BYTES * g));
                }
                for r in g * k..(g + 1) * k {
                    for j in 0..2 {
                        let x = _mm256_loadu_ps(v.add(ACC_LANES * r + 8 * j));
                        mn[j] = _mm256_min_ps(x, mn[j]);
                        mx[j] = _mm256_max_ps(x, mx[j]);
                        psum[j] = _mm256_add_ps(psum[j], x);
                        psq[j] = _mm256_add_ps(psq[j], _mm256_mul_ps(x, x));
                    }
                }
            }
            for j in 0..2 {
                let (ls, hs) = (
                    _mm256_castps256_ps128(psum[j]),
                    _mm256_extractf128_ps::<1>(psum[j]),
                );
                let (lq, hq) = (
                    _mm256_castps256_ps128(psq[j]),
                    _mm256_extractf128_ps::<1>(psq[j]),
                );
                s[2 * j] = _mm256_add_pd(s[2 * j], _mm256_cvtps_pd(ls));
                s[2 * j + 1] = _mm256_add_pd(s[2 * j + 1], _mm256_cvtps_pd(hs));
                q[2 * j] = _mm256_add_pd(q[2 * j], _mm256_cvtps_pd(lq));
                q[2 * j + 1] = _mm256_add_pd(q[2 * j + 1], _mm256_cvtps_pd(hq));
            }
        }
        let (min, max) = (acc.min.as_mut_ptr(), acc.max.as_mut_ptr());
        for j in 0..2 {
            _mm256_storeu_ps(min.add(8 * j), mn[j]);
            _mm256_storeu_ps(max.add(8 * j), mx[j]);
        }
        let (sum, sq) = (acc.sum.as_mut_ptr(), acc.sum_sq.as_mut_ptr());
        for i in 0..4 {
            _mm256_storeu_pd(sum.add(4 * i), s[i]);
            _mm256_storeu_pd(sq.add(4 * i), q[i]);
        }
        *lanes = l;
    }
}
