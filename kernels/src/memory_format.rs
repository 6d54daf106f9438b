//! Memory formats: the dim orders a dense image batch may be laid out in, as PyTorch's
//! `torch.memory_format`. A `[N, C, H, W]` tensor in `ChannelsLast` keeps its logical shape
//! and is stored as `[N, H, W, C]` (strides `[H*W*C, 1, W*C, C]`), so a convolution, a pool
//! or a batch norm reads every channel of a pixel from one run of memory.

use crate::layout::Layout;

/// A dense layout's dim order, as PyTorch's `torch.memory_format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemoryFormat {
    /// Row-major (`torch.contiguous_format`).
    Contiguous,
    /// `[N, C, H, W]` stored as `[N, H, W, C]` (`torch.channels_last`); 4-d only.
    ChannelsLast,
    /// `[N, C, D, H, W]` stored as `[N, D, H, W, C]` (`torch.channels_last_3d`); 5-d only.
    ChannelsLast3d,
    /// Whatever the source has (`torch.preserve_format`): for conversions only.
    Preserve,
}

impl MemoryFormat {
    /// The dims in memory order (outermost first) for a tensor of `ndim` dims, or `None` for
    /// `Preserve` and for a channels-last format on a rank it does not apply to.
    pub fn dim_order(self, ndim: usize) -> Option<Vec<usize>> {
        match (self, ndim) {
            (MemoryFormat::Contiguous, n) => Some((0..n).collect()),
            (MemoryFormat::ChannelsLast, 4) => Some(vec![0, 2, 3, 1]),
            (MemoryFormat::ChannelsLast3d, 5) => Some(vec![0, 2, 3, 4, 1]),
            _ => None,
        }
    }

    /// PyTorch's complaint when a channels-last format meets the wrong rank (`None` when
    /// `ndim` suits the format).
    pub fn rank_error(self, ndim: usize) -> Option<String> {
        match self {
            MemoryFormat::ChannelsLast if ndim != 4 => {
                Some("required rank 4 tensor to use channels_last format".into())
            }
            MemoryFormat::ChannelsLast3d if ndim != 5 => {
                Some("required rank 5 tensor to use channels_last_3d format".into())
            }
            _ => None,
        }
    }
}

impl std::fmt::Display for MemoryFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            MemoryFormat::Contiguous => "torch.contiguous_format",
            MemoryFormat::ChannelsLast => "torch.channels_last",
            MemoryFormat::ChannelsLast3d => "torch.channels_last_3d",
            MemoryFormat::Preserve => "torch.preserve_format",
        })
    }
}

impl Layout {
    /// A fresh dense layout of `sizes` in `format` (row-major for `Preserve` or a rank the
    /// format does not apply to).
    pub fn in_format(sizes: &[usize], format: MemoryFormat) -> Layout {
        match format.dim_order(sizes.len()) {
            Some(order) => Layout::dense_in_order(sizes, &order),
            None => Layout::contiguous(sizes),
        }
    }

    /// `is_contiguous(memory_format=format)`: dense in `format`'s dim order, size-1 dims
    /// with any stride (PyTorch's `compute_channels_last_contiguous_2d`). False for
    /// `Preserve` and for a rank the format does not apply to.
    pub fn is_contiguous_in(&self, format: MemoryFormat) -> bool {
        let Some(order) = format.dim_order(self.ndim()) else {
            return false;
        };
        if self.sizes.contains(&0) {
            return true;
        }
        let mut expected = 1usize;
        for &d in order.iter().rev() {
            if self.sizes[d] != 1 {
                if self.strides[d] != expected {
                    return false;
                }
                expected = expected.saturating_mul(self.sizes[d]);
            }
        }
        true
    }

    /// `suggest_memory_format()`: `ChannelsLast` (`ChannelsLast3d` at rank 5) when the
    /// strides rank like a channels-last layout's (PyTorch's `is_channels_last_strides_2d`:
    /// channels innermost, then width, height, batch; a dense row-major tensor is never
    /// taken for one), else `Contiguous`.
    pub fn suggest_memory_format(&self) -> MemoryFormat {
        let format = match self.ndim() {
            4 => MemoryFormat::ChannelsLast,
            5 => MemoryFormat::ChannelsLast3d,
            _ => return MemoryFormat::Contiguous,
        };
        let order = format.dim_order(self.ndim()).expect("rank checked above");
        // A stride-0 channel dim is ambiguous: row-major, as PyTorch defaults.
        if self.strides[1] == 0 {
            return MemoryFormat::Contiguous;
        }
        let mut min = 0usize;
        for &d in order.iter().rev() {
            if self.sizes[d] == 0 || self.strides[d] < min {
                return MemoryFormat::Contiguous;
            }
            // `[N, 1, H, W]` row-major has the batch and channel strides equal: that one is
            // row-major, not channels-last.
            if d == 0 && min == self.strides[1] {
                return MemoryFormat::Contiguous;
            }
            min = self.strides[d];
            if self.sizes[d] > 1 {
                min = min.saturating_mul(self.sizes[d]);
            }
        }
        format
    }

    /// Whether this layout is dense in the channels-last order of its rank (4-d or 5-d),
    /// so a kernel may walk it as `[N, *spatial, C]` row-major from `offset`.
    pub fn is_channels_last(&self) -> bool {
        match self.ndim() {
            4 => self.is_contiguous_in(MemoryFormat::ChannelsLast),
            5 => self.is_contiguous_in(MemoryFormat::ChannelsLast3d),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strides(l: &Layout) -> Vec<usize> {
        l.strides.to_vec()
    }

    #[test]
    fn channels_last_strides_match_pytorch() {
        // torch.empty(2, 3, 4, 5).to(memory_format=torch.channels_last).stride()
        let l = Layout::in_format(&[2, 3, 4, 5], MemoryFormat::ChannelsLast);
        assert_eq!(strides(&l), [60, 1, 15, 3]);
        // torch.empty(2, 3, 4, 5, 6).to(memory_format=torch.channels_last_3d).stride()
        let l = Layout::in_format(&[2, 3, 4, 5, 6], MemoryFormat::ChannelsLast3d);
        assert_eq!(strides(&l), [360, 1, 90, 18, 3]);
        assert!(l.is_contiguous_in(MemoryFormat::ChannelsLast3d));
        assert!(!l.is_contiguous());
    }

    #[test]
    fn suggestion_and_contiguity_follow_pytorch_rules() {
        let nchw = Layout::contiguous(&[2, 3, 4, 5]);
        let nhwc = Layout::in_format(&[2, 3, 4, 5], MemoryFormat::ChannelsLast);
        assert_eq!(nchw.suggest_memory_format(), MemoryFormat::Contiguous);
        assert_eq!(nhwc.suggest_memory_format(), MemoryFormat::ChannelsLast);
        assert!(!nchw.is_contiguous_in(MemoryFormat::ChannelsLast));
        assert!(nhwc.is_channels_last());
        // [N, C, 1, 1]: both; PyTorch suggests contiguous for the row-major strides and
        // channels_last for the channels-last ones.
        let c11 = Layout::contiguous(&[2, 3, 1, 1]);
        assert!(c11.is_contiguous_in(MemoryFormat::ChannelsLast));
        assert_eq!(c11.suggest_memory_format(), MemoryFormat::Contiguous);
        // [N, 1, H, W] row-major is not channels-last.
        let one = Layout::contiguous(&[2, 1, 4, 5]);
        assert_eq!(one.suggest_memory_format(), MemoryFormat::Contiguous);
        // A channels-last tensor sliced along W keeps the suggestion (strides still rank).
        let sliced = nhwc.narrow(3, 1, 3).unwrap();
        assert_eq!(sliced.suggest_memory_format(), MemoryFormat::ChannelsLast);
        assert!(!sliced.is_channels_last());
        // Wrong ranks.
        assert_eq!(
            Layout::contiguous(&[3, 4, 5]).suggest_memory_format(),
            MemoryFormat::Contiguous
        );
        assert!(MemoryFormat::ChannelsLast.rank_error(3).is_some());
        assert!(MemoryFormat::ChannelsLast.rank_error(4).is_none());
    }
}
