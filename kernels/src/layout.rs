//! Sizes, strides and offset: how a tensor's elements sit in its storage.
//!
//! Every view op is a function from one `Layout` to another; none touches data.

use crate::KResult;
use crate::KernelError;

/// Sizes or strides: up to six dims are stored inline, so a layout (and with it a view or an
/// op's output) allocates nothing for its shape.
pub type Dims = smallvec::SmallVec<[usize; 6]>;

/// `s` as [`Dims`]. Up to the inline capacity it is copied word by word: `Dims::from_slice`
/// calls `memcpy` for those few words, which costs more than the copy itself on the path
/// every op's output takes.
#[inline]
pub fn dims(s: &[usize]) -> Dims {
    const INLINE: usize = 6;
    if s.len() > INLINE {
        return Dims::from_slice(s);
    }
    let mut buf = [0usize; INLINE];
    // A fixed trip count with a guard, not `0..len`: LLVM turns the latter back into `memcpy`.
    for (i, b) in buf.iter_mut().enumerate() {
        if i < s.len() {
            *b = s[i];
        }
    }
    Dims::from_buf_and_len(buf, s.len())
}

/// The shape, strides (in elements) and storage offset of a strided tensor.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Layout {
    pub sizes: Dims,
    pub strides: Dims,
    pub offset: usize,
}

/// Wraps a possibly negative dim into `0..ndim`, with PyTorch's error text.
pub fn wrap_dim(dim: i64, ndim: usize) -> KResult<usize> {
    // A 0-d tensor accepts dims -1 and 0, as in PyTorch.
    let n = ndim.max(1) as i64;
    if dim < -n || dim >= n {
        return Err(KernelError::index(format!(
            "Dimension out of range (expected to be in range of [{}, {}], but got {})",
            -n,
            n - 1,
            dim
        )));
    }
    Ok(if dim < 0 {
        (dim + n) as usize
    } else {
        dim as usize
    })
}

/// The product of `sizes`, or `None` when it overflows.
pub fn checked_numel(sizes: &[usize]) -> Option<usize> {
    sizes.iter().try_fold(1usize, |n, &s| n.checked_mul(s))
}

/// Row-major strides for a shape. In an empty shape the strides of the other dims may exceed
/// any real offset; they saturate rather than overflow, since no element is ever addressed.
#[inline]
pub fn contiguous_strides(sizes: &[usize]) -> Dims {
    // Copied, then overwritten: cheaper than `smallvec![0; n]`, which is not inlined
    // (this runs for every op's output).
    let mut strides = dims(sizes);
    let mut acc = 1usize;
    for i in (0..sizes.len()).rev() {
        strides[i] = acc;
        acc = acc.saturating_mul(sizes[i].max(1));
    }
    strides
}

/// PyTorch's broadcast of two shapes, with its error message.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> KResult<Dims> {
    let n = a.len().max(b.len());
    let mut out: Dims = smallvec::smallvec![0; n];
    for i in 0..n {
        let da = if i + a.len() >= n {
            a[i + a.len() - n]
        } else {
            1
        };
        let db = if i + b.len() >= n {
            b[i + b.len() - n]
        } else {
            1
        };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(KernelError::shape(format!(
                "The size of tensor a ({da}) must match the size of tensor b ({db}) at non-singleton dimension {i}"
            )));
        };
    }
    Ok(out)
}

/// `offset + index * stride`. In a non-empty layout this is inside the storage; in an empty
/// one (another dim of size 0) strides are unconstrained, so it saturates instead of
/// overflowing — no element is ever read there.
fn step_offset(offset: usize, index: usize, stride: usize) -> usize {
    offset.saturating_add(index.saturating_mul(stride))
}

impl Layout {
    /// A fresh row-major layout.
    #[inline]
    pub fn contiguous(sizes: &[usize]) -> Layout {
        Layout {
            sizes: dims(sizes),
            strides: contiguous_strides(sizes),
            offset: 0,
        }
    }

    /// Number of dimensions.
    #[inline]
    pub fn ndim(&self) -> usize {
        self.sizes.len()
    }

    /// Number of elements. Every layout kiln builds has passed [`Layout::check_in_bounds`],
    /// so a non-empty layout's product does not overflow; an empty one's other dims may
    /// multiply past `usize` before the 0 is reached, so it is answered first.
    #[inline]
    pub fn numel(&self) -> usize {
        if self.sizes.contains(&0) {
            return 0;
        }
        self.sizes.iter().product()
    }

    /// True when elements are laid out row-major with no gaps (size-1 dims may have any stride).
    #[inline]
    pub fn is_contiguous(&self) -> bool {
        let mut expected = 1usize;
        for (&size, &stride) in self.sizes.iter().zip(&self.strides).rev() {
            if size != 1 && stride != expected {
                // An empty layout is contiguous whatever its strides.
                return self.sizes.contains(&0);
            }
            expected = expected.saturating_mul(size);
        }
        true
    }

    /// One past the largest storage index this layout reaches (0 when empty), or `None`
    /// when that index overflows.
    pub fn storage_extent(&self) -> Option<usize> {
        if self.sizes.contains(&0) {
            return Some(0);
        }
        self.sizes
            .iter()
            .zip(&self.strides)
            .try_fold(self.offset, |end, (&s, &st)| {
                end.checked_add((s - 1).checked_mul(st)?)
            })?
            .checked_add(1)
    }

    /// Checks that this layout describes a tensor over a buffer of `len` elements: its
    /// element count fits an `i64` (PyTorch's `numel`) and every element lies in the buffer.
    pub fn check_in_bounds(&self, len: usize) -> KResult<()> {
        if checked_numel(&self.sizes).is_none_or(|n| n > i64::MAX as usize) {
            return Err(KernelError::shape(format!(
                "numel: integer multiplication overflow for sizes {:?}",
                self.sizes
            )));
        }
        match self.storage_extent() {
            Some(end) if end <= len => Ok(()),
            end => Err(KernelError::shape(format!(
                "setStorage: sizes {:?}, strides {:?}, storage offset {} requiring a storage size of {} are out of bounds for storage of size {len}",
                self.sizes,
                self.strides,
                self.offset,
                end.map_or_else(|| "more than 2^64".to_string(), |e| e.to_string()),
            ))),
        }
    }

    /// True when the elements fill a block of `numel` storage slots with no gaps and no
    /// overlap: contiguous, or a permutation of contiguous (PyTorch's
    /// `is_non_overlapping_and_dense`). Size-1 dims may have any stride.
    pub fn is_non_overlapping_and_dense(&self) -> bool {
        if self.sizes.contains(&0) {
            return true;
        }
        let mut dims: Vec<(usize, usize)> = self
            .sizes
            .iter()
            .zip(&self.strides)
            .filter(|(s, _)| **s > 1)
            .map(|(s, st)| (*s, *st))
            .collect();
        dims.sort_by_key(|d| d.1);
        let mut expected = 1usize;
        for (size, stride) in dims {
            if stride != expected {
                return false;
            }
            expected = expected.saturating_mul(size);
        }
        true
    }

    /// True when two different indices reach the same storage element (e.g. an expanded view).
    pub fn has_internal_overlap(&self) -> bool {
        let mut dims: Vec<(usize, usize)> = self
            .sizes
            .iter()
            .zip(&self.strides)
            .filter(|(s, _)| **s > 1)
            .map(|(s, st)| (*s, *st))
            .collect();
        dims.sort_by_key(|d| d.1);
        let mut reach = 0; // largest offset reachable by the smaller-stride dims
        for (size, stride) in dims {
            if stride == 0 || stride <= reach {
                return true;
            }
            reach = reach.saturating_add((size - 1).saturating_mul(stride));
        }
        false
    }

    /// Broadcasts this layout to `shape` by giving new or size-1 dims stride 0.
    pub fn broadcast_to(&self, shape: &[usize]) -> KResult<Layout> {
        if shape.len() < self.ndim() {
            return Err(KernelError::shape(format!(
                "the number of sizes provided ({}) must be greater or equal to the number of dimensions in the tensor ({})",
                shape.len(),
                self.ndim()
            )));
        }
        let lead = shape.len() - self.ndim();
        let mut strides: Dims = smallvec::smallvec![0; shape.len()];
        for (i, &target) in shape.iter().enumerate() {
            if i < lead {
                continue;
            }
            let (size, stride) = (self.sizes[i - lead], self.strides[i - lead]);
            if size == target {
                strides[i] = stride;
            } else if size != 1 {
                return Err(KernelError::shape(format!(
                    "The expanded size of the tensor ({target}) must match the existing size ({size}) at non-singleton dimension {i}.  Target sizes: {shape:?}.  Tensor sizes: {:?}",
                    self.sizes
                )));
            }
        }
        Ok(Layout {
            sizes: Dims::from_slice(shape),
            strides,
            offset: self.offset,
        })
    }

    /// `permute(dims)`.
    pub fn permute(&self, dims: &[i64]) -> KResult<Layout> {
        let n = self.ndim();
        if dims.len() != n {
            return Err(KernelError::shape(format!(
                "number of dims don't match in permute: input has {n} dims but {} were given",
                dims.len()
            )));
        }
        let mut seen = vec![false; n];
        let mut out = Layout {
            sizes: smallvec::smallvec![0; n],
            strides: smallvec::smallvec![0; n],
            offset: self.offset,
        };
        for (i, &d) in dims.iter().enumerate() {
            let d = wrap_dim(d, n)?;
            if seen[d] {
                return Err(KernelError::shape("repeated dim in permute"));
            }
            seen[d] = true;
            out.sizes[i] = self.sizes[d];
            out.strides[i] = self.strides[d];
        }
        Ok(out)
    }

    /// `transpose(dim0, dim1)`.
    pub fn transpose(&self, dim0: i64, dim1: i64) -> KResult<Layout> {
        let n = self.ndim();
        let mut out = self.clone();
        if n == 0 {
            wrap_dim(dim0, n)?;
            wrap_dim(dim1, n)?;
            return Ok(out);
        }
        let (a, b) = (wrap_dim(dim0, n)?, wrap_dim(dim1, n)?);
        out.sizes.swap(a, b);
        out.strides.swap(a, b);
        Ok(out)
    }

    /// `unsqueeze(dim)`: a new size-1 dim at `dim` (which may equal `ndim`).
    pub fn unsqueeze(&self, dim: i64) -> KResult<Layout> {
        let d = wrap_dim(dim, self.ndim() + 1)?;
        let mut out = self.clone();
        let stride = if d < self.ndim() {
            self.sizes[d].saturating_mul(self.strides[d])
        } else {
            1
        };
        out.sizes.insert(d, 1);
        out.strides.insert(d, stride.max(1));
        Ok(out)
    }

    /// `squeeze(dims)`: drops the listed dims that have size 1; all size-1 dims when `None`.
    pub fn squeeze(&self, dims: Option<&[i64]>) -> KResult<Layout> {
        let n = self.ndim();
        let mut drop = vec![false; n];
        match dims {
            None => drop
                .iter_mut()
                .zip(&self.sizes)
                .for_each(|(d, s)| *d = *s == 1),
            Some(ds) => {
                for &d in ds {
                    let d = wrap_dim(d, n)?;
                    if n > 0 && self.sizes[d] == 1 {
                        drop[d] = true;
                    }
                }
            }
        }
        let mut out = Layout {
            sizes: Dims::new(),
            strides: Dims::new(),
            offset: self.offset,
        };
        for ((&size, &stride), dropped) in self.sizes.iter().zip(&self.strides).zip(&drop) {
            if !dropped {
                out.sizes.push(size);
                out.strides.push(stride);
            }
        }
        Ok(out)
    }

    /// `narrow(dim, start, length)`.
    pub fn narrow(&self, dim: i64, start: i64, length: i64) -> KResult<Layout> {
        if self.ndim() == 0 {
            return Err(KernelError::shape(
                "narrow() cannot be applied to a 0-dim tensor.",
            ));
        }
        let d = wrap_dim(dim, self.ndim())?;
        let size = self.sizes[d] as i64;
        let start = if start < 0 { start + size } else { start };
        if start < 0 || start > size {
            return Err(KernelError::index(format!(
                "start out of range (expected to be in range of [{}, {}], but got {})",
                -size, size, start
            )));
        }
        // `length > size - start` rather than `start + length > size`: no overflow.
        if length < 0 || length > size - start {
            return Err(KernelError::shape(format!(
                "start ({start}) + length ({length}) exceeds dimension size ({size})."
            )));
        }
        let mut out = self.clone();
        out.offset = step_offset(out.offset, start as usize, self.strides[d]);
        out.sizes[d] = length as usize;
        Ok(out)
    }

    /// `select(dim, index)`: removes `dim`, keeping entry `index`.
    pub fn select(&self, dim: i64, index: i64) -> KResult<Layout> {
        if self.ndim() == 0 {
            return Err(KernelError::index(
                "select() cannot be applied to a 0-dim tensor.",
            ));
        }
        let d = wrap_dim(dim, self.ndim())?;
        let size = self.sizes[d] as i64;
        if index < -size || index >= size {
            return Err(KernelError::index(format!(
                "select(): index {index} out of range for tensor of size {:?} at dimension {d}",
                self.sizes
            )));
        }
        let index = if index < 0 { index + size } else { index } as usize;
        let mut out = self.clone();
        out.offset = step_offset(out.offset, index, self.strides[d]);
        out.sizes.remove(d);
        out.strides.remove(d);
        Ok(out)
    }

    /// `slice(dim, start, end, step)` with Python's clamping of out-of-range bounds.
    pub fn slice(
        &self,
        dim: i64,
        start: Option<i64>,
        end: Option<i64>,
        step: i64,
    ) -> KResult<Layout> {
        if self.ndim() == 0 {
            return Err(KernelError::index(
                "slice() cannot be applied to a 0-dim tensor.",
            ));
        }
        if step <= 0 {
            return Err(KernelError::value("slice step must be positive"));
        }
        let d = wrap_dim(dim, self.ndim())?;
        let size = self.sizes[d] as i64;
        let clamp = |v: i64| {
            if v < 0 {
                (v + size).max(0)
            } else {
                v.min(size)
            }
        };
        let s = clamp(start.unwrap_or(0));
        let e = clamp(end.unwrap_or(size)).max(s);
        let mut out = self.clone();
        out.offset = step_offset(out.offset, s as usize, self.strides[d]);
        // `(e - s).div_ceil(step)` without `e - s + step` overflowing for a huge step.
        out.sizes[d] = ((e - s) / step + ((e - s) % step != 0) as i64) as usize;
        // A dim of size 0 or 1 never steps, so a stride too large to represent is clamped.
        out.strides[d] = self.strides[d].saturating_mul(step as usize);
        Ok(out)
    }

    /// `expand(sizes)`, where -1 keeps a dim's size.
    pub fn expand(&self, sizes: &[i64]) -> KResult<Layout> {
        if sizes.len() < self.ndim() {
            return Err(KernelError::shape(format!(
                "expand: the number of sizes provided ({}) must be greater or equal to the number of dimensions in the tensor ({})",
                sizes.len(),
                self.ndim()
            )));
        }
        let lead = sizes.len() - self.ndim();
        let mut shape = Vec::with_capacity(sizes.len());
        for (i, &s) in sizes.iter().enumerate() {
            if s == -1 {
                if i < lead {
                    return Err(KernelError::shape(format!(
                        "expand: -1 is not allowed in a leading, non-existing dimension {i}"
                    )));
                }
                shape.push(self.sizes[i - lead]);
            } else if s < 0 {
                return Err(KernelError::shape(format!("expand: invalid size {s}")));
            } else {
                shape.push(s as usize);
            }
        }
        self.broadcast_to(&shape)
    }

    /// Resolves a `view`/`reshape` size list (one entry may be -1) against `numel`.
    pub fn infer_size(sizes: &[i64], numel: usize) -> KResult<Vec<usize>> {
        let mut infer = None;
        // `None` once the product overflows: it can then never equal a real element count.
        let mut known = Some(1usize);
        for (i, &s) in sizes.iter().enumerate() {
            if s == -1 {
                if infer.is_some() {
                    return Err(KernelError::shape("only one dimension can be inferred"));
                }
                infer = Some(i);
            } else if s < 0 {
                return Err(KernelError::shape(format!("invalid shape dimension {s}")));
            } else {
                known = known.and_then(|k| k.checked_mul(s as usize));
            }
        }
        let mut out: Vec<usize> = sizes.iter().map(|&s| s.max(0) as usize).collect();
        match (infer, known) {
            (Some(i), Some(k)) if k != 0 && numel.is_multiple_of(k) => out[i] = numel / k,
            (None, Some(k)) if k == numel => {}
            _ => {
                return Err(KernelError::shape(format!(
                    "shape '{sizes:?}' is invalid for input of size {numel}"
                )))
            }
        }
        Ok(out)
    }

    /// `view(sizes)` without copying, or `None` when the strides cannot express it
    /// (PyTorch's `computeStride`).
    pub fn view(&self, sizes: &[usize]) -> Option<Layout> {
        let numel = self.numel();
        if numel == 0 || self.is_contiguous() {
            return Some(Layout {
                offset: self.offset,
                ..Layout::contiguous(sizes)
            });
        }
        // Walk chunks of the old shape that are contiguous among themselves, matching them
        // against runs of the new shape with the same number of elements.
        let mut new_strides: Dims = smallvec::smallvec![0usize; sizes.len()];
        let mut view_d = sizes.len() as isize - 1;
        let mut chunk_base_stride = *self.strides.last()?;
        let mut tensor_numel = 1usize;
        let mut view_numel = 1usize;
        for tensor_d in (0..self.ndim()).rev() {
            tensor_numel *= self.sizes[tensor_d];
            let boundary = tensor_d == 0
                || (self.sizes[tensor_d - 1] != 1
                    && self.strides[tensor_d - 1] != tensor_numel * chunk_base_stride);
            if boundary {
                while view_d >= 0 && (view_numel < tensor_numel || sizes[view_d as usize] == 1) {
                    new_strides[view_d as usize] = view_numel * chunk_base_stride;
                    view_numel *= sizes[view_d as usize];
                    view_d -= 1;
                }
                if view_numel != tensor_numel {
                    return None;
                }
                if tensor_d > 0 {
                    chunk_base_stride = self.strides[tensor_d - 1];
                    tensor_numel = 1;
                    view_numel = 1;
                }
            }
        }
        if view_d != -1 {
            return None;
        }
        Some(Layout {
            sizes: Dims::from_slice(sizes),
            strides: new_strides,
            offset: self.offset,
        })
    }

    /// The order in which to walk the dims of `layouts` (which share one shape) so that
    /// memory is read and written as sequentially as possible: outermost dim first. As
    /// PyTorch's TensorIterator (`reorder_dimensions`): dims are compared by the strides of
    /// the first layout, then the next where the first cannot decide (a stride of 0, a
    /// broadcast, or a size-1 dim decides nothing); dims nobody orders keep row-major order.
    pub fn iteration_order(layouts: &[&Layout]) -> Vec<usize> {
        let sizes = &layouts[0].sizes;
        let n = sizes.len();
        // > 0 when dim `a`, now placed inside dim `b`, should go outside it; < 0 when it
        // should stay inside; 0 when no layout can tell (TensorIterator's `should_swap`).
        let should_swap = |a: usize, b: usize| -> i32 {
            if sizes[a] == 1 || sizes[b] == 1 {
                return 0; // a size-1 dim is a broadcast dim for every operand
            }
            for l in layouts {
                let (sa, sb) = (l.strides[a], l.strides[b]);
                if sa == 0 || sb == 0 {
                    continue;
                }
                if sa != sb {
                    return if sa > sb { 1 } else { -1 };
                }
                if sizes[a] > sizes[b] {
                    return 1;
                }
            }
            0
        };
        // Innermost first while sorting, as TensorIterator's insertion sort.
        let mut perm: Vec<usize> = (0..n).rev().collect();
        for i in 1..n {
            let mut d1 = i;
            for d0 in (0..i).rev() {
                match should_swap(perm[d0], perm[d1]) {
                    c if c > 0 => {
                        perm.swap(d0, d1);
                        d1 = d0;
                    }
                    c if c < 0 => break,
                    _ => {}
                }
            }
        }
        perm.reverse();
        perm
    }

    /// This layout with its dims rearranged into `order` (a permutation of its dims).
    pub fn reordered(&self, order: &[usize]) -> Layout {
        Layout {
            sizes: order.iter().map(|&d| self.sizes[d]).collect(),
            strides: order.iter().map(|&d| self.strides[d]).collect(),
            offset: self.offset,
        }
    }

    /// A dense layout of `sizes` whose dims are laid out in memory in `order` (outermost
    /// first): what an op allocates for a result that follows its inputs' memory order.
    pub fn dense_in_order(sizes: &[usize], order: &[usize]) -> Layout {
        let mut strides: Dims = smallvec::smallvec![0; sizes.len()];
        let mut step = 1;
        for &d in order.iter().rev() {
            strides[d] = step;
            step *= sizes[d].max(1);
        }
        Layout {
            sizes: Dims::from_slice(sizes),
            strides,
            offset: 0,
        }
    }

    /// Merges adjacent dims that are contiguous with respect to every given layout, so strided
    /// loops run over as few, as long, dimensions as possible. All layouts share `sizes`.
    pub fn coalesce(layouts: &[&Layout]) -> (Vec<usize>, Vec<Vec<usize>>) {
        let sizes = &layouts[0].sizes;
        let mut out_sizes: Vec<usize> = Vec::with_capacity(sizes.len());
        let mut out_strides: Vec<Vec<usize>> = vec![Vec::with_capacity(sizes.len()); layouts.len()];
        for (d, &size) in sizes.iter().enumerate() {
            if size == 1 {
                continue;
            }
            let mergeable = !out_sizes.is_empty()
                && layouts.iter().enumerate().all(|(k, l)| {
                    *out_strides[k].last().expect("non-empty") == l.strides[d] * size
                });
            if mergeable {
                *out_sizes.last_mut().expect("non-empty") *= size;
                for (k, l) in layouts.iter().enumerate() {
                    *out_strides[k].last_mut().expect("non-empty") = l.strides[d];
                }
            } else {
                out_sizes.push(size);
                for (k, l) in layouts.iter().enumerate() {
                    out_strides[k].push(l.strides[d]);
                }
            }
        }
        (out_sizes, out_strides)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iteration_order_follows_the_first_layout_that_decides() {
        let c = Layout::contiguous(&[2, 3, 4]);
        assert_eq!(Layout::iteration_order(&[&c]), vec![0, 1, 2]);
        // [4, 2, 3] with strides [1, 12, 4]: dim 1 is outermost in memory, dim 0 innermost.
        let p = c.permute(&[2, 0, 1]).unwrap();
        assert_eq!(Layout::iteration_order(&[&p]), vec![1, 2, 0]);
        // A contiguous first operand decides over a transposed second one.
        let t = Layout::contiguous(&[4, 3]).transpose(0, 1).unwrap();
        let r = Layout::contiguous(&[3, 4]);
        assert_eq!(Layout::iteration_order(&[&r, &t]), vec![0, 1]);
        assert_eq!(Layout::iteration_order(&[&t, &r]), vec![1, 0]);
        // A broadcast first operand cannot decide its stride-0 dim; the next one does.
        let b = Layout::contiguous(&[3, 1]).expand(&[3, 4]).unwrap();
        assert_eq!(Layout::iteration_order(&[&b, &t]), vec![1, 0]);
        assert_eq!(Layout::iteration_order(&[&b, &r]), vec![0, 1]);
        // Size-1 dims and 0-d layouts keep their place.
        let u = Layout::contiguous(&[1, 4, 1, 3]).transpose(1, 3).unwrap();
        assert_eq!(Layout::iteration_order(&[&u]), vec![0, 3, 2, 1]);
        assert_eq!(
            Layout::iteration_order(&[&Layout::contiguous(&[])]),
            Vec::<usize>::new()
        );
    }

    #[test]
    fn dense_in_order_lays_dims_out_outermost_first() {
        let l = Layout::dense_in_order(&[4, 2, 3], &[1, 2, 0]);
        assert_eq!(l.strides[..], [1, 12, 4]);
        assert_eq!(
            Layout::dense_in_order(&[2, 3], &[0, 1]),
            Layout::contiguous(&[2, 3])
        );
        let r = Layout::contiguous(&[2, 3, 4]).reordered(&[2, 0, 1]);
        assert_eq!(
            (&r.sizes[..], &r.strides[..]),
            (&[4, 2, 3][..], &[1, 12, 4][..])
        );
    }

    #[test]
    fn view_of_transposed_needs_copy() {
        let l = Layout::contiguous(&[2, 3]).transpose(0, 1).unwrap();
        assert!(l.view(&[6]).is_none());
        assert!(l.view(&[3, 2]).is_some());
    }

    #[test]
    fn view_splits_a_dim_of_a_sliced_layout() {
        let l = Layout::contiguous(&[4, 6])
            .slice(1, Some(0), Some(4), 1)
            .unwrap();
        let v = l.view(&[4, 2, 2]).unwrap();
        assert_eq!(v.strides[..], [6, 2, 1]);
    }

    #[test]
    fn expanded_layout_overlaps_itself() {
        let l = Layout::contiguous(&[1, 3]).expand(&[4, 3]).unwrap();
        assert!(l.has_internal_overlap());
        assert!(!Layout::contiguous(&[4, 3]).has_internal_overlap());
    }

    #[test]
    fn broadcast_error_names_sizes() {
        let e = broadcast_shapes(&[2, 3], &[2, 4]).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Shape);
        let e = e.to_string();
        assert!(e.contains("The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"));
    }
}
