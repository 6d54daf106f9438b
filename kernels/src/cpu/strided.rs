//! Walking strided index spaces: the outer dims with a counter, the innermost as a plain run.

use crate::Layout;

/// Calls `f(offsets, len, inner_strides)` for each innermost run of `N` layouts sharing one
/// shape, after merging dims that are contiguous in all of them.
pub fn for_each_run<const N: usize>(
    layouts: [&Layout; N],
    mut f: impl FnMut([usize; N], usize, [usize; N]),
) {
    if layouts[0].numel() == 0 {
        return;
    }
    let (sizes, strides) = Layout::coalesce(&layouts);
    let base: [usize; N] = std::array::from_fn(|k| layouts[k].offset);
    if sizes.is_empty() {
        f(base, 1, [0; N]);
        return;
    }
    let nd = sizes.len();
    let inner_len = sizes[nd - 1];
    let inner: [usize; N] = std::array::from_fn(|k| strides[k][nd - 1]);
    let mut idx = vec![0usize; nd - 1];
    let mut offs = base;
    loop {
        f(offs, inner_len, inner);
        // Advance the odometer over the outer dims.
        let mut d = nd - 1;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            for k in 0..N {
                offs[k] += strides[k][d];
            }
            if idx[d] < sizes[d] {
                break;
            }
            for k in 0..N {
                offs[k] -= strides[k][d] * sizes[d];
            }
            idx[d] = 0;
        }
    }
}

/// Calls `f` with the storage offset of every element of `layout`, in row-major order.
pub fn for_each_offset(layout: &Layout, mut f: impl FnMut(usize)) {
    for_each_run([layout], |[o], len, [s]| {
        for i in 0..len {
            f(o + i * s);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_of_a_transposed_slice_are_row_major() {
        let l = Layout::contiguous(&[3, 4])
            .slice(1, Some(0), None, 2)
            .unwrap()
            .transpose(0, 1)
            .unwrap();
        let mut seen = vec![];
        for_each_offset(&l, |o| seen.push(o));
        assert_eq!(seen, vec![0, 4, 8, 2, 6, 10]);
    }
}
