//! Pooling: `MaxPool1d/2d`, `AvgPool1d/2d`, `AdaptiveAvgPool1d/2d`, `AdaptiveMaxPool1d/2d`.
//! `new(kernel_size)` gives PyTorch's defaults (stride = kernel_size); the other keyword
//! arguments are chainable setters on the layer itself (`MaxPool2d::new(3).stride(2)`).
//! `return_indices=True` is the inherent `forward_with_indices`.

use crate::conv::{i64s, IntoSize};
use crate::module::Forward;
use crate::Module;
use kiln_core::{Error, Result, Tensor};

fn check_rank<const N: usize>(layer: &str, input: &Tensor) -> Result<()> {
    let d = input.dim();
    if d != N + 1 && d != N + 2 {
        return Err(Error::shape(
            layer,
            format!(
                "Expected {}D or {}D input, but got input of size: {:?}",
                N + 1,
                N + 2,
                input.shape()
            ),
        ));
    }
    Ok(())
}

/// `nn.MaxPool1d` / `nn.MaxPool2d(kernel_size, stride=None, padding=0, dilation=1,
/// return_indices=False, ceil_mode=False)`. No parameters.
#[derive(Module, Clone, Debug)]
#[module(crate = crate)]
pub struct MaxPool<const N: usize> {
    #[module(skip)]
    pub kernel_size: [usize; N],
    #[module(skip)]
    pub stride: [usize; N],
    #[module(skip)]
    pub padding: [usize; N],
    #[module(skip)]
    pub dilation: [usize; N],
    pub ceil_mode: bool,
}

pub type MaxPool1d = MaxPool<1>;
pub type MaxPool2d = MaxPool<2>;

impl<const N: usize> MaxPool<N> {
    fn name() -> &'static str {
        ["MaxPool1d", "MaxPool2d"][N - 1]
    }
    /// Stride defaults to the kernel size, as PyTorch's `stride=None`.
    pub fn new(kernel_size: impl IntoSize<N>) -> Self {
        let k = kernel_size.into_size();
        MaxPool {
            kernel_size: k,
            stride: k,
            padding: [0; N],
            dilation: [1; N],
            ceil_mode: false,
        }
    }
    pub fn stride(mut self, s: impl IntoSize<N>) -> Self {
        self.stride = s.into_size();
        self
    }
    pub fn padding(mut self, p: impl IntoSize<N>) -> Self {
        self.padding = p.into_size();
        self
    }
    pub fn dilation(mut self, d: impl IntoSize<N>) -> Self {
        self.dilation = d.into_size();
        self
    }
    crate::setters!(ceil_mode: bool);

    /// `return_indices=True`: `(values, indices)`, indices into each flattened spatial plane
    /// (int64), as PyTorch's.
    pub fn forward_with_indices(&self, input: &Tensor) -> Result<(Tensor, Tensor)> {
        check_rank::<N>(Self::name(), input)?;
        let (k, s, p, d) = (
            i64s(&self.kernel_size),
            i64s(&self.stride),
            i64s(&self.padding),
            i64s(&self.dilation),
        );
        if N == 2 {
            return kiln_core::max_pool2d_with_indices_with(input, &k, &s, &p, &d, self.ceil_mode);
        }
        // 1d as PyTorch computes it: a 2d pool over a unit height.
        let x = input.unsqueeze(-2)?;
        let (v, i) = kiln_core::max_pool2d_with_indices_with(
            &x,
            &[1, k[0]],
            &[1, s[0]],
            &[0, p[0]],
            &[1, d[0]],
            self.ceil_mode,
        )?;
        Ok((v.squeeze_dim(-2)?, i.squeeze_dim(-2)?))
    }
}

impl<const N: usize> Forward for MaxPool<N> {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        check_rank::<N>(Self::name(), input)?;
        let (k, s, p, d) = (
            i64s(&self.kernel_size),
            i64s(&self.stride),
            i64s(&self.padding),
            i64s(&self.dilation),
        );
        match N {
            1 => kiln_core::max_pool1d_with(input, &k, &s, &p, &d, self.ceil_mode),
            _ => kiln_core::max_pool2d_with(input, &k, &s, &p, &d, self.ceil_mode),
        }
    }
}

/// `nn.AvgPool1d(kernel_size, stride=None, padding=0, ceil_mode=False,
/// count_include_pad=True)` / `nn.AvgPool2d(…, divisor_override=None)`.
#[derive(Module, Clone, Debug)]
#[module(crate = crate)]
pub struct AvgPool<const N: usize> {
    #[module(skip)]
    pub kernel_size: [usize; N],
    #[module(skip)]
    pub stride: [usize; N],
    #[module(skip)]
    pub padding: [usize; N],
    pub ceil_mode: bool,
    pub count_include_pad: bool,
    #[module(skip)]
    pub divisor_override: Option<usize>,
}

pub type AvgPool1d = AvgPool<1>;
pub type AvgPool2d = AvgPool<2>;

impl<const N: usize> AvgPool<N> {
    fn name() -> &'static str {
        ["AvgPool1d", "AvgPool2d"][N - 1]
    }
    pub fn new(kernel_size: impl IntoSize<N>) -> Self {
        let k = kernel_size.into_size();
        AvgPool {
            kernel_size: k,
            stride: k,
            padding: [0; N],
            ceil_mode: false,
            count_include_pad: true,
            divisor_override: None,
        }
    }
    pub fn stride(mut self, s: impl IntoSize<N>) -> Self {
        self.stride = s.into_size();
        self
    }
    pub fn padding(mut self, p: impl IntoSize<N>) -> Self {
        self.padding = p.into_size();
        self
    }
    crate::setters!(ceil_mode: bool, count_include_pad: bool);
    /// `divisor_override` (AvgPool2d only in PyTorch; 1d rejects it at forward).
    pub fn divisor_override(mut self, d: Option<usize>) -> Self {
        self.divisor_override = d;
        self
    }
}

impl<const N: usize> Forward for AvgPool<N> {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        check_rank::<N>(Self::name(), input)?;
        let (k, s, p) = (
            i64s(&self.kernel_size),
            i64s(&self.stride),
            i64s(&self.padding),
        );
        match N {
            1 => {
                if self.divisor_override.is_some() {
                    return Err(Error::value(
                        "AvgPool1d",
                        "AvgPool1d has no divisor_override",
                    ));
                }
                kiln_core::avg_pool1d_with(
                    input,
                    &k,
                    &s,
                    &p,
                    self.ceil_mode,
                    self.count_include_pad,
                )
            }
            _ => kiln_core::avg_pool2d_with(
                input,
                &k,
                &s,
                &p,
                self.ceil_mode,
                self.count_include_pad,
                self.divisor_override.map(|d| d as i64),
            ),
        }
    }
}

/// The output size of an adaptive pool: `None` keeps the input's size in that dim, as
/// PyTorch's `output_size=(None, 7)`.
fn adaptive_size<const N: usize>(
    layer: &str,
    input: &Tensor,
    out: &[Option<usize>; N],
) -> Result<Vec<i64>> {
    check_rank::<N>(layer, input)?;
    let d = input.dim();
    Ok((0..N)
        .map(|i| out[i].unwrap_or(input.shape()[d - N + i]) as i64)
        .collect())
}

/// `nn.AdaptiveAvgPool1d(output_size)` / `nn.AdaptiveAvgPool2d(output_size)`.
#[derive(Module, Clone, Debug)]
#[module(crate = crate)]
pub struct AdaptiveAvgPool<const N: usize> {
    #[module(skip)]
    pub output_size: [Option<usize>; N],
}

pub type AdaptiveAvgPool1d = AdaptiveAvgPool<1>;
pub type AdaptiveAvgPool2d = AdaptiveAvgPool<2>;

impl<const N: usize> AdaptiveAvgPool<N> {
    pub fn new(output_size: impl IntoSize<N>) -> Self {
        AdaptiveAvgPool {
            output_size: output_size.into_size().map(Some),
        }
    }
    /// With `None` entries (keep the input's size there).
    pub fn new_partial(output_size: [Option<usize>; N]) -> Self {
        AdaptiveAvgPool { output_size }
    }
}

impl<const N: usize> Forward for AdaptiveAvgPool<N> {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        let name = ["AdaptiveAvgPool1d", "AdaptiveAvgPool2d"][N - 1];
        let size = adaptive_size::<N>(name, input, &self.output_size)?;
        match N {
            1 => kiln_core::adaptive_avg_pool1d(input, &size),
            _ => kiln_core::adaptive_avg_pool2d(input, &size),
        }
    }
}

/// `nn.AdaptiveMaxPool1d(output_size, return_indices=False)` / `nn.AdaptiveMaxPool2d`.
#[derive(Module, Clone, Debug)]
#[module(crate = crate)]
pub struct AdaptiveMaxPool<const N: usize> {
    #[module(skip)]
    pub output_size: [Option<usize>; N],
}

pub type AdaptiveMaxPool1d = AdaptiveMaxPool<1>;
pub type AdaptiveMaxPool2d = AdaptiveMaxPool<2>;

impl<const N: usize> AdaptiveMaxPool<N> {
    pub fn new(output_size: impl IntoSize<N>) -> Self {
        AdaptiveMaxPool {
            output_size: output_size.into_size().map(Some),
        }
    }
    pub fn new_partial(output_size: [Option<usize>; N]) -> Self {
        AdaptiveMaxPool { output_size }
    }
    /// `return_indices=True`: `(values, indices)`.
    pub fn forward_with_indices(&self, input: &Tensor) -> Result<(Tensor, Tensor)> {
        let name = ["AdaptiveMaxPool1d", "AdaptiveMaxPool2d"][N - 1];
        let size = adaptive_size::<N>(name, input, &self.output_size)?;
        match N {
            1 => kiln_core::adaptive_max_pool1d(input, &size),
            _ => kiln_core::adaptive_max_pool2d(input, &size),
        }
    }
}

impl<const N: usize> Forward for AdaptiveMaxPool<N> {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        Ok(self.forward_with_indices(input)?.0)
    }
}
