//! Loss functions and their backward kernels, as ATen writes them: the pointwise losses
//! (`mse_loss`, `smooth_l1_loss`, `huber_loss`, `binary_cross_entropy`) compute each term
//! and reduce it in one pass, accumulating in float64; `nll_loss_forward` picks one class
//! per target and `nll_loss_backward` scatters the gradient back to it.
//!
//! `reduction` is PyTorch's `at::Reduction`: 0 none, 1 mean, 2 sum. A `none` loss has the
//! broadcast shape of its operands; `mean` and `sum` give a 0-d result, and the mean of
//! nothing is NaN.
//!
//! The nll kernels take any input `[C]`, `[N, C]` or `[N, C, d1, ...]` (PyTorch splits the
//! last into `nll_loss2d` and reshapes for `nll_loss_nd`): with `inner` the product of the
//! trailing dims, target `(b, j)` picks input `(b, t, j)`.

use crate::cpu::pointwise::PARALLEL_MIN;
use crate::cpu::shape::{contiguous_out, for_each_block, row_major};
use crate::layout::broadcast_shapes;
use crate::parallel::{fan_out, par_chunks_mut};
use crate::KernelError;
use crate::{Arith, Dst, Element, FloatMath, KResult, Src};
use std::borrow::Cow;

/// `at::Reduction::None`.
pub const NONE: i64 = 0;
/// `at::Reduction::Mean`.
pub const MEAN: i64 = 1;
/// `at::Reduction::Sum`.
pub const SUM: i64 = 2;

/// Elements per parallel task.
const CHUNK: usize = 1 << 13;

/// The element count of `shape`: 0 when a dim is 0 even if the others multiply past
/// `usize` (an empty tensor may have such dims), saturating otherwise.
pub fn element_count(shape: &[usize]) -> usize {
    if shape.contains(&0) {
        return 0;
    }
    shape.iter().fold(1usize, |n, &d| n.saturating_mul(d))
}

/// PyTorch's error for a reduction other than 0, 1, 2.
pub fn check_reduction(reduction: i64) -> KResult<()> {
    if !(NONE..=SUM).contains(&reduction) {
        return Err(KernelError::value(format!(
            "{reduction} is not a valid value for reduction"
        )));
    }
    Ok(())
}

/// The elements of `src` broadcast to `shape`, row-major: borrowed when `src` already is
/// that, copied otherwise.
fn dense<'a, T: Element>(src: &Src<'a, T>, shape: &[usize]) -> KResult<Cow<'a, [T]>> {
    if src.layout.sizes[..] == *shape {
        return Ok(row_major(src));
    }
    let layout = src.layout.broadcast_to(shape)?;
    Ok(Cow::Owned(Src::new(src.data, &layout).to_vec()))
}

/// `Σ f(i)` over `0..n` in float64, split over kiln's pool when large. Chunks are fixed, so
/// the result does not depend on the thread count.
fn sum_f64(n: usize, f: &(dyn Fn(usize) -> f64 + Sync)) -> f64 {
    let chunks = n.div_ceil(CHUNK);
    let partial = |c: usize| (c * CHUNK..((c + 1) * CHUNK).min(n)).map(f).sum::<f64>();
    if fan_out(n >= PARALLEL_MIN) {
        let mut parts = vec![0.0f64; chunks];
        par_chunks_mut(&mut parts, 1, &|c, p| p[0] = partial(c));
        parts.iter().sum()
    } else {
        (0..chunks).map(partial).sum()
    }
}

/// `o[i] = f(i)`, split over kiln's pool when large.
fn fill_with<T: Element>(o: &mut [T], f: &(dyn Fn(usize) -> T + Sync)) {
    if fan_out(o.len() >= PARALLEL_MIN) {
        par_chunks_mut(o, CHUNK, &|c, piece| {
            for (k, v) in piece.iter_mut().enumerate() {
                *v = f(c * CHUNK + k);
            }
        });
    } else {
        o.iter_mut().enumerate().for_each(|(i, v)| *v = f(i));
    }
}

/// Writes the `n` terms `term(i)` of a loss (`none`), or their mean or sum as one element.
fn write_loss<T: Element>(
    n: usize,
    reduction: i64,
    mut out: Dst<'_, T>,
    term: &(dyn Fn(usize) -> T::Compute + Sync),
) -> KResult<()> {
    let o = contiguous_out(&mut out)?;
    if reduction == NONE {
        fill_with(o, &|i| T::down(term(i)));
        return Ok(());
    }
    let total = sum_f64(n, &|i| term(i).to_f64());
    let v = if reduction == MEAN {
        total / n as f64
    } else {
        total
    };
    o[0] = T::down(<T::Compute as Arith>::from_f64(v));
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Pointwise losses
// ---------------------------------------------------------------------------------------

/// The shape `self` and `target` broadcast to (the elements a mean divides by).
fn loss_shape(self_: &[usize], target: &[usize]) -> KResult<Vec<usize>> {
    Ok(broadcast_shapes(self_, target)?.to_vec())
}

/// Output shape of a pointwise loss: the broadcast shape for `none`, 0-d otherwise.
fn loss_meta(self_: &[usize], target: &[usize], reduction: i64) -> KResult<Vec<Vec<usize>>> {
    check_reduction(reduction)?;
    let shape = loss_shape(self_, target)?;
    Ok(vec![if reduction == NONE { shape } else { vec![] }])
}

/// Output shape of a pointwise loss's backward: `grad_output`, `self` and `target`
/// broadcast together.
fn loss_backward_meta(
    grad_output: &[usize],
    self_: &[usize],
    target: &[usize],
    reduction: i64,
) -> KResult<Vec<Vec<usize>>> {
    check_reduction(reduction)?;
    let shape = loss_shape(self_, target)?;
    Ok(vec![broadcast_shapes(grad_output, &shape)?.to_vec()])
}

/// A loss's `(x, t)` pairs broadcast together, and the loss's shape.
struct Pairs<'a, T: Element> {
    x: Cow<'a, [T]>,
    t: Cow<'a, [T]>,
    shape: Vec<usize>,
}

impl<'a, T: Element> Pairs<'a, T> {
    fn new(x: &Src<'a, T>, t: &Src<'a, T>) -> KResult<Self> {
        let shape = loss_shape(&x.layout.sizes, &t.layout.sizes)?;
        Ok(Pairs {
            x: dense(x, &shape)?,
            t: dense(t, &shape)?,
            shape,
        })
    }

    fn len(&self) -> usize {
        element_count(&self.shape)
    }

    /// Element `i` of `x - t`, in compute precision.
    #[inline(always)]
    fn diff(&self, i: usize) -> T::Compute {
        self.x[i].up().sub(self.t[i].up())
    }
}

/// A pointwise loss whose term is `f(x - t)`.
fn difference_loss<T: Element>(
    x: Src<'_, T>,
    t: Src<'_, T>,
    reduction: i64,
    out: Dst<'_, T>,
    f: impl Fn(T::Compute) -> T::Compute + Sync,
) -> KResult<()> {
    check_reduction(reduction)?;
    let p = Pairs::new(&x, &t)?;
    write_loss(p.len(), reduction, out, &|i| f(p.diff(i)))
}

/// The backward of a pointwise loss whose term is `f(x - t)`: `norm * f'(x - t) * g`, with
/// `norm` `1 / n` for a mean over `n` terms and 1 otherwise. `df` is `f'`.
fn difference_loss_backward<T: Element>(
    grad_output: Src<'_, T>,
    x: Src<'_, T>,
    t: Src<'_, T>,
    reduction: i64,
    mut out: Dst<'_, T>,
    df: impl Fn(T::Compute) -> T::Compute + Sync,
) -> KResult<()> {
    check_reduction(reduction)?;
    let n = element_count(&loss_shape(&x.layout.sizes, &t.layout.sizes)?);
    let shape = out.layout.sizes.clone();
    let (g, xs, ts) = (
        dense(&grad_output, &shape)?,
        dense(&x, &shape)?,
        dense(&t, &shape)?,
    );
    let norm = <T::Compute as Arith>::from_f64(if reduction == MEAN {
        1.0 / n as f64
    } else {
        1.0
    });
    let o = contiguous_out(&mut out)?;
    fill_with(o, &|i| {
        let d = xs[i].up().sub(ts[i].up());
        T::down(norm.mul(df(d)).mul(g[i].up()))
    });
    Ok(())
}

/// Output shape of `mse_loss(Tensor self, Tensor target, int reduction=Mean)`.
pub fn mse_loss_meta(
    self_: &[usize],
    target: &[usize],
    reduction: i64,
) -> KResult<Vec<Vec<usize>>> {
    loss_meta(self_, target, reduction)
}

/// `mse_loss`: `(x - t)²`, reduced.
pub fn mse_loss<T: Element>(
    self_: Src<'_, T>,
    target: Src<'_, T>,
    reduction: i64,
    out: Dst<'_, T>,
) -> KResult<()>
where
    T::Compute: FloatMath,
{
    difference_loss(self_, target, reduction, out, |d| d.mul(d))
}

/// Output shape of `mse_loss_backward(Tensor grad_output, Tensor self, Tensor target, int
/// reduction)`.
pub fn mse_loss_backward_meta(
    grad_output: &[usize],
    self_: &[usize],
    target: &[usize],
    reduction: i64,
) -> KResult<Vec<Vec<usize>>> {
    loss_backward_meta(grad_output, self_, target, reduction)
}

/// `mse_loss_backward`: `2 (x - t) g`, divided by the element count for a mean.
pub fn mse_loss_backward<T: Element>(
    grad_output: Src<'_, T>,
    self_: Src<'_, T>,
    target: Src<'_, T>,
    reduction: i64,
    out: Dst<'_, T>,
) -> KResult<()>
where
    T::Compute: FloatMath,
{
    let two = <T::Compute as Arith>::from_f64(2.0);
    difference_loss_backward(grad_output, self_, target, reduction, out, |d| two.mul(d))
}

fn check_beta(beta: f64) -> KResult<()> {
    if beta < 0.0 {
        return Err(KernelError::value(
            "smooth_l1_loss does not support negative values for beta.",
        ));
    }
    Ok(())
}

fn check_delta(delta: f64) -> KResult<()> {
    if delta <= 0.0 {
        return Err(KernelError::value(
            "huber_loss does not support non-positive values for delta.",
        ));
    }
    Ok(())
}

/// Output shape of `smooth_l1_loss(Tensor self, Tensor target, int reduction=Mean, float
/// beta=1.0)`.
pub fn smooth_l1_loss_meta(
    self_: &[usize],
    target: &[usize],
    reduction: i64,
    beta: f64,
) -> KResult<Vec<Vec<usize>>> {
    check_beta(beta)?;
    loss_meta(self_, target, reduction)
}

/// `smooth_l1_loss`: `0.5 d² / beta` where `|d| < beta`, else `|d| - 0.5 beta`, for
/// `d = x - t`; `beta = 0` is the L1 loss.
pub fn smooth_l1_loss<T: Element>(
    self_: Src<'_, T>,
    target: Src<'_, T>,
    reduction: i64,
    beta: f64,
    out: Dst<'_, T>,
) -> KResult<()>
where
    T::Compute: FloatMath,
{
    check_beta(beta)?;
    let b = <T::Compute as Arith>::from_f64(beta);
    let (half, half_b) = (
        <T::Compute as Arith>::from_f64(0.5),
        <T::Compute as Arith>::from_f64(0.5 * beta),
    );
    difference_loss(self_, target, reduction, out, |d| {
        let a = d.abs();
        if a < b {
            half.mul(a).mul(a).div(b)
        } else {
            a.sub(half_b)
        }
    })
}

/// Output shape of `smooth_l1_loss_backward(Tensor grad_output, Tensor self, Tensor target,
/// int reduction, float beta)`.
pub fn smooth_l1_loss_backward_meta(
    grad_output: &[usize],
    self_: &[usize],
    target: &[usize],
    reduction: i64,
    beta: f64,
) -> KResult<Vec<Vec<usize>>> {
    check_beta(beta)?;
    loss_backward_meta(grad_output, self_, target, reduction)
}

/// `smooth_l1_loss_backward`: `g * d / beta` inside `[-beta, beta]`, `g * sign(d)` outside
/// (`beta = 0`: `sign(d)`, 0 at 0), divided by the element count for a mean.
pub fn smooth_l1_loss_backward<T: Element>(
    grad_output: Src<'_, T>,
    self_: Src<'_, T>,
    target: Src<'_, T>,
    reduction: i64,
    beta: f64,
    out: Dst<'_, T>,
) -> KResult<()>
where
    T::Compute: FloatMath,
{
    check_beta(beta)?;
    let b = <T::Compute as Arith>::from_f64(beta);
    let (zero, one) = (<T::Compute as Arith>::zero(), <T::Compute as Arith>::one());
    difference_loss_backward(grad_output, self_, target, reduction, out, |d| {
        if d < b.neg() {
            one.neg()
        } else if d > b {
            one
        } else if beta == 0.0 {
            zero
        } else {
            d.div(b)
        }
    })
}

/// Output shape of `huber_loss(Tensor self, Tensor target, int reduction=Mean, float
/// delta=1.0)`.
pub fn huber_loss_meta(
    self_: &[usize],
    target: &[usize],
    reduction: i64,
    delta: f64,
) -> KResult<Vec<Vec<usize>>> {
    check_delta(delta)?;
    loss_meta(self_, target, reduction)
}

/// `huber_loss`: `0.5 d²` where `|d| <= delta`, else `delta (|d| - 0.5 delta)`.
pub fn huber_loss<T: Element>(
    self_: Src<'_, T>,
    target: Src<'_, T>,
    reduction: i64,
    delta: f64,
    out: Dst<'_, T>,
) -> KResult<()>
where
    T::Compute: FloatMath,
{
    check_delta(delta)?;
    let dl = <T::Compute as Arith>::from_f64(delta);
    let (half, half_dl) = (
        <T::Compute as Arith>::from_f64(0.5),
        <T::Compute as Arith>::from_f64(0.5 * delta),
    );
    difference_loss(self_, target, reduction, out, |d| {
        let a = d.abs();
        if a <= dl {
            half.mul(a).mul(a)
        } else {
            dl.mul(a.sub(half_dl))
        }
    })
}

/// Output shape of `huber_loss_backward(Tensor grad_output, Tensor self, Tensor target, int
/// reduction, float delta)`.
pub fn huber_loss_backward_meta(
    grad_output: &[usize],
    self_: &[usize],
    target: &[usize],
    reduction: i64,
    delta: f64,
) -> KResult<Vec<Vec<usize>>> {
    check_delta(delta)?;
    loss_backward_meta(grad_output, self_, target, reduction)
}

/// `huber_loss_backward`: `g * d` inside `[-delta, delta]`, `g * delta * sign(d)` outside,
/// divided by the element count for a mean.
pub fn huber_loss_backward<T: Element>(
    grad_output: Src<'_, T>,
    self_: Src<'_, T>,
    target: Src<'_, T>,
    reduction: i64,
    delta: f64,
    out: Dst<'_, T>,
) -> KResult<()>
where
    T::Compute: FloatMath,
{
    check_delta(delta)?;
    let dl = <T::Compute as Arith>::from_f64(delta);
    difference_loss_backward(grad_output, self_, target, reduction, out, |d| {
        if d < dl.neg() {
            dl.neg()
        } else if d > dl {
            dl
        } else {
            d
        }
    })
}

// ---------------------------------------------------------------------------------------
// Binary cross entropy
// ---------------------------------------------------------------------------------------

/// `binary_cross_entropy_backward` divides by `max(x (1 - x), EPSILON)`, as ATen does.
pub const BCE_EPSILON: f64 = 1e-12;

/// PyTorch's shape rule: `target` of `self`'s shape, `weight` broadcastable to it.
fn bce_shapes(self_: &[usize], target: &[usize], weight: Option<&[usize]>) -> KResult<()> {
    if self_ != target {
        return Err(KernelError::value(format!(
            "Using a target size ({target:?}) that is different to the input size ({self_:?}) is deprecated. Please ensure they have the same size."
        )));
    }
    if let Some(w) = weight {
        let b = broadcast_shapes(w, self_)?;
        if b[..] != *self_ {
            return Err(KernelError::shape(format!(
                "weight of size {w:?} does not broadcast to the input size {self_:?}"
            )));
        }
    }
    Ok(())
}

/// PyTorch's checks of the values: probabilities in `[0, 1]` (NaN is not).
fn check_probabilities<T: Element>(input: &[T], target: &[T]) -> KResult<()> {
    let inside = |v: &T| {
        let v = v.to_f64();
        (0.0..=1.0).contains(&v)
    };
    if !input.iter().all(inside) {
        return Err(KernelError::value(
            "all elements of input should be between 0 and 1",
        ));
    }
    if !target.iter().all(inside) {
        return Err(KernelError::value(
            "all elements of target should be between 0 and 1",
        ));
    }
    Ok(())
}

/// Output shape of `binary_cross_entropy(Tensor self, Tensor target, Tensor? weight=None,
/// int reduction=Mean)`.
pub fn binary_cross_entropy_meta(
    self_: &[usize],
    target: &[usize],
    weight: Option<&[usize]>,
    reduction: i64,
) -> KResult<Vec<Vec<usize>>> {
    check_reduction(reduction)?;
    bce_shapes(self_, target, weight)?;
    Ok(vec![if reduction == NONE {
        self_.to_vec()
    } else {
        vec![]
    }])
}

/// `binary_cross_entropy`: `-w (t ln x + (1 - t) ln(1 - x))`, each log clamped at -100.
pub fn binary_cross_entropy<T: Element>(
    self_: Src<'_, T>,
    target: Src<'_, T>,
    weight: Option<Src<'_, T>>,
    reduction: i64,
    out: Dst<'_, T>,
) -> KResult<()>
where
    T::Compute: FloatMath,
{
    check_reduction(reduction)?;
    let shape = self_.layout.sizes.clone();
    bce_shapes(
        &shape,
        &target.layout.sizes,
        weight.map(|w| &w.layout.sizes[..]),
    )?;
    let (x, t) = (dense(&self_, &shape)?, dense(&target, &shape)?);
    check_probabilities(&x, &t)?;
    let w = weight.map(|w| dense(&w, &shape)).transpose()?;
    let floor = <T::Compute as Arith>::from_f64(-100.0);
    let one = <T::Compute as Arith>::one();
    let clamp = |v: T::Compute| if v < floor { floor } else { v };
    write_loss(x.len(), reduction, out, &|i| {
        let (x, t) = (x[i].up(), t[i].up());
        let l = t
            .sub(one)
            .mul(clamp(x.neg().ln_1p()))
            .sub(t.mul(clamp(x.ln())));
        match &w {
            Some(w) => l.mul(w[i].up()),
            None => l,
        }
    })
}

/// Output shape of `binary_cross_entropy_backward(Tensor grad_output, Tensor self, Tensor
/// target, Tensor? weight=None, int reduction=Mean)`: `self`'s.
pub fn binary_cross_entropy_backward_meta(
    grad_output: &[usize],
    self_: &[usize],
    target: &[usize],
    weight: Option<&[usize]>,
    reduction: i64,
) -> KResult<Vec<Vec<usize>>> {
    check_reduction(reduction)?;
    bce_shapes(self_, target, weight)?;
    let b = broadcast_shapes(grad_output, self_)?;
    if b[..] != *self_ {
        return Err(KernelError::shape(format!(
            "grad_output of size {grad_output:?} does not broadcast to the input size {self_:?}"
        )));
    }
    Ok(vec![self_.to_vec()])
}

/// `binary_cross_entropy_backward`: `g w (x - t) / max(x (1 - x), 1e-12)`, divided by the
/// element count for a mean.
pub fn binary_cross_entropy_backward<T: Element>(
    grad_output: Src<'_, T>,
    self_: Src<'_, T>,
    target: Src<'_, T>,
    weight: Option<Src<'_, T>>,
    reduction: i64,
    mut out: Dst<'_, T>,
) -> KResult<()>
where
    T::Compute: FloatMath,
{
    check_reduction(reduction)?;
    let shape = self_.layout.sizes.clone();
    bce_shapes(
        &shape,
        &target.layout.sizes,
        weight.map(|w| &w.layout.sizes[..]),
    )?;
    let (g, x, t) = (
        dense(&grad_output, &shape)?,
        dense(&self_, &shape)?,
        dense(&target, &shape)?,
    );
    let w = weight.map(|w| dense(&w, &shape)).transpose()?;
    let n = x.len();
    let norm = <T::Compute as Arith>::from_f64(if reduction == MEAN {
        1.0 / n as f64
    } else {
        1.0
    });
    let (one, eps) = (
        <T::Compute as Arith>::one(),
        <T::Compute as Arith>::from_f64(BCE_EPSILON),
    );
    let o = contiguous_out(&mut out)?;
    fill_with(o, &|i| {
        let (x, t) = (x[i].up(), t[i].up());
        let denom = one.sub(x).mul(x);
        let denom = if denom < eps { eps } else { denom };
        let v = norm.mul(g[i].up()).mul(x.sub(t)).div(denom);
        T::down(match &w {
            Some(w) => v.mul(w[i].up()),
            None => v,
        })
    });
    Ok(())
}

// ---------------------------------------------------------------------------------------
// nll_loss
// ---------------------------------------------------------------------------------------

/// The geometry of an nll input: batch entries of `inner` target positions each, `classes`
/// classes; target `(b, j)` is flat index `b * inner + j` and picks input element
/// `(b * classes + t) * inner + j`.
struct NllShape {
    classes: usize,
    inner: usize,
    /// The input has a batch dim (it is 2-d or more).
    batched: bool,
}

impl NllShape {
    /// Checks `self`'s and `target`'s shapes (and `weight`'s) as PyTorch does.
    fn new(self_: &[usize], target: &[usize], weight: Option<&[usize]>) -> KResult<NllShape> {
        if self_.is_empty() {
            return Err(KernelError::shape("input tensor should be 1D or more"));
        }
        let batched = self_.len() >= 2;
        let mut expect = self_.to_vec();
        expect.remove(if batched { 1 } else { 0 });
        if target != expect.as_slice() {
            return Err(KernelError::shape(format!(
                "size mismatch (got input: {self_:?}, target: {target:?})"
            )));
        }
        let (classes, inner) = nll_geometry(self_);
        if let Some(w) = weight {
            if w.len() != 1 || w[0] != classes {
                return Err(KernelError::shape(format!(
                    "weight tensor should be defined either for all {classes} classes or no classes but got weight tensor of shape: {w:?}"
                )));
            }
        }
        Ok(NllShape {
            classes,
            inner,
            batched,
        })
    }

    /// Flat input index of class `c` at target position `i`.
    #[inline(always)]
    fn at(&self, i: usize, c: usize) -> usize {
        let (b, j) = (i / self.inner, i % self.inner);
        (b * self.classes + c) * self.inner + j
    }
}

/// `(classes, inner)` of an nll input of `sizes` (1-d or more): its class count and the
/// element count of its trailing dims (1 for `[C]` and `[N, C]`).
pub fn nll_geometry(sizes: &[usize]) -> (usize, usize) {
    if sizes.len() == 1 {
        return (sizes[0], 1);
    }
    (sizes[1], element_count(&sizes[2..]))
}

/// Every target is `ignore_index` or a class index, else PyTorch's error.
pub fn check_targets(targets: &[i64], classes: usize, ignore_index: i64) -> KResult<()> {
    match targets
        .iter()
        .find(|&&t| t != ignore_index && usize::try_from(t).map_or(true, |c| c >= classes))
    {
        Some(t) => Err(KernelError::index(format!("Target {t} is out of bounds."))),
        None => Ok(()),
    }
}

/// Output shapes of `nll_loss_forward(Tensor self, Tensor target, Tensor? weight, int
/// reduction, SymInt ignore_index) -> (Tensor output, Tensor total_weight)`: `output` is
/// `target`-shaped for a batched `none`, 0-d otherwise; `total_weight` is 0-d.
pub fn nll_loss_forward_meta(
    self_: &[usize],
    target: &[usize],
    weight: Option<&[usize]>,
    reduction: i64,
    _ignore_index: i64,
) -> KResult<Vec<Vec<usize>>> {
    check_reduction(reduction)?;
    let s = NllShape::new(self_, target, weight)?;
    let output = if reduction == NONE && s.batched {
        target.to_vec()
    } else {
        vec![]
    };
    Ok(vec![output, vec![]])
}

/// `nll_loss_forward`: `-w[t] x[t]` per target (0 where `t == ignore_index`), as is for a
/// batched `none`, else summed (and divided by the total weight for `mean`). `total_weight`
/// is `Σ w[t]` over the targets kept (0 for a batched `none`, as in ATen).
pub fn nll_loss_forward<T: Element>(
    self_: Src<'_, T>,
    target: Src<'_, i64>,
    weight: Option<Src<'_, T>>,
    reduction: i64,
    ignore_index: i64,
    mut output: Dst<'_, T>,
    mut total_weight: Dst<'_, T>,
) -> KResult<()> {
    check_reduction(reduction)?;
    let s = NllShape::new(
        &self_.layout.sizes,
        &target.layout.sizes,
        weight.map(|w| &w.layout.sizes[..]),
    )?;
    let (x, t) = (row_major(&self_), row_major(&target));
    let w = weight.map(|w| row_major(&w));
    check_targets(&t, s.classes, ignore_index)?;
    let weight_of = |c: usize| w.as_ref().map_or(1.0, |w| w[c].to_f64());
    let o = contiguous_out(&mut output)?;
    let tw = contiguous_out(&mut total_weight)?;
    if reduction == NONE && s.batched {
        fill_with(o, &|i| {
            let c = t[i];
            if c == ignore_index {
                return T::down(<T::Compute as Arith>::zero());
            }
            let c = c as usize;
            T::from_f64(-weight_of(c) * x[s.at(i, c)].to_f64())
        });
        tw[0] = T::from_f64(0.0);
        return Ok(());
    }
    let (mut loss, mut total) = (0.0f64, 0.0f64);
    for (i, &c) in t.iter().enumerate() {
        if c == ignore_index {
            continue;
        }
        let c = c as usize;
        let wc = weight_of(c);
        loss -= wc * x[s.at(i, c)].to_f64();
        total += wc;
    }
    o[0] = T::from_f64(if reduction == MEAN {
        loss / total
    } else {
        loss
    });
    tw[0] = T::from_f64(total);
    Ok(())
}

/// Output shape of `nll_loss_backward(Tensor grad_output, Tensor self, Tensor target,
/// Tensor? weight, int reduction, SymInt ignore_index, Tensor total_weight)`: `self`'s.
pub fn nll_loss_backward_meta(
    grad_output: &[usize],
    self_: &[usize],
    target: &[usize],
    weight: Option<&[usize]>,
    reduction: i64,
    _ignore_index: i64,
    total_weight: &[usize],
) -> KResult<Vec<Vec<usize>>> {
    check_reduction(reduction)?;
    let s = NllShape::new(self_, target, weight)?;
    let tw = element_count(total_weight);
    if tw != 1 {
        return Err(KernelError::shape(format!(
            "expected total_weight to be a single element tensor, got: {total_weight:?} ({tw} elements)"
        )));
    }
    if reduction == NONE && s.batched {
        if grad_output != target {
            return Err(KernelError::shape(format!(
                "Expected grad_output of the target's size {target:?}, but got: {grad_output:?}"
            )));
        }
    } else if grad_output.len() > 1 || element_count(grad_output) != 1 {
        return Err(KernelError::shape(format!(
            "Expected a single element grad_output tensor, but got: {grad_output:?}"
        )));
    }
    Ok(vec![self_.to_vec()])
}

/// `nll_loss_backward`: the input gradient is `-w[t] g` at each kept target's class (`g`
/// divided by `total_weight` for `mean`; per target for a batched `none`) and 0 elsewhere.
#[allow(clippy::too_many_arguments)]
pub fn nll_loss_backward<T: Element>(
    grad_output: Src<'_, T>,
    self_: Src<'_, T>,
    target: Src<'_, i64>,
    weight: Option<Src<'_, T>>,
    reduction: i64,
    ignore_index: i64,
    total_weight: Src<'_, T>,
    mut out: Dst<'_, T>,
) -> KResult<()> {
    check_reduction(reduction)?;
    let s = NllShape::new(
        &self_.layout.sizes,
        &target.layout.sizes,
        weight.map(|w| &w.layout.sizes[..]),
    )?;
    let (g, t) = (row_major(&grad_output), row_major(&target));
    let w = weight.map(|w| row_major(&w));
    check_targets(&t, s.classes, ignore_index)?;
    let per_target = reduction == NONE && s.batched;
    let scale = if reduction == MEAN {
        1.0 / row_major(&total_weight)[0].to_f64()
    } else {
        1.0
    };
    let grad_at = |i: usize| -> T {
        let c = t[i];
        if c == ignore_index {
            return T::from_f64(0.0);
        }
        let wc = w.as_ref().map_or(1.0, |w| w[c as usize].to_f64());
        let go = g[if per_target { i } else { 0 }].to_f64();
        T::from_f64(-wc * go * scale)
    };
    let o = contiguous_out(&mut out)?;
    if o.is_empty() {
        return Ok(());
    }
    // One block of `classes * inner` input elements per batch entry: zeros, then the picked
    // class of each of its `inner` targets.
    let block = s.classes * s.inner;
    let zero = T::from_f64(0.0);
    let one_block = |b: usize, ob: &mut [T]| {
        ob.fill(zero);
        for j in 0..s.inner {
            let i = b * s.inner + j;
            let c = t[i];
            if c != ignore_index {
                ob[c as usize * s.inner + j] = grad_at(i);
            }
        }
    };
    for_each_block(o, block, &one_block);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::half::f16;
    use crate::Layout;

    fn run1<T: Element>(
        shape: &[usize],
        f: impl FnOnce(Dst<'_, T>) -> KResult<()>,
    ) -> KResult<Vec<f64>> {
        let l = Layout::contiguous(shape);
        let mut buf = vec![T::default(); l.numel()];
        f(Dst::new(&mut buf, &l))?;
        Ok(buf.iter().map(|v| v.to_f64()).collect())
    }

    fn close(a: &[f64], b: &[f64], tol: f64) {
        assert_eq!(a.len(), b.len(), "{a:?} vs {b:?}");
        for (x, y) in a.iter().zip(b) {
            assert!(
                (x - y).abs() <= tol * (1.0 + y.abs()) || (x.is_nan() && y.is_nan()),
                "{a:?} vs {b:?}"
            );
        }
    }

    #[test]
    fn mse_of_a_broadcast_target_each_reduction() {
        let (x, t) = (vec![1.0f64, 2.0, 3.0, 4.0], vec![1.5f64, -1.0]);
        let (xl, tl) = (Layout::contiguous(&[2, 2]), Layout::contiguous(&[2]));
        let terms = [0.25, 9.0, 2.25, 25.0];
        for (r, want) in [
            (NONE, terms.to_vec()),
            (MEAN, vec![36.5 / 4.0]),
            (SUM, vec![36.5]),
        ] {
            let shape = mse_loss_meta(&xl.sizes, &tl.sizes, r).unwrap().remove(0);
            let got = run1::<f64>(&shape, |o| {
                mse_loss(Src::new(&x, &xl), Src::new(&t, &tl), r, o)
            })
            .unwrap();
            close(&got, &want, 1e-15);
        }
    }

    #[test]
    fn smooth_l1_and_huber_sides_and_their_slopes() {
        let (x, t) = (vec![0.25f32, 3.0, -2.0], vec![0.0f32; 3]);
        let l = Layout::contiguous(&[3]);
        let s = run1::<f32>(&[3], |o| {
            smooth_l1_loss(Src::new(&x, &l), Src::new(&t, &l), NONE, 1.0, o)
        })
        .unwrap();
        close(&s, &[0.03125, 2.5, 1.5], 1e-7);
        let h = run1::<f32>(&[3], |o| {
            huber_loss(Src::new(&x, &l), Src::new(&t, &l), NONE, 2.0, o)
        })
        .unwrap();
        close(&h, &[0.03125, 4.0, 2.0], 1e-7);
        let g = vec![1.0f32];
        let gl = Layout::contiguous(&[]);
        let ds = run1::<f32>(&[3], |o| {
            smooth_l1_loss_backward(
                Src::new(&g, &gl),
                Src::new(&x, &l),
                Src::new(&t, &l),
                SUM,
                0.5,
                o,
            )
        })
        .unwrap();
        close(&ds, &[0.5, 1.0, -1.0], 1e-7);
        let dh = run1::<f32>(&[3], |o| {
            huber_loss_backward(
                Src::new(&g, &gl),
                Src::new(&x, &l),
                Src::new(&t, &l),
                MEAN,
                2.0,
                o,
            )
        })
        .unwrap();
        close(&dh, &[0.25 / 3.0, 2.0 / 3.0, -2.0 / 3.0], 1e-7);
    }

    #[test]
    fn bce_matches_its_formula_and_rejects_probabilities_outside_0_1() {
        let (x, t, w) = (vec![0.25f64, 0.5], vec![1.0f64, 0.25], vec![2.0f64]);
        let (l, wl) = (Layout::contiguous(&[2]), Layout::contiguous(&[1]));
        let want = 2.0 * (-(0.25f64.ln()) - (0.25 * 0.5f64.ln() + 0.75 * 0.5f64.ln()));
        let got = run1::<f64>(&[], |o| {
            binary_cross_entropy(
                Src::new(&x, &l),
                Src::new(&t, &l),
                Some(Src::new(&w, &wl)),
                SUM,
                o,
            )
        })
        .unwrap();
        close(&got, &[want], 1e-14);
        let bad = vec![0.5f64, 1.5];
        let e = run1::<f64>(&[], |o| {
            binary_cross_entropy(Src::new(&bad, &l), Src::new(&t, &l), None, MEAN, o)
        })
        .unwrap_err()
        .to_string();
        assert_eq!(e, "all elements of input should be between 0 and 1");
        assert!(binary_cross_entropy_meta(&[2], &[3], None, MEAN)
            .unwrap_err()
            .to_string()
            .contains("Please ensure they have the same size."));
    }

    #[test]
    fn nll_forward_and_backward_on_a_3d_input_with_weight_and_ignore() {
        // [N=2, C=3, d=2]: targets [[0, 2], [-100, 1]].
        let x: Vec<f64> = (0..12).map(|v| v as f64 * 0.5 - 2.0).collect();
        let t = vec![0i64, 2, -100, 1];
        let w = vec![1.0f64, 2.0, 3.0];
        let (xl, tl, wl) = (
            Layout::contiguous(&[2, 3, 2]),
            Layout::contiguous(&[2, 2]),
            Layout::contiguous(&[3]),
        );
        // Picked: x[0,0,0] = -2, x[0,2,1] = 0.5, x[1,1,1] = 2.5.
        let (loss, total) = (-(1.0 * -2.0 + 3.0 * 0.5 + 2.0 * 2.5), 6.0);
        let forward = |r: i64| {
            let shapes =
                nll_loss_forward_meta(&xl.sizes, &tl.sizes, Some(&wl.sizes), r, -100).unwrap();
            let (l0, l1) = (
                Layout::contiguous(&shapes[0]),
                Layout::contiguous(&shapes[1]),
            );
            let (mut o, mut tw) = (vec![0.0f64; l0.numel()], vec![0.0f64]);
            nll_loss_forward(
                Src::new(&x, &xl),
                Src::new(&t, &tl),
                Some(Src::new(&w, &wl)),
                r,
                -100,
                Dst::new(&mut o, &l0),
                Dst::new(&mut tw, &l1),
            )
            .unwrap();
            (o, tw[0])
        };
        assert_eq!(forward(MEAN), (vec![loss / total], total));
        assert_eq!(forward(SUM), (vec![loss], total));
        assert_eq!(forward(NONE), (vec![2.0, -1.5, 0.0, -5.0], 0.0));
        let g = vec![2.0f64];
        let twv = vec![total];
        let got = run1::<f64>(&[2, 3, 2], |o| {
            nll_loss_backward(
                Src::new(&g, &Layout::contiguous(&[])),
                Src::new(&x, &xl),
                Src::new(&t, &tl),
                Some(Src::new(&w, &wl)),
                MEAN,
                -100,
                Src::new(&twv, &Layout::contiguous(&[])),
                o,
            )
        })
        .unwrap();
        // -w[t] * g / total_weight at (0, 0, 0), (0, 2, 1) and (1, 1, 1).
        let mut want = vec![0.0; 12];
        for (at, w) in [(0, 1.0), (5, 3.0), (9, 2.0)] {
            want[at] = -w * 2.0 / 6.0;
        }
        close(&got, &want, 1e-15);
    }

    #[test]
    fn nll_errors_and_an_empty_mean() {
        assert_eq!(
            nll_loss_forward_meta(&[3, 5], &[2], None, MEAN, -100)
                .unwrap_err()
                .to_string(),
            "size mismatch (got input: [3, 5], target: [2])"
        );
        assert!(nll_loss_forward_meta(&[3, 5], &[3], Some(&[4]), MEAN, -100)
            .unwrap_err()
            .to_string()
            .contains("either for all 5 classes"));
        let (x, t) = (vec![f16::from_f64(0.5); 4], vec![0i64, 2]);
        let (xl, tl) = (Layout::contiguous(&[2, 2]), Layout::contiguous(&[2]));
        let (mut o, mut tw) = (vec![f16::ZERO], vec![f16::ZERO]);
        let sl = Layout::contiguous(&[]);
        let e = nll_loss_forward(
            Src::new(&x, &xl),
            Src::new(&t, &tl),
            None,
            SUM,
            -100,
            Dst::new(&mut o, &sl),
            Dst::new(&mut tw, &sl),
        )
        .unwrap_err()
        .to_string();
        assert_eq!(e, "Target 2 is out of bounds.");
        let (e0, et) = (Vec::<f32>::new(), Vec::<i64>::new());
        let (el, etl) = (Layout::contiguous(&[0, 3]), Layout::contiguous(&[0]));
        let (mut o, mut tw) = (vec![0f32], vec![0f32]);
        nll_loss_forward(
            Src::new(&e0, &el),
            Src::new(&et, &etl),
            None,
            MEAN,
            -100,
            Dst::new(&mut o, &sl),
            Dst::new(&mut tw, &sl),
        )
        .unwrap();
        assert!(o[0].is_nan() && tw[0] == 0.0);
    }
}
