//! Matrix products: `mm`, `bmm` and `addmm` (`mm` plus a bias before the one rounding).
//!
//! `f32`/`f64` go to the `gemm` crate (packed panels, AVX-512 / AVX2+FMA microkernels chosen
//! at run time), which takes arbitrary row and column strides, so transposed, sliced and
//! stride-0 inputs are read in place without a copy; a large product runs on kiln's pool.
//! The half types run kiln's own packed kernels ([`packed`]), which widen while packing and
//! round once: `bf16` on a CPU with AMX by `TDPBF16PS` tiles ([`amx`]), else with
//! AVX512-BF16 by `VDPBF16PS` ([`avx512bf16`]), `f16` and other CPUs' `bf16` by `f32` FMAs
//! ([`fma`], AVX2 + FMA + F16C). Without those, both inputs
//! are widened to contiguous `f32`, multiplied as `f32` and rounded once (see [`widen_gemm`]
//! for why not `gemm-f16`).
//! Integers use a plain i-k-j loop with wrapping arithmetic, split over output rows. `bmm`
//! splits batches over threads.

#[cfg(target_arch = "x86_64")]
mod amx;
#[cfg(target_arch = "x86_64")]
mod avx512bf16;
#[cfg(target_arch = "x86_64")]
pub(crate) mod conv;
#[cfg(target_arch = "x86_64")]
pub(crate) mod conv_nhwc;
#[cfg(target_arch = "x86_64")]
mod conv_taps;
#[cfg(target_arch = "x86_64")]
mod fma;
#[cfg(target_arch = "x86_64")]
mod packed;
#[cfg(target_arch = "x86_64")]
pub(crate) mod winograd;

use crate::cpu::shape::contiguous_out;
use crate::element::{same_type, same_type_mut};
use crate::parallel::{fan_out, par_chunks_mut};
use crate::KernelError;
use crate::{Arith, DType, Dst, Element, KResult, Src};

/// Below this many multiply-adds a product runs on the calling thread: 128^3, about 70 us
/// on one core. Handing work to the pool and waiting for it costs tens of microseconds, so
/// a 64^3 product (8 us alone) ran 4x slower split over two threads (PyTorch's MKL, 1.5x).
const PARALLEL_FLOPS: usize = 1 << 21;
/// Fewest output rows worth giving one thread.
const MIN_ROWS_PER_TASK: usize = 16;

/// A matrix inside a strided buffer: element `(i, j)` is `data[offset + i * rs + j * cs]`.
#[derive(Debug)]
struct Mat<'a, T> {
    data: &'a [T],
    offset: usize,
    rs: usize,
    cs: usize,
}

// Manual impls: a derive would demand `T: Copy`, though only the reference is copied.
impl<T> Clone for Mat<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Mat<'_, T> {}

impl<'a, T: Copy + 'static> Mat<'a, T> {
    /// The `rows x cols` matrix with the given sizes and strides, starting at `offset`.
    /// Strides of size-1 dims are never stepped, so they are zeroed: that keeps them small
    /// enough for `isize` whatever value the layout carried.
    fn new(data: &'a [T], offset: usize, sizes: [usize; 2], strides: [usize; 2]) -> Self {
        let norm = |s: usize, st: usize| if s <= 1 { 0 } else { st };
        Mat {
            data,
            offset,
            rs: norm(sizes[0], strides[0]),
            cs: norm(sizes[1], strides[1]),
        }
    }

    /// A contiguous row-major `rows x cols` matrix.
    fn dense(data: &'a [T], cols: usize) -> Self {
        Mat {
            data,
            offset: 0,
            rs: cols,
            cs: 1,
        }
    }

    #[inline(always)]
    fn get(&self, i: usize, j: usize) -> T {
        self.data[self.offset + i * self.rs + j * self.cs]
    }

    /// Checks that every element of a non-empty `rows x cols` matrix lies inside `data`.
    /// `blas_gemm`'s raw-pointer calls rely on this.
    fn check_in_bounds(&self, rows: usize, cols: usize) -> KResult<()> {
        let last = (rows - 1)
            .checked_mul(self.rs)
            .and_then(|r| {
                (cols - 1)
                    .checked_mul(self.cs)
                    .and_then(|c| r.checked_add(c))
            })
            .and_then(|rc| rc.checked_add(self.offset));
        match last {
            Some(l) if l < self.data.len() => Ok(()),
            _ => Err(KernelError::shape(
                "internal error: matrix view exceeds its storage",
            )),
        }
    }

    /// The same view over the same buffer typed as `U`, when `U` is `T`.
    fn as_type<U: 'static>(&self) -> Option<Mat<'a, U>> {
        Some(Mat {
            data: same_type::<T, U>(self.data)?,
            offset: self.offset,
            rs: self.rs,
            cs: self.cs,
        })
    }
}

/// Runs `f(first_row, rows_of_c)` over `c` (an `m x n` row-major output), split across
/// threads by row blocks when the product is large.
fn by_row_blocks<E: Send>(
    m: usize,
    n: usize,
    k: usize,
    c: &mut [E],
    f: impl Fn(usize, &mut [E]) + Sync,
) {
    if fan_out(m > 1 && m.saturating_mul(n).saturating_mul(k) >= PARALLEL_FLOPS) {
        let rows = m
            .div_ceil(crate::parallel::num_threads())
            .max(MIN_ROWS_PER_TASK);
        par_chunks_mut(c, rows * n, &|t, block| f(t * rows, block));
    } else {
        f(0, c);
    }
}

/// The float types the `gemm` crate multiplies (public for the kernels that call it on
/// small blocks themselves, as attention does).
pub trait Blas: Copy + Send + Sync + 'static {
    /// `c = a @ b` for an `m × k` by `k × n` product with the given element strides; with
    /// `acc = Some(s)`, `c += s * (a @ b)` instead (`c` read).
    ///
    /// # Safety
    /// `a`'s elements `(i, l)` (`a + i * rsa + l * csa`, `i < m`, `l < k`), `b`'s `(l, j)`
    /// and `c`'s `(i, j)` must be in bounds of their allocations; `c` must be valid for
    /// writes with no two `(i, j)` at one address, and must not overlap `a` or `b`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm_raw(
        m: usize,
        k: usize,
        n: usize,
        a: *const Self,
        rsa: isize,
        csa: isize,
        b: *const Self,
        rsb: isize,
        csb: isize,
        c: *mut Self,
        rsc: isize,
        csc: isize,
        acc: Option<Self>,
        par: gemm::Parallelism,
    );
}

macro_rules! blas {
    ($($t:ty),*) => { $(
        impl Blas for $t {
            unsafe fn gemm_raw(
                m: usize,
                k: usize,
                n: usize,
                a: *const $t,
                rsa: isize,
                csa: isize,
                b: *const $t,
                rsb: isize,
                csb: isize,
                c: *mut $t,
                rsc: isize,
                csc: isize,
                acc: Option<$t>,
                par: gemm::Parallelism,
            ) {
                // `gemm` computes `c = alpha * c + beta * (a @ b)`, reading `c` only with
                // `read_dst`: without `acc`, `c = 1 * (a @ b)` (alpha unused); with it,
                // `c = 1 * c + s * (a @ b)`.
                let (read_dst, beta) = match acc {
                    Some(s) => (true, s),
                    None => (false, 1.0),
                };
                // SAFETY: forwarded from this function's own contract.
                unsafe {
                    gemm::gemm(
                        m, n, k, c, csc, rsc, read_dst, a, csa, rsa, b, csb, rsb, 1.0, beta,
                        false, false, false, par,
                    )
                }
            }
        }
    )* };
}
blas!(f32, f64);

/// A stride as `isize`, for `gemm`.
fn istride(s: usize) -> KResult<isize> {
    isize::try_from(s).map_err(|_| KernelError::shape("internal error: stride does not fit isize"))
}

/// `c = a @ b` for a BLAS float type, or with `acc = Some(s)`, `c += s * (a @ b)`; `m, k,
/// n > 0` and both views already bounds-checked. `gemm` splits a large product over kiln's
/// pool itself (its packed panels are shared by the threads, where splitting rows here
/// would pack `b` once per thread).
fn blas_gemm<F: Blas>(
    m: usize,
    k: usize,
    n: usize,
    a: Mat<'_, F>,
    b: Mat<'_, F>,
    c: &mut [F],
    acc: Option<F>,
) -> KResult<()> {
    let (rsa, csa, rsb, csb) = (
        istride(a.rs)?,
        istride(a.cs)?,
        istride(b.rs)?,
        istride(b.cs)?,
    );
    let rsc = istride(n)?;
    let run = |c: &mut [F], par: gemm::Parallelism| {
        // SAFETY: `check_in_bounds` proved that `a`'s elements (i, l) for i < m, l < k and
        // `b`'s (l, j) for l < k, j < n lie inside their slices, and every stride fits
        // isize (checked above). `c` is exactly `m * n` elements written row-major
        // (rsc = n, csc = 1), a unique borrow of the output, so it aliases neither input.
        unsafe {
            F::gemm_raw(
                m,
                k,
                n,
                a.data.as_ptr().add(a.offset),
                rsa,
                csa,
                b.data.as_ptr().add(b.offset),
                rsb,
                csb,
                c.as_mut_ptr(),
                rsc,
                1,
                acc,
                par,
            )
        }
    };
    let threads = crate::parallel::num_threads();
    if threads > 1 && fan_out(m.saturating_mul(n).saturating_mul(k) >= PARALLEL_FLOPS) {
        crate::parallel::install(|| run(c, gemm::Parallelism::Rayon(threads)));
    } else {
        run(c, gemm::Parallelism::None);
    }
    Ok(())
}

/// `c = a @ b` in wrapping compute arithmetic: the integer path.
fn naive_gemm<T: Element>(m: usize, k: usize, n: usize, a: Mat<'_, T>, b: Mat<'_, T>, c: &mut [T]) {
    by_row_blocks(m, n, k, c, |r0, block| {
        let mut acc = vec![<T::Compute as Arith>::zero(); n];
        for (ri, crow) in block.chunks_mut(n).enumerate() {
            let i = r0 + ri;
            acc.fill(<T::Compute as Arith>::zero());
            // i-k-j order: the inner loop walks a row of `b` and of the accumulator.
            for l in 0..k {
                let x = a.get(i, l).up();
                for (j, s) in acc.iter_mut().enumerate() {
                    *s = s.add(x.mul(b.get(l, j).up()));
                }
            }
            crow.iter_mut()
                .zip(&acc)
                .for_each(|(o, &s)| *o = T::down(s));
        }
    });
}

/// Copies a strided `rows x cols` matrix into a contiguous `f32` buffer.
fn widen<T: Element>(x: Mat<'_, T>, rows: usize, cols: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(rows * cols);
    for i in 0..rows {
        out.extend((0..cols).map(|j| x.get(i, j).cast::<f32>()));
    }
    out
}

/// `c = a @ b` for any non-bool element type, `c` being a fresh row-major `m x n` buffer
/// (`a` row-major `m x k`, `b` row-major `k x n`: the dense case, for other kernels).
pub(crate) fn gemm_dense<T: Element>(
    m: usize,
    k: usize,
    n: usize,
    a: &[T],
    b: &[T],
    c: &mut [T],
) -> KResult<()> {
    gemm(m, k, n, Mat::dense(a, k), Mat::dense(b, n), c)
}

/// `c = a @ b` for any non-bool element type, `c` being a fresh row-major `m x n` buffer.
fn gemm<T: Element>(
    m: usize,
    k: usize,
    n: usize,
    a: Mat<'_, T>,
    b: Mat<'_, T>,
    c: &mut [T],
) -> KResult<()> {
    if c.len() != m * n {
        return Err(KernelError::shape(format!(
            "internal error: output has {} elements, expected {}",
            c.len(),
            m * n
        )));
    }
    if m == 0 || n == 0 {
        return Ok(());
    }
    if k == 0 {
        // An empty contraction sums nothing.
        c.fill(T::down(<T::Compute as Arith>::zero()));
        return Ok(());
    }
    a.check_in_bounds(m, k)?;
    b.check_in_bounds(k, n)?;
    if let (Some(a), Some(b)) = (a.as_type::<f32>(), b.as_type::<f32>()) {
        if let Some(c) = same_type_mut::<T, f32>(c) {
            #[cfg(target_arch = "x86_64")]
            if packed_f32_gemm::<packed::Assign>(m, k, n, a, b, c) {
                return Ok(());
            }
            return blas_gemm(m, k, n, a, b, c, None);
        }
    }
    if let (Some(a), Some(b)) = (a.as_type::<f64>(), b.as_type::<f64>()) {
        if let Some(c) = same_type_mut::<T, f64>(c) {
            return blas_gemm(m, k, n, a, b, c, None);
        }
    }
    #[cfg(target_arch = "x86_64")]
    {
        use crate::half::{bf16, f16};
        if let Some(c) = same_type_mut::<T, bf16>(c) {
            if packed_half_gemm::<T, bf16>(m, k, n, a, b, c) {
                return Ok(());
            }
        } else if let Some(c) = same_type_mut::<T, f16>(c) {
            if packed_half_gemm::<T, f16>(m, k, n, a, b, c) {
                return Ok(());
            }
        }
    }
    if matches!(T::DTYPE, DType::F16 | DType::BF16) {
        return widen_gemm(m, k, n, a, b, c);
    }
    naive_gemm(m, k, n, a, b, c);
    Ok(())
}

/// `c = a @ b` (`c` a row-major `m x n` buffer of `T`, or of `f32` sums to add to) through
/// one of kiln's packed half kernels, if `T` is a half type and the CPU has one; false if
/// not (nothing written). `m, k, n > 0`, both views bounds-checked.
#[cfg(target_arch = "x86_64")]
fn packed_half_gemm<T: Element, O: packed::Out>(
    m: usize,
    k: usize,
    n: usize,
    a: Mat<'_, T>,
    b: Mat<'_, T>,
    c: &mut [O::Elem],
) -> bool {
    use crate::half::{bf16, f16};
    if let (Some(a), Some(b)) = (a.as_type::<bf16>(), b.as_type::<bf16>()) {
        if let Some(isa) = amx::Amx::detect() {
            packed::gemm::<_, O>(isa, m, k, n, a, b, c);
            return true;
        }
        if let Some(isa) = avx512bf16::Avx512Bf16::detect() {
            packed::gemm::<_, O>(isa, m, k, n, a, b, c);
            return true;
        }
        if let Some(isa) = fma::Fma::<bf16>::detect() {
            packed::gemm::<_, O>(isa, m, k, n, a, b, c);
            return true;
        }
    }
    if let (Some(a), Some(b), Some(isa)) = (
        a.as_type::<f16>(),
        b.as_type::<f16>(),
        fma::Fma::<f16>::detect(),
    ) {
        packed::gemm::<_, O>(isa, m, k, n, a, b, c);
        return true;
    }
    false
}

/// `c = a @ b` (with `O = Accumulate`, `c += a @ b`) in `f32` through kiln's FMA kernel, if
/// this CPU is one it is chosen for; false if not (nothing written). `m, k, n > 0`, both
/// views bounds-checked.
///
/// The kernel is chosen for large products (every dim ≥ 1024, at least 2^31 multiply-adds)
/// on CPUs with AVX2 + FMA and without AVX-512: on a Zen 3 it ran 2048^3 at 141 GFLOP/s on
/// two cores where the `gemm` crate's AVX2 kernel ran 116, tied at 1024^3, and lost on small
/// and skinny products (the crate's packing is cheaper there). With AVX-512 the crate's
/// 512-bit kernels do twice the work per instruction. `KILN_F32_GEMM=crate` forces the
/// crate, `KILN_F32_GEMM=kiln` kiln's kernel for every size (for comparisons).
#[cfg(target_arch = "x86_64")]
fn packed_f32_gemm<O: packed::Out<Elem = f32>>(
    m: usize,
    k: usize,
    n: usize,
    a: Mat<'_, f32>,
    b: Mat<'_, f32>,
    c: &mut [f32],
) -> bool {
    // Some(true): every size; Some(false): never; None: large products.
    static FORCED: std::sync::OnceLock<Option<bool>> = std::sync::OnceLock::new();
    let forced = *FORCED.get_or_init(|| match std::env::var("KILN_F32_GEMM").as_deref() {
        Ok("crate") => Some(false),
        Ok("kiln") => Some(true),
        _ => is_x86_feature_detected!("avx512f").then_some(false),
    });
    let large = m.min(n).min(k) >= 1024 && m.saturating_mul(n).saturating_mul(k) >= 1 << 31;
    match fma::Fma::<f32>::detect() {
        Some(isa) if forced.unwrap_or(large) => {
            packed::gemm::<_, O>(isa, m, k, n, a, b, c);
            true
        }
        _ => false,
    }
}

/// `c = a @ b` for a half type through `f32`: both inputs widened to contiguous `f32`, one
/// `f32` product, each element rounded once. The portable path (and `f16`'s: the `gemm`
/// crate's `f16` kernel accumulates each `k` block in `f32` but adds the blocks into the
/// `f16` output, rounding once per block, where PyTorch rounds once).
fn widen_gemm<T: Element>(
    m: usize,
    k: usize,
    n: usize,
    a: Mat<'_, T>,
    b: Mat<'_, T>,
    c: &mut [T],
) -> KResult<()> {
    let (a32, b32) = (widen(a, m, k), widen(b, k, n));
    let mut c32 = vec![0.0f32; m * n];
    blas_gemm(
        m,
        k,
        n,
        Mat::dense(&a32, k),
        Mat::dense(&b32, n),
        &mut c32,
        None,
    )?;
    // f32 -> f64 is exact, so this rounds once, to the half type.
    c.iter_mut()
        .zip(&c32)
        .for_each(|(o, &v)| *o = T::from_f64(v as f64));
    Ok(())
}

/// PyTorch has no boolean matrix product; `op` is the kernel name its error message uses.
fn reject_bool<T: Element>(op: &str) -> KResult<()> {
    if T::DTYPE == DType::Bool {
        return Err(KernelError::dtype(format!(
            "\"{op}\" not implemented for 'Bool'"
        )));
    }
    Ok(())
}

/// Output shape of `mm(Tensor self, Tensor mat2)`: `[n, p]` for `[n, m] @ [m, p]`.
pub fn mm_meta(self_: &[usize], mat2: &[usize]) -> KResult<Vec<Vec<usize>>> {
    if self_.len() != 2 {
        return Err(KernelError::shape("self must be a matrix"));
    }
    if mat2.len() != 2 {
        return Err(KernelError::shape("mat2 must be a matrix"));
    }
    if self_[1] != mat2[0] {
        return Err(KernelError::shape(format!(
            "mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})",
            self_[0], self_[1], mat2[0], mat2[1]
        )));
    }
    Ok(vec![vec![self_[0], mat2[1]]])
}

/// `mm(self, mat2)`: the matrix product. Inputs may have any strides; `k = 0` gives zeros.
/// `bool` is rejected as in PyTorch.
pub fn mm<T: Element>(self_: Src<'_, T>, mat2: Src<'_, T>, mut out: Dst<'_, T>) -> KResult<()> {
    mm_meta(&self_.layout.sizes, &mat2.layout.sizes)?;
    reject_bool::<T>("addmm_impl_cpu_")?;
    let (la, lb) = (self_.layout, mat2.layout);
    let (m, k, n) = (la.sizes[0], la.sizes[1], lb.sizes[1]);
    let a = Mat::new(
        self_.data,
        la.offset,
        [m, k],
        [la.strides[0], la.strides[1]],
    );
    let b = Mat::new(mat2.data, lb.offset, [k, n], [lb.strides[0], lb.strides[1]]);
    gemm(m, k, n, a, b, contiguous_out(&mut out)?)
}

/// Output shape of `addmm(self, mat1, mat2, beta, alpha)`: the product's `[m, n]`, `self`
/// broadcastable to it (PyTorch's messages: its mat1 check names `self`).
pub fn addmm_meta(
    self_: &[usize],
    mat1: &[usize],
    mat2: &[usize],
    _beta: f64,
    _alpha: f64,
) -> KResult<Vec<Vec<usize>>> {
    for (name, s) in [("self", mat1), ("mat2", mat2)] {
        if s.len() != 2 {
            return Err(KernelError::shape(format!(
                "addmm: {name} must be a matrix, got {}-D tensor",
                s.len()
            )));
        }
    }
    if mat1[1] != mat2[0] {
        return Err(KernelError::shape(format!(
            "addmm: mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})",
            mat1[0], mat1[1], mat2[0], mat2[1]
        )));
    }
    let out = vec![mat1[0], mat2[1]];
    bias_layout(self_, &out)?;
    Ok(vec![out])
}

/// `self`'s sizes broadcast to `out` (`[m, n]`): the strides to read it with (0 along a
/// broadcast dim), or `expand`'s message.
fn bias_layout(sizes: &[usize], out: &[usize]) -> KResult<()> {
    if sizes.len() > 2 {
        return Err(KernelError::shape(format!(
            "expand({sizes:?}, size={out:?}): the number of sizes provided (2) must be greater or equal to the number of dimensions in the tensor ({})",
            sizes.len()
        )));
    }
    for (i, &s) in sizes.iter().rev().enumerate() {
        let (d, want) = (1 - i, out[1 - i]);
        if s != want && s != 1 {
            return Err(KernelError::shape(format!(
                "The expanded size of the tensor ({want}) must match the existing size ({s}) at non-singleton dimension {d}.  Target sizes: {out:?}.  Tensor sizes: {sizes:?}"
            )));
        }
    }
    Ok(())
}

/// `self` as an `m x n` matrix: a broadcast dim (absent or of size 1) read with stride 0.
fn bias_mat<'a, T: Copy + 'static>(b: &Src<'a, T>, m: usize, n: usize) -> Mat<'a, T> {
    let l = b.layout;
    let (sizes, strides) = (&l.sizes, &l.strides);
    let nd = sizes.len();
    let dim = |from_end: usize, want: usize| -> usize {
        match nd.checked_sub(from_end + 1) {
            Some(i) if sizes[i] == want && want > 1 => strides[i],
            _ => 0,
        }
    };
    Mat {
        data: b.data,
        offset: l.offset,
        rs: dim(1, m),
        cs: dim(0, n),
    }
}

/// `addmm(self, mat1, mat2, beta, alpha)`: `beta * self + alpha * (mat1 @ mat2)`, `self`
/// broadcast to the product's shape; `beta = 0` ignores `self` (NaN included), as PyTorch.
/// The product is summed in the compute type (`f32` for the half types, through the same
/// kernels as `mm`) and each element rounded once, after the bias is added: `linear`'s bias
/// in f16/bf16 costs no second rounding. Integer coefficients are truncated, as PyTorch's.
pub fn addmm<T: Element>(
    self_: Src<'_, T>,
    mat1: Src<'_, T>,
    mat2: Src<'_, T>,
    beta: f64,
    alpha: f64,
    mut out: Dst<'_, T>,
) -> KResult<()> {
    addmm_meta(
        &self_.layout.sizes,
        &mat1.layout.sizes,
        &mat2.layout.sizes,
        beta,
        alpha,
    )?;
    reject_bool::<T>("addmm_impl_cpu_")?;
    let (la, lb) = (mat1.layout, mat2.layout);
    let (m, k, n) = (la.sizes[0], la.sizes[1], lb.sizes[1]);
    let a = Mat::new(mat1.data, la.offset, [m, k], [la.strides[0], la.strides[1]]);
    let b = Mat::new(mat2.data, lb.offset, [k, n], [lb.strides[0], lb.strides[1]]);
    let bias = bias_mat(&self_, m, n);
    let c = contiguous_out(&mut out)?;
    if m == 0 || n == 0 {
        return Ok(());
    }
    if k > 0 {
        a.check_in_bounds(m, k)?;
        b.check_in_bounds(k, n)?;
    }
    let big = fan_out(m.saturating_mul(n) >= 1 << 15);
    // A float product accumulates into `beta * self`, prefilled, so each element is rounded
    // once after its bias is in: f32/f64 in place, the half types in an f32 buffer.
    if T::DTYPE.is_floating_point() && alpha != 0.0 {
        if matches!(T::DTYPE, DType::F16 | DType::BF16) {
            let mut sums = vec![0f32; m * n];
            prefill(&mut sums, n, &bias, beta, big, |v: T| v.cast::<f32>());
            if k > 0 {
                half_sums_acc(m, k, n, a, b, &mut sums, alpha as f32)?;
            }
            let round = |r: usize, out: &mut [T]| {
                let s = &sums[r * ROUND_CHUNK..][..out.len()];
                if let Some(out) = same_type_mut::<T, crate::half::bf16>(out) {
                    crate::cpu::narrow::f32_to_bf16(s, out);
                } else if let Some(out) = same_type_mut::<T, crate::half::f16>(out) {
                    crate::cpu::narrow::f32_to_f16(s, out);
                }
            };
            if big {
                par_chunks_mut(c, ROUND_CHUNK, &round);
            } else {
                c.chunks_mut(ROUND_CHUNK)
                    .enumerate()
                    .for_each(|(r, o)| round(r, o));
            }
            return Ok(());
        }
        if let (Some(a), Some(b), Some(c)) = (
            a.as_type::<f32>(),
            b.as_type::<f32>(),
            same_type_mut::<T, f32>(c),
        ) {
            prefill(c, n, &bias, beta, big, |v: T| v.cast::<f32>());
            #[cfg(target_arch = "x86_64")]
            if k > 0 && alpha == 1.0 && packed_f32_gemm::<packed::Accumulate>(m, k, n, a, b, c) {
                return Ok(());
            }
            return if k > 0 {
                blas_gemm(m, k, n, a, b, c, Some(alpha as f32))
            } else {
                Ok(())
            };
        }
        if let (Some(a), Some(b), Some(c)) = (
            a.as_type::<f64>(),
            b.as_type::<f64>(),
            same_type_mut::<T, f64>(c),
        ) {
            prefill(c, n, &bias, beta, big, |v: T| v.cast::<f64>());
            return if k > 0 {
                blas_gemm(m, k, n, a, b, c, Some(alpha))
            } else {
                Ok(())
            };
        }
    }
    // Integers (and `alpha = 0`): the product in the type's own arithmetic, then
    // `beta * self + alpha * product` per element (a float coefficient truncated, as the
    // compute type converts it).
    gemm(m, k, n, a, b, c)?;
    let (beta_c, alpha_c) = (
        <T::Compute as Arith>::from_f64(beta),
        <T::Compute as Arith>::from_f64(alpha),
    );
    for (i, row) in c.chunks_exact_mut(n).enumerate() {
        for (j, o) in row.iter_mut().enumerate() {
            let p = alpha_c.mul(o.up());
            *o = T::down(if beta == 0.0 {
                p
            } else {
                beta_c.mul(bias.get(i, j).up()).add(p)
            });
        }
    }
    Ok(())
}

/// Elements per task of `addmm`'s final rounding pass.
const ROUND_CHUNK: usize = 1 << 14;

/// `dst` (row-major, `n` columns) = `beta * bias`, broadcast; zeros when `beta = 0` (so a
/// NaN in `self` is ignored, as PyTorch). A row bias is converted once and copied per row.
fn prefill<T: Element, C: Arith + Send + Sync>(
    dst: &mut [C],
    n: usize,
    bias: &Mat<'_, T>,
    beta: f64,
    big: bool,
    conv: impl Fn(T) -> C + Sync,
) {
    if beta == 0.0 {
        dst.fill(C::zero());
        return;
    }
    let beta = C::from_f64(beta);
    let scaled = |i: usize, j: usize| {
        let v = conv(bias.get(i, j));
        if beta == C::from_f64(1.0) {
            v
        } else {
            beta.mul(v)
        }
    };
    if bias.rs == 0 {
        let row: Vec<C> = (0..n).map(|j| scaled(0, j)).collect();
        let fill = |_: usize, rows: &mut [C]| {
            rows.chunks_exact_mut(n)
                .for_each(|r| r.copy_from_slice(&row));
        };
        let rows_per = (ROUND_CHUNK / n.max(1)).max(1) * n;
        if big {
            par_chunks_mut(dst, rows_per, &fill);
        } else {
            fill(0, dst);
        }
        return;
    }
    for (i, r) in dst.chunks_exact_mut(n).enumerate() {
        r.iter_mut()
            .enumerate()
            .for_each(|(j, o)| *o = scaled(i, j));
    }
}

/// `sums += alpha * (a @ b)` for a half-type product, in `f32` and unrounded: kiln's packed
/// half kernels where the CPU has one (for `alpha = 1`), else both inputs widened and one
/// `f32` product.
fn half_sums_acc<T: Element>(
    m: usize,
    k: usize,
    n: usize,
    a: Mat<'_, T>,
    b: Mat<'_, T>,
    sums: &mut [f32],
    alpha: f32,
) -> KResult<()> {
    #[cfg(target_arch = "x86_64")]
    if alpha == 1.0 && packed_half_gemm::<T, packed::Accumulate>(m, k, n, a, b, sums) {
        return Ok(());
    }
    let (a32, b32) = (widen(a, m, k), widen(b, k, n));
    blas_gemm(
        m,
        k,
        n,
        Mat::dense(&a32, k),
        Mat::dense(&b32, n),
        sums,
        Some(alpha),
    )
}

/// Output shape of `bmm(Tensor self, Tensor mat2)`: `[b, n, p]` for `[b, n, m] @ [b, m, p]`.
pub fn bmm_meta(self_: &[usize], mat2: &[usize]) -> KResult<Vec<Vec<usize>>> {
    if self_.len() != 3 {
        return Err(KernelError::shape("batch1 must be a 3D tensor"));
    }
    if mat2.len() != 3 {
        return Err(KernelError::shape("batch2 must be a 3D tensor"));
    }
    let (bs, k) = (self_[0], self_[2]);
    if mat2[0] != bs || mat2[1] != k {
        return Err(KernelError::shape(format!(
            "Expected size for first two dimensions of batch2 tensor to be: [{bs}, {k}] but got: [{}, {}].",
            mat2[0], mat2[1]
        )));
    }
    Ok(vec![vec![bs, self_[1], mat2[2]]])
}

/// `bmm(self, mat2)`: one matrix product per batch entry, in parallel over batches when the
/// total work is large. Inputs may have any strides. `bool` is rejected as in PyTorch.
pub fn bmm<T: Element>(self_: Src<'_, T>, mat2: Src<'_, T>, mut out: Dst<'_, T>) -> KResult<()> {
    bmm_meta(&self_.layout.sizes, &mat2.layout.sizes)?;
    reject_bool::<T>("bmm")?;
    let (la, lb) = (self_.layout, mat2.layout);
    let (bs, m, k, n) = (la.sizes[0], la.sizes[1], la.sizes[2], lb.sizes[2]);
    let c = contiguous_out(&mut out)?;
    if c.len() != bs * m * n {
        return Err(KernelError::shape(format!(
            "internal error: output has {} elements, expected {}",
            c.len(),
            bs * m * n
        )));
    }
    if c.is_empty() {
        return Ok(());
    }
    let one = |bi: usize, cb: &mut [T]| {
        let a = Mat::new(
            self_.data,
            la.offset + bi * la.strides[0],
            [m, k],
            [la.strides[1], la.strides[2]],
        );
        let b = Mat::new(
            mat2.data,
            lb.offset + bi * lb.strides[0],
            [k, n],
            [lb.strides[1], lb.strides[2]],
        );
        gemm(m, k, n, a, b, cb)
    };
    if fan_out(bs > 1 && bs.saturating_mul(m * n).saturating_mul(k) >= PARALLEL_FLOPS) {
        let first_error = std::sync::Mutex::new(None);
        par_chunks_mut(c, m * n, &|bi, cb| {
            if let Err(e) = one(bi, cb) {
                first_error
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get_or_insert(e);
            }
        });
        first_error
            .into_inner()
            .unwrap_or_else(|p| p.into_inner())
            .map_or(Ok(()), Err)
    } else {
        c.chunks_mut(m * n)
            .enumerate()
            .try_for_each(|(bi, cb)| one(bi, cb))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::half::{bf16, f16};
    use crate::Layout;

    /// Naive f64 product of logical matrices given as `value(i, j)` functions.
    fn naive(
        m: usize,
        k: usize,
        n: usize,
        a: impl Fn(usize, usize) -> f64,
        b: impl Fn(usize, usize) -> f64,
    ) -> Vec<f64> {
        let mut out = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                for l in 0..k {
                    out[i * n + j] += a(i, l) * b(l, j);
                }
            }
        }
        out
    }

    fn run_mm<T: Element>(a: &[T], la: &Layout, b: &[T], lb: &Layout) -> KResult<Vec<f64>> {
        let shape = mm_meta(&la.sizes, &lb.sizes)?.remove(0);
        let lo = Layout::contiguous(&shape);
        let mut c = vec![T::default(); lo.numel()];
        mm(Src::new(a, la), Src::new(b, lb), Dst::new(&mut c, &lo))?;
        Ok(c.iter().map(|v| v.to_f64()).collect())
    }

    fn close(a: &[f64], b: &[f64], tol: f64) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() <= tol * (1.0 + y.abs()), "{x} vs {y}");
        }
    }

    fn val(i: usize, j: usize) -> f64 {
        ((i * 7 + j * 3) % 11) as f64 - 5.0
    }

    #[test]
    fn mm_f32_f64_with_transposed_and_broadcast_inputs() {
        let (m, k, n) = (5, 4, 3);
        // a: contiguous m x k. b: k x n stored transposed (n x k contiguous).
        let a: Vec<f64> = (0..m * k).map(|p| val(p / k, p % k)).collect();
        let la = Layout::contiguous(&[m, k]);
        let bt: Vec<f64> = (0..n * k).map(|p| val(p % k + 10, p / k)).collect();
        let lb = Layout::contiguous(&[n, k]).transpose(0, 1).unwrap();
        let want = naive(m, k, n, val, |l, j| val(l + 10, j));
        close(&run_mm(&a, &la, &bt, &lb).unwrap(), &want, 1e-12);
        let (a32, b32): (Vec<f32>, Vec<f32>) = (
            a.iter().map(|&v| v as f32).collect(),
            bt.iter().map(|&v| v as f32).collect(),
        );
        close(&run_mm(&a32, &la, &b32, &lb).unwrap(), &want, 1e-6);

        // b broadcast from a single row: every row of b is [1, 2, 3].
        let row = vec![1.0f32, 2.0, 3.0];
        let lrow = Layout::contiguous(&[1, n]).broadcast_to(&[k, n]).unwrap();
        let want = naive(m, k, n, val, |_, j| (j + 1) as f64);
        close(&run_mm(&a32, &la, &row, &lrow).unwrap(), &want, 1e-6);
    }

    #[test]
    fn mm_half_int_and_bool() {
        let (m, k, n) = (3, 4, 2);
        let la = Layout::contiguous(&[m, k]);
        let lb = Layout::contiguous(&[k, n]);
        let want = naive(m, k, n, val, |l, j| val(j, l));
        let a: Vec<f16> = (0..m * k)
            .map(|p| f16::from_f64(val(p / k, p % k)))
            .collect();
        let b: Vec<f16> = (0..k * n)
            .map(|p| f16::from_f64(val(p % n, p / n)))
            .collect();
        close(&run_mm(&a, &la, &b, &lb).unwrap(), &want, 1e-3);
        let a: Vec<bf16> = a.iter().map(|v| bf16::from_f32(v.to_f32())).collect();
        let b: Vec<bf16> = b.iter().map(|v| bf16::from_f32(v.to_f32())).collect();
        close(&run_mm(&a, &la, &b, &lb).unwrap(), &want, 1e-2);

        let ai: Vec<i32> = (0..m * k).map(|p| val(p / k, p % k) as i32).collect();
        // b as i32, read through a transposed layout.
        let bi: Vec<i32> = (0..n * k).map(|p| val(p / k, p % k) as i32).collect();
        let lbt = Layout::contiguous(&[n, k]).transpose(0, 1).unwrap();
        close(&run_mm(&ai, &la, &bi, &lbt).unwrap(), &want, 0.0);
        // Integer products wrap like PyTorch's.
        let big = vec![i64::MAX, 2];
        let (l12, l21) = (Layout::contiguous(&[1, 2]), Layout::contiguous(&[2, 1]));
        let two = vec![2i64, 1];
        let got = run_mm(&big, &l12, &two, &l21).unwrap();
        assert_eq!(got, vec![i64::MAX.wrapping_mul(2).wrapping_add(2) as f64]);

        let t = vec![true; 4];
        let l22 = Layout::contiguous(&[2, 2]);
        assert_eq!(
            run_mm(&t, &l22, &t, &l22).unwrap_err().to_string(),
            "\"addmm_impl_cpu_\" not implemented for 'Bool'"
        );
    }

    #[test]
    fn mm_empty_dims() {
        let e: Vec<f32> = vec![];
        // k = 0: a 3x0 @ 0x2 product is all zeros.
        let got = run_mm(
            &e,
            &Layout::contiguous(&[3, 0]),
            &e,
            &Layout::contiguous(&[0, 2]),
        )
        .unwrap();
        assert_eq!(got, vec![0.0; 6]);
        // m = 0: nothing to compute.
        let (none, ones) = (Vec::<i64>::new(), vec![1i64; 4]);
        let got = run_mm(
            &none,
            &Layout::contiguous(&[0, 2]),
            &ones,
            &Layout::contiguous(&[2, 2]),
        )
        .unwrap();
        assert_eq!(got, Vec::<f64>::new());
        // k = 0 on the integer path.
        let got = run_mm(
            &none,
            &Layout::contiguous(&[2, 0]),
            &none,
            &Layout::contiguous(&[0, 3]),
        )
        .unwrap();
        assert_eq!(got, vec![0.0; 6]);
    }

    #[test]
    fn mm_large_runs_row_blocks_in_parallel() {
        let (m, k, n) = (130, 70, 90);
        let a: Vec<f64> = (0..m * k).map(|p| val(p / k, p % k)).collect();
        let b: Vec<f64> = (0..k * n).map(|p| val(p / n + 3, p % n)).collect();
        let want = naive(m, k, n, val, |l, j| val(l + 3, j));
        let (la, lb) = (Layout::contiguous(&[m, k]), Layout::contiguous(&[k, n]));
        close(&run_mm(&a, &la, &b, &lb).unwrap(), &want, 1e-12);
        let ai: Vec<i64> = a.iter().map(|&v| v as i64).collect();
        let bi: Vec<i64> = b.iter().map(|&v| v as i64).collect();
        close(&run_mm(&ai, &la, &bi, &lb).unwrap(), &want, 0.0);
    }

    fn run_bmm<T: Element>(a: &[T], la: &Layout, b: &[T], lb: &Layout) -> KResult<Vec<f64>> {
        let shape = bmm_meta(&la.sizes, &lb.sizes)?.remove(0);
        let lo = Layout::contiguous(&shape);
        let mut c = vec![T::default(); lo.numel()];
        bmm(Src::new(a, la), Src::new(b, lb), Dst::new(&mut c, &lo))?;
        Ok(c.iter().map(|v| v.to_f64()).collect())
    }

    #[test]
    fn bmm_with_permuted_and_broadcast_batches() {
        for (bs, m, k, n) in [(3, 2, 4, 5), (40, 30, 20, 25)] {
            // a: logical [bs, m, k] stored as [m, bs, k]; b: one [k, n] matrix broadcast over bs.
            let av = |b: usize, i: usize, l: usize| val(i + b, l * 2 + b);
            let mut a = vec![0.0f32; bs * m * k];
            for b in 0..bs {
                for i in 0..m {
                    for l in 0..k {
                        a[(i * bs + b) * k + l] = av(b, i, l) as f32;
                    }
                }
            }
            let la = Layout::contiguous(&[m, bs, k]).permute(&[1, 0, 2]).unwrap();
            let bmat: Vec<f32> = (0..k * n).map(|p| val(p / n, p % n + 1) as f32).collect();
            let lb = Layout::contiguous(&[1, k, n])
                .expand(&[bs as i64, -1, -1])
                .unwrap();
            let mut want = vec![];
            for b in 0..bs {
                want.extend(naive(m, k, n, |i, l| av(b, i, l), |l, j| val(l, j + 1)));
            }
            close(&run_bmm(&a, &la, &bmat, &lb).unwrap(), &want, 1e-5);
        }
    }

    #[test]
    fn bmm_int_half_empty_and_errors() {
        let a = vec![1i16, 2, 3, 4, 5, 6, 7, 8];
        let l = Layout::contiguous(&[2, 2, 2]);
        let got = run_bmm(&a, &l, &a, &l).unwrap();
        let want: Vec<f64> = (0..2)
            .flat_map(|b| {
                naive(
                    2,
                    2,
                    2,
                    move |i, l| (b * 4 + i * 2 + l + 1) as f64,
                    move |l, j| (b * 4 + l * 2 + j + 1) as f64,
                )
            })
            .collect();
        assert_eq!(got, want);
        let h: Vec<f16> = a.iter().map(|&v| f16::from_f64(v as f64)).collect();
        assert_eq!(run_bmm(&h, &l, &h, &l).unwrap(), want);

        let e: Vec<f64> = vec![];
        let got = run_bmm(
            &e,
            &Layout::contiguous(&[2, 3, 0]),
            &e,
            &Layout::contiguous(&[2, 0, 2]),
        )
        .unwrap();
        assert_eq!(got, vec![0.0; 12]);
        assert_eq!(
            run_bmm(
                &e,
                &Layout::contiguous(&[0, 3, 2]),
                &e,
                &Layout::contiguous(&[0, 2, 2])
            )
            .unwrap(),
            vec![]
        );

        let b = vec![false; 8];
        assert_eq!(
            run_bmm(&b, &l, &b, &l).unwrap_err().to_string(),
            "\"bmm\" not implemented for 'Bool'"
        );
        assert_eq!(
            bmm_meta(&[2, 3], &[2, 3, 4]).unwrap_err().to_string(),
            "batch1 must be a 3D tensor"
        );
        assert_eq!(
            bmm_meta(&[2, 3, 4], &[4, 5]).unwrap_err().to_string(),
            "batch2 must be a 3D tensor"
        );
        assert_eq!(
            bmm_meta(&[4, 2, 3], &[4, 5, 6]).unwrap_err().to_string(),
            "Expected size for first two dimensions of batch2 tensor to be: [4, 3] but got: [4, 5]."
        );
    }

    /// Deterministic values in [-2, 2) on a 1/64 grid (exact in bf16), from a xorshift.
    fn bf16_values(len: usize, seed: u64) -> Vec<f64> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                ((x >> 40) % 256) as f64 / 64.0 - 2.0
            })
            .collect()
    }

    /// A half type under test: its conversions and its unit roundoff.
    trait TestHalf: Copy + PartialEq + std::fmt::Debug + 'static {
        /// 2^-(significand bits): half an ulp of 1, relative.
        const UNIT: f64;
        fn of(v: f64) -> Self;
        fn val(self) -> f64;
    }
    macro_rules! test_half {
        ($($t:ty: $unit:expr),*) => { $(
            impl TestHalf for $t {
                const UNIT: f64 = $unit;
                fn of(v: f64) -> Self {
                    <$t>::from_f64(v)
                }
                fn val(self) -> f64 {
                    self.to_f64()
                }
            }
        )* };
    }
    test_half!(bf16: 1.0 / 256.0, f16: 1.0 / 2048.0);
    // f32 through the same checks: the test values' products and sums are exact in f32.
    impl TestHalf for f32 {
        const UNIT: f64 = 1.0 / 16_777_216.0;
        fn of(v: f64) -> Self {
            v as f32
        }
        fn val(self) -> f64 {
            f64::from(self)
        }
    }

    /// How a logical `rows x cols` matrix is stored.
    #[derive(Clone, Copy, Debug)]
    enum Store {
        Contiguous,
        /// Stored as its transpose (column-major).
        Transposed,
        /// Every other row and column of a larger buffer, at an offset.
        Sliced,
        /// One row repeated (row stride 0).
        Broadcast,
    }

    /// A buffer holding `vals` (row-major `rows x cols`, rounded to `H`) stored as `how`,
    /// with the offset and strides that view it. For `Broadcast`, row 0 of `vals` is
    /// stored and the returned values are that row repeated.
    #[allow(clippy::type_complexity)]
    fn store<H: TestHalf>(
        vals: &[f64],
        rows: usize,
        cols: usize,
        how: Store,
    ) -> (Vec<H>, usize, [usize; 2], Vec<f64>) {
        let h = |v: f64| H::of(v);
        let at = |i: usize, j: usize| vals[i * cols + j];
        match how {
            Store::Contiguous => (
                vals.iter().map(|&v| h(v)).collect(),
                0,
                [cols, 1],
                vals.to_vec(),
            ),
            Store::Transposed => {
                let buf = (0..rows * cols)
                    .map(|p| h(at(p % rows, p / rows)))
                    .collect();
                (buf, 0, [1, rows], vals.to_vec())
            }
            Store::Sliced => {
                let (rs, off) = (2 * (2 * cols + 3), 2 * cols + 4);
                let mut buf = vec![h(1e4); off + rows * rs + 1];
                for i in 0..rows {
                    for j in 0..cols {
                        buf[off + i * rs + 2 * j] = h(at(i, j));
                    }
                }
                (buf, off, [rs, 2], vals.to_vec())
            }
            Store::Broadcast => {
                let buf: Vec<H> = vals[..cols].iter().map(|&v| h(v)).collect();
                let logical = (0..rows * cols).map(|p| vals[p % cols]).collect();
                (buf, 0, [0, 1], logical)
            }
        }
    }

    /// Checks a half product against the f64 sum of the same (exactly representable)
    /// inputs: within one rounding to `H` plus a bound on f32 accumulation error, and equal
    /// to the f64 sum rounded to `H` for nearly every element.
    fn check_half<H: TestHalf>(
        got: &[H],
        m: usize,
        k: usize,
        n: usize,
        a: &[f64],
        b: &[f64],
        what: &str,
    ) {
        let (mut exact_matches, total) = (0usize, m * n);
        for i in 0..m {
            for j in 0..n {
                let (mut s, mut mag) = (0.0f64, 0.0f64);
                for l in 0..k {
                    s += a[i * k + l] * b[l * n + j];
                    mag += (a[i * k + l] * b[l * n + j]).abs();
                }
                let acc = k as f64 * mag * f64::powi(2.0, -23);
                let g = got[i * n + j].val();
                let tol = H::UNIT * (s.abs() + acc) + acc;
                assert!(
                    (g - s).abs() <= tol,
                    "{what}: ({i}, {j}) of {m}x{k}x{n}: got {g}, exact {s}"
                );
                exact_matches += usize::from(got[i * n + j] == H::of(s));
            }
        }
        assert!(
            exact_matches * 100 >= total * 95,
            "{what}: only {exact_matches} of {total} equal the rounded exact sum"
        );
    }

    fn check_bf16(got: &[bf16], m: usize, k: usize, n: usize, a: &[f64], b: &[f64], what: &str) {
        check_half(got, m, k, n, a, b, what)
    }

    const BF16_SHAPES: [(usize, usize, usize); 14] = [
        (1, 1, 1),
        (1, 5, 1),
        (3, 1, 4),
        (12, 2, 32),
        (13, 7, 33),
        (11, 1, 31),
        (25, 64, 65),
        (24, 63, 64),
        (100, 129, 70),
        (37, 300, 50),
        (5, 1000, 3),
        (150, 257, 97),
        (13, 261, 300),
        // Several row tasks, several k blocks of both kernels, a ragged last panel.
        (400, 530, 90),
    ];

    /// Every shape × storage through one of the half paths.
    fn half_paths_agree<H: TestHalf>(
        run: impl Fn(usize, usize, usize, Mat<'_, H>, Mat<'_, H>, &mut [H]),
        what: &str,
    ) {
        let stores = [
            (Store::Contiguous, Store::Contiguous),
            (Store::Transposed, Store::Contiguous),
            (Store::Contiguous, Store::Transposed),
            (Store::Transposed, Store::Transposed),
            (Store::Sliced, Store::Sliced),
            (Store::Sliced, Store::Broadcast),
        ];
        for (si, &(m, k, n)) in BF16_SHAPES.iter().enumerate() {
            for &(sa, sb) in &stores {
                let av = bf16_values(m * k, 2 * si as u64 + 1);
                let bv = bf16_values(k * n, 2 * si as u64 + 2);
                let (abuf, aoff, ast, a) = store::<H>(&av, m, k, sa);
                let (bbuf, boff, bst, b) = store::<H>(&bv, k, n, sb);
                let (am, bm) = (
                    Mat::new(&abuf, aoff, [m, k], ast),
                    Mat::new(&bbuf, boff, [k, n], bst),
                );
                am.check_in_bounds(m, k).unwrap();
                bm.check_in_bounds(k, n).unwrap();
                let mut c = vec![H::of(7.0); m * n];
                run(m, k, n, am, bm, &mut c);
                check_half(&c, m, k, n, &a, &b, &format!("{what} {sa:?} @ {sb:?}"));
            }
        }
    }

    #[test]
    fn half_widening_path_matches_f64_reference() {
        half_paths_agree::<bf16>(
            |m, k, n, a, b, c| widen_gemm(m, k, n, a, b, c).unwrap(),
            "widen bf16",
        );
        half_paths_agree::<f16>(
            |m, k, n, a, b, c| widen_gemm(m, k, n, a, b, c).unwrap(),
            "widen f16",
        );
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn bf16_avx512bf16_path_matches_f64_reference() {
        let Some(isa) = avx512bf16::Avx512Bf16::detect_ignoring_env() else {
            eprintln!("no AVX512-BF16 on this CPU: its kernel is not tested here");
            return;
        };
        half_paths_agree::<bf16>(
            |m, k, n, a, b, c| packed::gemm::<_, bf16>(isa, m, k, n, a, b, c),
            "avx512bf16",
        );
        ties_round_once_to_even(|m, k, n, a, b, c| packed::gemm::<_, bf16>(isa, m, k, n, a, b, c));
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn bf16_amx_path_matches_f64_reference() {
        let Some(isa) = amx::Amx::detect_ignoring_env() else {
            eprintln!("no AMX-BF16 (or no tile state from the OS) here: its kernel is not tested");
            return;
        };
        half_paths_agree::<bf16>(
            |m, k, n, a, b, c| packed::gemm::<_, bf16>(isa, m, k, n, a, b, c),
            "amx",
        );
        ties_round_once_to_even(|m, k, n, a, b, c| packed::gemm::<_, bf16>(isa, m, k, n, a, b, c));
        // Another library's tile shapes on this thread: the next product loads its own.
        amx::configure_as_another_library(isa);
        // addmm's f32 sums are added to, over several k blocks (512 pairs: 2 blocks, a tail).
        let (m, k, n) = (40, 1030, 33);
        let (av, bv) = (bf16_values(m * k, 93), bf16_values(k * n, 94));
        let (a, b): (Vec<bf16>, Vec<bf16>) = (
            av.iter().map(|&v| bf16::from_f64(v)).collect(),
            bv.iter().map(|&v| bf16::from_f64(v)).collect(),
        );
        let mut sums = vec![0.25f32; m * n];
        let (am, bm) = (Mat::dense(&a, k), Mat::dense(&b, n));
        packed::gemm::<_, packed::Accumulate>(isa, m, k, n, am, bm, &mut sums);
        for i in 0..m {
            for j in 0..n {
                let exact: f64 = 0.25 + (0..k).map(|l| av[i * k + l] * bv[l * n + j]).sum::<f64>();
                let bound = 1e-5
                    * (1.0
                        + (0..k)
                            .map(|l| (av[i * k + l] * bv[l * n + j]).abs())
                            .sum::<f64>());
                assert!(
                    (f64::from(sums[i * n + j]) - exact).abs() <= bound,
                    "amx addmm ({i}, {j})"
                );
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn half_fma_path_matches_f64_reference() {
        let (Some(bf), Some(f)) = (fma::Fma::<bf16>::detect(), fma::Fma::<f16>::detect()) else {
            eprintln!("no AVX2 + FMA + F16C on this CPU: its kernel is not tested here");
            return;
        };
        half_paths_agree::<bf16>(
            |m, k, n, a, b, c| packed::gemm::<_, bf16>(bf, m, k, n, a, b, c),
            "fma bf16",
        );
        half_paths_agree::<f16>(
            |m, k, n, a, b, c| packed::gemm::<_, f16>(f, m, k, n, a, b, c),
            "fma f16",
        );
        ties_round_once_to_even(|m, k, n, a, b, c| packed::gemm::<_, bf16>(bf, m, k, n, a, b, c));
        // f16: 1 + 2^-11 is halfway between 1 and 1 + 2^-10; a sum past f16's range is inf.
        let one = [f16::ONE; 2];
        let (a, mut c) = (Mat::dense(&one, 2), [f16::ZERO]);
        let half_ulp = [f16::ONE, f16::from_f64(f64::powi(2.0, -11))];
        packed::gemm::<_, f16>(f, 1, 2, 1, a, Mat::dense(&half_ulp, 1), &mut c);
        assert_eq!(c[0], f16::ONE);
        let big = [f16::MAX, f16::MAX];
        packed::gemm::<_, f16>(f, 1, 2, 1, a, Mat::dense(&big, 1), &mut c);
        assert_eq!(c[0], f16::INFINITY);
        // The f32 sums of an addmm-style caller are added to, not overwritten.
        let mut sums = [0.5f32];
        packed::gemm::<_, packed::Accumulate>(f, 1, 2, 1, a, Mat::dense(&half_ulp, 1), &mut sums);
        assert_eq!(sums[0], 1.5 + f32::powi(2.0, -11));
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn f32_fma_path_matches_f64_reference() {
        let Some(isa) = fma::Fma::<f32>::detect() else {
            eprintln!("no AVX2 + FMA on this CPU: kiln's f32 kernel is not tested here");
            return;
        };
        half_paths_agree::<f32>(
            |m, k, n, a, b, c| packed::gemm::<_, packed::Assign>(isa, m, k, n, a, b, c),
            "fma f32",
        );
        // Accumulate adds each sum to what the output holds (addmm's bias); Assign
        // overwrites it (the 7s `half_paths_agree` starts from are gone above).
        let (m, k, n) = (13, 300, 37);
        let (av, bv) = (bf16_values(m * k, 91), bf16_values(k * n, 92));
        let (a32, b32): (Vec<f32>, Vec<f32>) = (
            av.iter().map(|&v| v as f32).collect(),
            bv.iter().map(|&v| v as f32).collect(),
        );
        let bias: Vec<f32> = (0..m * n).map(|p| p as f32 * 0.25 - 40.0).collect();
        let mut c = bias.clone();
        let (am, bm) = (Mat::dense(&a32, k), Mat::dense(&b32, n));
        packed::gemm::<_, packed::Accumulate>(isa, m, k, n, am, bm, &mut c);
        for i in 0..m {
            for j in 0..n {
                let s: f64 = (0..k).map(|l| av[i * k + l] * bv[l * n + j]).sum();
                assert_eq!(f64::from(c[i * n + j]), s + f64::from(bias[i * n + j]));
            }
        }
    }

    /// A bf16 kernel rounds each sum once, ties to even: 1 + 2^-8 is halfway between bf16 1
    /// and 1 + 2^-7.
    #[cfg(target_arch = "x86_64")]
    fn ties_round_once_to_even(
        run: impl Fn(usize, usize, usize, Mat<'_, bf16>, Mat<'_, bf16>, &mut [bf16]),
    ) {
        let one = [bf16::ONE; 2];
        let half_ulp = [bf16::ONE, bf16::from_f64(f64::powi(2.0, -8))];
        let (a, b) = (Mat::dense(&one, 2), Mat::dense(&half_ulp, 1));
        let mut c = [bf16::ZERO];
        run(1, 2, 1, a, b, &mut c);
        assert_eq!(c[0], bf16::ONE);
        let three_q = [bf16::ONE, bf16::from_f64(3.0 * f64::powi(2.0, -8))];
        run(1, 2, 1, a, Mat::dense(&three_q, 1), &mut c);
        assert_eq!(c[0].to_f64(), 1.0 + f64::powi(2.0, -6));
    }

    #[test]
    fn bf16_mm_and_bmm_through_layouts() {
        // Whatever path this CPU takes: a transposed mm and a bmm with permuted batches.
        let (m, k, n) = (29, 77, 45);
        let av = bf16_values(m * k, 11);
        let bv = bf16_values(k * n, 12);
        let at: Vec<bf16> = (0..m * k)
            .map(|p| bf16::from_f64(av[(p % m) * k + p / m]))
            .collect();
        let la = Layout::contiguous(&[k, m]).transpose(0, 1).unwrap();
        let b: Vec<bf16> = bv.iter().map(|&v| bf16::from_f64(v)).collect();
        let lb = Layout::contiguous(&[k, n]);
        let got: Vec<bf16> = run_mm(&at, &la, &b, &lb)
            .unwrap()
            .iter()
            .map(|&v| bf16::from_f64(v))
            .collect();
        check_bf16(&got, m, k, n, &av, &bv, "mm");

        // a: logical [bs, m, k] stored as [m, bs, k]; b: [bs, k, n] sliced from [bs, k, 2n].
        let bs = 3;
        let a3 = bf16_values(bs * m * k, 13);
        let b3 = bf16_values(bs * k * n, 14);
        let mut abuf = vec![bf16::ZERO; bs * m * k];
        for bi in 0..bs {
            for i in 0..m {
                for l in 0..k {
                    abuf[(i * bs + bi) * k + l] = bf16::from_f64(a3[(bi * m + i) * k + l]);
                }
            }
        }
        let la = Layout::contiguous(&[m, bs, k]).permute(&[1, 0, 2]).unwrap();
        let mut bbuf = vec![bf16::from_f64(1e4); bs * k * 2 * n];
        for bi in 0..bs {
            for l in 0..k {
                for j in 0..n {
                    bbuf[(bi * k + l) * 2 * n + j] = bf16::from_f64(b3[(bi * k + l) * n + j]);
                }
            }
        }
        let lb = Layout::contiguous(&[bs, k, 2 * n])
            .narrow(2, 0, n as i64)
            .unwrap();
        let got: Vec<bf16> = run_bmm(&abuf, &la, &bbuf, &lb)
            .unwrap()
            .iter()
            .map(|&v| bf16::from_f64(v))
            .collect();
        for bi in 0..bs {
            check_bf16(
                &got[bi * m * n..][..m * n],
                m,
                k,
                n,
                &a3[bi * m * k..][..m * k],
                &b3[bi * k * n..][..k * n],
                &format!("bmm batch {bi}"),
            );
        }
    }

    #[test]
    fn mm_meta_errors() {
        assert_eq!(
            mm_meta(&[2, 3, 1], &[3, 2]).unwrap_err().to_string(),
            "self must be a matrix"
        );
        assert_eq!(
            mm_meta(&[2, 3], &[3]).unwrap_err().to_string(),
            "mat2 must be a matrix"
        );
        assert_eq!(
            mm_meta(&[2, 3], &[4, 5]).unwrap_err().to_string(),
            "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"
        );
        assert_eq!(mm_meta(&[2, 0], &[0, 5]).unwrap(), vec![vec![2, 5]]);
    }
}
