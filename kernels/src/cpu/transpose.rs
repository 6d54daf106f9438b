//! Copying a block of a matrix into its transpose: the inner step of every loop that reads an
//! operand across its memory order (`x.t().contiguous()`, `m + m.t()`).
//!
//! [`transpose`] moves elements of one type as bits; on x86-64 it moves 4- and 8-byte
//! numbers (`f32`, `i32`, `u32`, `f64`, `i64`, `u64`) through SSE2 registers (part of the x86-64 baseline, so nothing is detected at
//! run time), 4 × 4 and 2 × 2 at a time, with the unsafe code in two small functions below.
//! [`transpose_with`] converts each element on the way (a transposing cast) and is plain
//! scalar code.

/// A `rows × len` block moved by [`transpose`]: element `(r, i)` is read at
/// `src + r + i * src_stride` (a column of the block is adjacent in the source) and written at
/// `dst + r * dst_stride + i` (a row is adjacent in the destination).
#[derive(Clone, Copy, Debug)]
pub struct Block {
    pub rows: usize,
    pub len: usize,
    pub src: usize,
    pub src_stride: usize,
    pub dst: usize,
    pub dst_stride: usize,
}

impl Block {
    /// Checks that the block fits both buffers (panicking, as a kernel bug, when it does
    /// not); false when it is empty.
    fn fits(&self, src_len: usize, dst_len: usize) -> bool {
        let b = self;
        if b.rows == 0 || b.len == 0 {
            return false;
        }
        let last_src = (b.len - 1)
            .checked_mul(b.src_stride)
            .and_then(|x| x.checked_add(b.src + b.rows - 1));
        let last_dst = (b.rows - 1)
            .checked_mul(b.dst_stride)
            .and_then(|x| x.checked_add(b.dst + b.len - 1));
        assert!(
            last_src.is_some_and(|e| e < src_len) && last_dst.is_some_and(|e| e < dst_len),
            "kiln internal error: a transposed block reaches past its buffer"
        );
        true
    }

    /// Rows `r0..r1` × columns `i0..i1` of this block.
    fn part(&self, (r0, r1): (usize, usize), (i0, i1): (usize, usize)) -> Block {
        Block {
            rows: r1 - r0,
            len: i1 - i0,
            src: self.src + r0 + i0 * self.src_stride,
            dst: self.dst + r0 * self.dst_stride + i0,
            ..*self
        }
    }
}

/// The size of `T` when it is a 4- or 8-byte number, whose bytes are all initialised and
/// may be moved through vector registers as they are; 0 for any other type.
fn number_width<T: 'static>() -> usize {
    use std::any::TypeId;
    let t = TypeId::of::<T>();
    if [
        TypeId::of::<f32>(),
        TypeId::of::<i32>(),
        TypeId::of::<u32>(),
    ]
    .contains(&t)
    {
        4
    } else if [
        TypeId::of::<f64>(),
        TypeId::of::<i64>(),
        TypeId::of::<u64>(),
    ]
    .contains(&t)
    {
        8
    } else {
        0
    }
}

/// Copies block `b` of `src` into `dst`, transposed (see [`Block`]).
pub fn transpose<T: Copy + 'static>(src: &[T], dst: &mut [T], b: Block) {
    if !b.fits(src.len(), dst.len()) {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    {
        let width = number_width::<T>();
        let (r4, l4) = match width {
            4 => (b.rows / 4 * 4, b.len / 4 * 4),
            8 => (b.rows / 2 * 2, b.len / 2 * 2),
            _ => (0, 0),
        };
        if r4 > 0 && l4 > 0 {
            // SAFETY: the block fits both buffers (checked above), so does its `r4 × l4`
            // corner; `T` is a 4- or 8-byte number (`number_width`), so every byte of it is
            // initialised and any bits moved from a `T` make the same `T`; `src` and `dst`
            // are distinct borrows.
            unsafe {
                let (s, d) = (src.as_ptr().add(b.src), dst.as_mut_ptr().add(b.dst));
                let (ss, ds) = (b.src_stride, b.dst_stride);
                if width == 4 {
                    sse::blocks_4byte(s.cast(), ss, r4, l4, d.cast(), ds);
                } else {
                    sse::blocks_8byte(s.cast(), ss, r4, l4, d.cast(), ds);
                }
            }
            // The right-hand strip and the bottom strip, element by element.
            scalar(src, dst, b.part((0, r4), (l4, b.len)), |x| x);
            scalar(src, dst, b.part((r4, b.rows), (0, b.len)), |x| x);
            return;
        }
    }
    scalar(src, dst, b, |x| x);
}

/// As [`transpose`], converting each element with `conv` (a transposing cast).
#[inline(always)]
pub fn transpose_with<A: Copy, O: Copy>(src: &[A], dst: &mut [O], b: Block, conv: impl Fn(A) -> O) {
    if b.fits(src.len(), dst.len()) {
        scalar(src, dst, b, conv);
    }
}

/// [`transpose_with`] on a block known to fit, eight columns at a time so each destination
/// row gets eight adjacent elements per step while eight source columns are read
/// sequentially.
#[inline(always)]
fn scalar<A: Copy, O: Copy>(src: &[A], dst: &mut [O], b: Block, conv: impl Fn(A) -> O) {
    const W: usize = 8;
    if b.rows == 0 {
        return;
    }
    let mut i = 0;
    while i + W <= b.len {
        let cols: [&[A]; W] =
            std::array::from_fn(|j| &src[b.src + (i + j) * b.src_stride..][..b.rows]);
        for r in 0..b.rows {
            let d = &mut dst[b.dst + r * b.dst_stride + i..][..W];
            for (d, c) in d.iter_mut().zip(&cols) {
                *d = conv(c[r]);
            }
        }
        i += W;
    }
    for i in i..b.len {
        let col = &src[b.src + i * b.src_stride..][..b.rows];
        for (r, &x) in col.iter().enumerate() {
            dst[b.dst + r * b.dst_stride + i] = conv(x);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod sse {
    use core::arch::x86_64::*;

    /// Moves the 4 × 4 block of 4-byte elements at `src` (column `j` at `src + j * stride`)
    /// to `dst` (row `k` at `dst + k * drow`), transposed.
    ///
    /// # Safety
    /// Both blocks must lie inside the allocations behind the pointers and not overlap.
    #[inline(always)]
    unsafe fn block_4byte(src: *const f32, stride: usize, dst: *mut f32, drow: usize) {
        // SAFETY: the caller's contract. Float moves and shuffles never alter bits, so any
        // 4-byte element goes through unchanged.
        unsafe {
            let c0 = _mm_loadu_ps(src);
            let c1 = _mm_loadu_ps(src.add(stride));
            let c2 = _mm_loadu_ps(src.add(2 * stride));
            let c3 = _mm_loadu_ps(src.add(3 * stride));
            let lo01 = _mm_unpacklo_ps(c0, c1); // rows 0 and 1 of columns 0 and 1
            let lo23 = _mm_unpacklo_ps(c2, c3);
            let hi01 = _mm_unpackhi_ps(c0, c1); // rows 2 and 3
            let hi23 = _mm_unpackhi_ps(c2, c3);
            _mm_storeu_ps(dst, _mm_movelh_ps(lo01, lo23));
            _mm_storeu_ps(dst.add(drow), _mm_movehl_ps(lo23, lo01));
            _mm_storeu_ps(dst.add(2 * drow), _mm_movelh_ps(hi01, hi23));
            _mm_storeu_ps(dst.add(3 * drow), _mm_movehl_ps(hi23, hi01));
        }
    }

    /// Transposes the `rows × len` block (`rows`, `len` multiples of 4) of 4-byte elements:
    /// `(r, i)` from `src + r + i * stride` to `dst + r * drow + i`. Sixteen columns at a
    /// time where it can, so each destination row gets a whole 64-byte cache line per step
    /// and no line is left half written for later.
    ///
    /// # Safety
    /// Every such element must lie inside the allocation behind its pointer, and the two
    /// blocks must not overlap.
    pub(super) unsafe fn blocks_4byte(
        src: *const f32,
        stride: usize,
        rows: usize,
        len: usize,
        dst: *mut f32,
        drow: usize,
    ) {
        let mut i = 0;
        while i < len {
            let panel = if len - i >= 16 { 16 } else { 4 };
            for r in (0..rows).step_by(4) {
                for j in (i..i + panel).step_by(4) {
                    // SAFETY: the 4 × 4 block at (r, j) is inside the caller's block.
                    unsafe {
                        block_4byte(src.add(r + j * stride), stride, dst.add(r * drow + j), drow)
                    };
                }
            }
            i += panel;
        }
    }

    /// As [`blocks_4byte`] for 8-byte elements, `rows` and `len` multiples of 2, eight
    /// columns (a cache line of each destination row) at a time where it can.
    ///
    /// # Safety
    /// As [`blocks_4byte`].
    pub(super) unsafe fn blocks_8byte(
        src: *const f64,
        stride: usize,
        rows: usize,
        len: usize,
        dst: *mut f64,
        drow: usize,
    ) {
        let mut i = 0;
        while i < len {
            let panel = if len - i >= 8 { 8 } else { 2 };
            for r in (0..rows).step_by(2) {
                for j in (i..i + panel).step_by(2) {
                    // SAFETY: the 2 × 2 block at (r, j) is inside the caller's block.
                    unsafe {
                        let s = src.add(r + j * stride);
                        let c0 = _mm_loadu_pd(s);
                        let c1 = _mm_loadu_pd(s.add(stride));
                        let d = dst.add(r * drow + j);
                        _mm_storeu_pd(d, _mm_unpacklo_pd(c0, c1));
                        _mm_storeu_pd(d.add(drow), _mm_unpackhi_pd(c0, c1));
                    }
                }
            }
            i += panel;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks both entry points on a `rows × len` block at offsets inside larger buffers,
    /// against the definition, and that nothing outside the block is written.
    fn check<T: Copy + PartialEq + std::fmt::Debug + 'static>(
        rows: usize,
        len: usize,
        make: fn(usize) -> T,
    ) {
        let (soff, stride, doff, drow) = (3, rows + 5, 2, len + 3);
        let src: Vec<T> = (0..soff + stride * len + 1).map(make).collect();
        let fill = make(usize::MAX >> 40);
        for with_conv in [false, true] {
            let mut dst = vec![fill; doff + drow * rows + 1];
            let b = Block {
                rows,
                len,
                src: soff,
                src_stride: stride,
                dst: doff,
                dst_stride: drow,
            };
            if with_conv {
                transpose_with(&src, &mut dst, b, |x| x);
            } else {
                transpose(&src, &mut dst, b);
            }
            for (p, &d) in dst.iter().enumerate() {
                let (r, i) = ((p.wrapping_sub(doff)) / drow, (p.wrapping_sub(doff)) % drow);
                let want = if p >= doff && r < rows && i < len {
                    src[soff + r + i * stride]
                } else {
                    fill
                };
                assert_eq!(d, want, "{rows}x{len} at dst[{p}] (conv: {with_conv})");
            }
        }
    }

    #[test]
    fn transposed_blocks_of_every_element_width_match_the_definition() {
        for (rows, len) in [(1, 1), (4, 4), (5, 3), (8, 13), (16, 16), (17, 9), (2, 31)] {
            check::<f32>(rows, len, |v| v as f32);
            check::<i32>(rows, len, |v| v as i32 - 7);
            check::<f64>(rows, len, |v| v as f64 * 0.5);
            check::<i64>(rows, len, |v| v as i64);
            check::<u8>(rows, len, |v| v as u8);
            check::<half::f16>(rows, len, |v| half::f16::from_f32(v as f32));
            // 4 bytes but not a number: element by element.
            check::<[u8; 4]>(rows, len, |v| (v as u32).to_le_bytes());
        }
    }

    #[test]
    fn an_empty_block_writes_nothing() {
        let mut dst = [1.0f32; 4];
        let b = |rows, len| Block {
            rows,
            len,
            src: 0,
            src_stride: 1,
            dst: 0,
            dst_stride: 1,
        };
        transpose(&[0.0f32; 0], &mut dst, b(0, 3));
        transpose(&[0.0f32; 4], &mut dst, b(3, 0));
        assert_eq!(dst, [1.0; 4]);
    }

    #[test]
    #[should_panic(expected = "reaches past its buffer")]
    fn a_block_past_its_buffer_is_refused() {
        let mut dst = [0.0f32; 16];
        let b = Block {
            rows: 4,
            len: 4,
            src: 0,
            src_stride: 4,
            dst: 0,
            dst_stride: 4,
        };
        transpose(&[0.0f32; 15], &mut dst, b);
    }
}
