//! Walking strided index spaces: the outer dims with a counter, the innermost as a plain run
//! ([`for_each_run`]), or, for elementwise loops, in tiles of two dims when an operand is read
//! across its memory order ([`Plan::for_each_tile`]).

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

/// An elementwise problem over `N` operands that share one shape, ready to walk: operand 0
/// is the output. Dims are put in the order that walks the output's memory outermost first
/// (see [`Layout::iteration_order`]), then merged where every operand allows
/// ([`Layout::coalesce`]), so every size is at least 2.
#[derive(Clone, Debug)]
pub struct Plan<const N: usize> {
    pub sizes: Vec<usize>,
    /// Per operand, the stride of each dim.
    pub strides: [Vec<usize>; N],
    /// Per operand, the storage offset of the first element.
    pub offsets: [usize; N],
}

/// How many elements a tile of a [`Plan`] walk covers.
#[derive(Clone, Copy, Debug)]
pub struct TileShape {
    /// Rows per tile when the walk is tiled (see [`Plan::tile_dim`]).
    pub rows: usize,
    /// Elements per row, at most.
    pub len: usize,
    /// Elements per run when the walk is not tiled (one row per tile).
    pub run: usize,
}

/// A block of a [`Plan`]'s index space: `rows` rows of `len` elements. Element `(r, i)` of
/// operand `k` is at `offsets[k] + r * row_strides[k] + i * strides[k]`.
#[derive(Clone, Copy, Debug)]
pub struct Tile<const N: usize> {
    pub offsets: [usize; N],
    pub rows: usize,
    pub len: usize,
    pub row_strides: [usize; N],
    pub strides: [usize; N],
}

impl<const N: usize> Plan<N> {
    /// The plan for `layouts` (one shape; the output first).
    pub fn new(layouts: [&Layout; N]) -> Plan<N> {
        let order = Layout::iteration_order(&layouts);
        let ordered = layouts.map(|l| l.reordered(&order));
        let refs: [&Layout; N] = std::array::from_fn(|k| &ordered[k]);
        let (sizes, strides) = Layout::coalesce(&refs);
        let mut strides = strides.into_iter();
        Plan {
            sizes,
            strides: std::array::from_fn(|_| strides.next().expect("one per layout")),
            offsets: layouts.map(|l| l.offset),
        }
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.sizes.iter().product()
    }

    /// True when every operand is one dense run in the walk's order.
    pub fn is_dense(&self) -> bool {
        self.sizes.len() <= 1 && self.strides.iter().all(|s| s.iter().all(|&x| x == 1))
    }

    /// The dim to walk in tiles together with the innermost one, if any: when an input
    /// steps through memory faster along some outer dim than along the innermost (a
    /// transposed operand), walking the innermost dim alone would touch a new cache line
    /// (and often a new page) for each of its elements. Tiles of a few rows of that dim
    /// read each such line once for all the rows.
    pub fn tile_dim(&self) -> Option<usize> {
        let q = self.sizes.len().checked_sub(1)?;
        (1..N).find_map(|k| {
            let s = &self.strides[k];
            if s[q] <= 1 {
                return None;
            }
            let p = (0..q).filter(|&d| s[d] != 0).min_by_key(|&d| s[d])?;
            (s[p] < s[q]).then_some(p)
        })
    }

    /// The plan of rows `first..first + rows` of dim 0, with the output's offset taken
    /// relative to its first element (the caller hands the output out in pieces).
    pub fn rows(&self, first: usize, rows: usize) -> Plan<N> {
        let mut p = self.clone();
        p.sizes[0] = rows;
        for k in 1..N {
            p.offsets[k] += first * self.strides[k][0];
        }
        p.offsets[0] = 0;
        p
    }

    /// The plan of row `i` of dim 0 alone (dim 0 dropped), with the output's offset taken
    /// relative to that row's first element.
    pub fn row(&self, i: usize) -> Plan<N> {
        let mut p = self.rows(i, 1);
        p.sizes.remove(0);
        p.strides.iter_mut().for_each(|s| {
            s.remove(0);
        });
        p
    }

    /// Calls `f(offsets)` at the first element of every combination of indices of `dims`
    /// (the others held at 0), the last of `dims` moving fastest.
    fn for_each_outer(&self, dims: &[usize], mut f: impl FnMut([usize; N])) {
        let mut idx = vec![0usize; dims.len()];
        let mut offs = self.offsets;
        loop {
            f(offs);
            let mut i = dims.len();
            loop {
                if i == 0 {
                    return;
                }
                i -= 1;
                let d = dims[i];
                idx[i] += 1;
                if idx[i] < self.sizes[d] {
                    for (o, s) in offs.iter_mut().zip(&self.strides) {
                        *o += s[d];
                    }
                    break;
                }
                for (o, s) in offs.iter_mut().zip(&self.strides) {
                    *o -= s[d] * (self.sizes[d] - 1);
                }
                idx[i] = 0;
            }
        }
    }

    /// Calls `f` on tiles covering every element once. Tiled (see [`Plan::tile_dim`]):
    /// blocks of `shape.rows` rows of the tile dim × `shape.len` elements of the innermost
    /// dim. Otherwise: runs of up to `shape.run` elements of the innermost dim, one row each.
    pub fn for_each_tile(&self, shape: TileShape, mut f: impl FnMut(&Tile<N>)) {
        let nd = self.sizes.len();
        if nd == 0 {
            // A single element (every dim had size 1).
            return f(&Tile {
                offsets: self.offsets,
                rows: 1,
                len: 1,
                row_strides: [0; N],
                strides: [0; N],
            });
        }
        let q = nd - 1;
        let strides: [usize; N] = std::array::from_fn(|k| self.strides[k][q]);
        let size_q = self.sizes[q];
        match self.tile_dim() {
            Some(p) => {
                let outer: Vec<usize> = (0..q).filter(|&d| d != p).collect();
                let row_strides: [usize; N] = std::array::from_fn(|k| self.strides[k][p]);
                let size_p = self.sizes[p];
                let (tr, tl) = (shape.rows.max(1), shape.len.max(1));
                self.for_each_outer(&outer, |base| {
                    for r0 in (0..size_p).step_by(tr) {
                        for i0 in (0..size_q).step_by(tl) {
                            f(&Tile {
                                offsets: std::array::from_fn(|k| {
                                    base[k] + r0 * row_strides[k] + i0 * strides[k]
                                }),
                                rows: tr.min(size_p - r0),
                                len: tl.min(size_q - i0),
                                row_strides,
                                strides,
                            })
                        }
                    }
                });
            }
            None => {
                let outer: Vec<usize> = (0..q).collect();
                let run = shape.run.max(1);
                self.for_each_outer(&outer, |base| {
                    for i0 in (0..size_q).step_by(run) {
                        f(&Tile {
                            offsets: std::array::from_fn(|k| base[k] + i0 * strides[k]),
                            rows: 1,
                            len: run.min(size_q - i0),
                            row_strides: [0; N],
                            strides,
                        })
                    }
                });
            }
        }
    }
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
