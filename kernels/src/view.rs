//! Typed read and write views of a strided buffer, the only data a kernel sees.

use crate::Layout;

/// Every kernel indexes `data` through `layout`; a layout reaching past the buffer is a bug
/// in kiln (user input is rejected long before), so it stops here rather than reading wrong
/// elements later.
fn check_extent(layout: &Layout, len: usize) {
    if let Err(m) = layout.check_in_bounds(len) {
        panic!("kiln internal error: a kernel view does not fit its buffer: {m}");
    }
}

/// A read view: the whole storage buffer plus the layout that picks elements out of it.
#[derive(Clone, Copy, Debug)]
pub struct Src<'a, T> {
    pub data: &'a [T],
    pub layout: &'a Layout,
}

/// A write view of a buffer that no [`Src`] of the same call aliases.
#[derive(Debug)]
pub struct Dst<'a, T> {
    pub data: &'a mut [T],
    pub layout: &'a Layout,
}

impl<'a, T: Copy> Src<'a, T> {
    /// A view over `data` with `layout`.
    pub fn new(data: &'a [T], layout: &'a Layout) -> Self {
        check_extent(layout, data.len());
        Src { data, layout }
    }

    /// The elements as one slice when the layout is contiguous.
    pub fn as_contiguous(&self) -> Option<&'a [T]> {
        // An empty view may carry an offset past the end of an empty buffer.
        if self.layout.numel() == 0 {
            return Some(&[]);
        }
        self.layout
            .is_contiguous()
            .then(|| &self.data[self.layout.offset..self.layout.offset + self.layout.numel()])
    }
}

impl<T: crate::cpu::pointwise::Plain> Src<'_, T> {
    /// The elements in row-major order (copies; a strided view goes through the tiled,
    /// parallel [`crate::cpu::pointwise::copy`]).
    pub fn to_vec(&self) -> Vec<T> {
        if let Some(s) = self.as_contiguous() {
            return s.to_vec();
        }
        // Not contiguous, so not empty: its first element fills the buffer until copied over.
        let mut out = vec![self.data[self.layout.offset]; self.layout.numel()];
        let layout = Layout::contiguous(&self.layout.sizes);
        crate::cpu::pointwise::copy(*self, Dst::new(&mut out, &layout));
        out
    }
}

impl<'a, T: Copy> Dst<'a, T> {
    /// A view over `data` with `layout`.
    pub fn new(data: &'a mut [T], layout: &'a Layout) -> Self {
        check_extent(layout, data.len());
        Dst { data, layout }
    }

    /// The elements as one mutable slice when the layout is contiguous.
    pub fn as_contiguous_mut(&mut self) -> Option<&mut [T]> {
        let l = self.layout;
        if l.numel() == 0 {
            return Some(&mut []);
        }
        if l.is_contiguous() {
            Some(&mut self.data[l.offset..l.offset + l.numel()])
        } else {
            None
        }
    }

    /// Writes `values` (row-major) through the layout.
    pub fn fill_from(&mut self, values: &[T]) {
        if let Some(s) = self.as_contiguous_mut() {
            s.copy_from_slice(values);
            return;
        }
        let mut it = values.iter();
        let data = &mut *self.data;
        crate::cpu::strided::for_each_offset(self.layout, |o| {
            data[o] = *it.next().expect("values has numel elements")
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[should_panic(expected = "does not fit its buffer")]
    fn a_view_past_its_buffer_is_refused() {
        let data = [0f32; 4];
        let layout = Layout::contiguous(&[5]);
        let _ = Src::new(&data, &layout);
    }

    #[test]
    #[should_panic(expected = "does not fit its buffer")]
    fn a_view_whose_extent_overflows_is_refused() {
        let mut data = [0f32; 4];
        let layout = Layout {
            sizes: smallvec::smallvec![3],
            strides: smallvec::smallvec![usize::MAX / 2],
            offset: 0,
        };
        let _ = Dst::new(&mut data, &layout);
    }
}
