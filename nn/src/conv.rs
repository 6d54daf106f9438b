//! Convolutions: `Conv1d`, `Conv2d`, `Conv3d`, `ConvTranspose1d`, `ConvTranspose2d`.
//!
//! Every layer in kiln-nn with more than a couple of settings follows one pattern:
//! `Layer::new(required…)` builds PyTorch's default layer (float32), and
//! `Layer::with_options(required…, LayerOptions::default().stride(2).bias(false))` takes the
//! rest from an options struct with chainable setters, named as PyTorch's keyword arguments.
//! Sizes accept a single `usize` (repeated over the spatial dims, as PyTorch's `int`) or an
//! array (`[3, 5]`, as PyTorch's tuple).
//!
//! ```
//! use kiln_nn::{Conv2d, ConvOptions, Forward, Padding};
//! let conv = Conv2d::with_options(3, 8, 3, ConvOptions::default().padding(Padding::Same))?;
//! let y = conv.forward(&kiln_core::Tensor::ones(&[1, 3, 5, 5], kiln_core::DType::F32)?)?;
//! assert_eq!(y.shape(), &[1, 8, 5, 5]);
//! # Ok::<(), kiln_core::Error>(())
//! ```

use crate::init::{self, FanMode, Nonlinearity};
use crate::module::Forward;
use crate::Module;
use kiln_core::{DType, Error, Result, Tensor};

/// A size per spatial dim: a `usize` (the same for every dim) or `[usize; N]`.
pub trait IntoSize<const N: usize> {
    fn into_size(self) -> [usize; N];
}

impl<const N: usize> IntoSize<N> for usize {
    fn into_size(self) -> [usize; N] {
        [self; N]
    }
}

impl<const N: usize> IntoSize<N> for [usize; N] {
    fn into_size(self) -> [usize; N] {
        self
    }
}

pub(crate) fn i64s(v: &[usize]) -> Vec<i64> {
    v.iter().map(|&x| x as i64).collect()
}

/// A convolution's `padding`: explicit amounts per side, or PyTorch's `'same'` / `'valid'`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Padding<const N: usize> {
    /// Zeros (or the padding mode's values) on both sides of each spatial dim.
    Explicit([usize; N]),
    /// `padding='same'`: output size equals input size (stride 1 only).
    Same,
    /// `padding='valid'`: no padding.
    Valid,
}

impl<const N: usize> From<usize> for Padding<N> {
    fn from(p: usize) -> Self {
        Padding::Explicit([p; N])
    }
}

impl<const N: usize> From<[usize; N]> for Padding<N> {
    fn from(p: [usize; N]) -> Self {
        Padding::Explicit(p)
    }
}

/// `padding_mode`: what the padded border holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PaddingMode {
    #[default]
    Zeros,
    Reflect,
    Replicate,
    Circular,
}

impl PaddingMode {
    fn pad_mode(self) -> &'static str {
        match self {
            PaddingMode::Zeros => "constant",
            PaddingMode::Reflect => "reflect",
            PaddingMode::Replicate => "replicate",
            PaddingMode::Circular => "circular",
        }
    }
}

/// The keyword arguments of `nn.Conv{1,2,3}d` after the kernel size.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConvOptions<const N: usize> {
    pub stride: [usize; N],
    pub padding: Padding<N>,
    pub dilation: [usize; N],
    pub groups: usize,
    pub bias: bool,
    pub padding_mode: PaddingMode,
    pub dtype: DType,
}

impl<const N: usize> Default for ConvOptions<N> {
    /// PyTorch's defaults: stride 1, padding 0, dilation 1, groups 1, bias, zeros, float32.
    fn default() -> Self {
        ConvOptions {
            stride: [1; N],
            padding: Padding::Explicit([0; N]),
            dilation: [1; N],
            groups: 1,
            bias: true,
            padding_mode: PaddingMode::Zeros,
            dtype: DType::F32,
        }
    }
}

impl<const N: usize> ConvOptions<N> {
    pub fn stride(mut self, s: impl IntoSize<N>) -> Self {
        self.stride = s.into_size();
        self
    }
    /// `usize`, `[usize; N]`, `Padding::Same` or `Padding::Valid`.
    pub fn padding(mut self, p: impl Into<Padding<N>>) -> Self {
        self.padding = p.into();
        self
    }
    pub fn dilation(mut self, d: impl IntoSize<N>) -> Self {
        self.dilation = d.into_size();
        self
    }
    crate::setters!(groups: usize, bias: bool, padding_mode: PaddingMode, dtype: DType);
}

/// PyTorch's `_ConvNd.reset_parameters`: kaiming_uniform(a=√5) on the weight, the bias
/// U(±1/√fan_in) with fan_in from the weight.
fn init_conv(
    shape: &[usize],
    bias_len: Option<usize>,
    dtype: DType,
) -> Result<(Tensor, Option<Tensor>)> {
    let weight = Tensor::empty(shape, dtype)?;
    init::kaiming_uniform_(
        &weight,
        5f64.sqrt(),
        FanMode::FanIn,
        Nonlinearity::LeakyRelu(0.0),
    )?;
    let bias = match bias_len {
        Some(n) => {
            let b = Tensor::empty([n], dtype)?;
            let (fan_in, _) = init::calculate_fan_in_and_fan_out(&weight)?;
            let bound = if fan_in > 0 {
                1.0 / (fan_in as f64).sqrt()
            } else {
                0.0
            };
            init::uniform_(&b, -bound, bound)?;
            Some(b.requires_grad_(true)?)
        }
        None => None,
    };
    Ok((weight.requires_grad_(true)?, bias))
}

fn check_groups(layer: &str, in_c: usize, out_c: usize, groups: usize) -> Result<()> {
    if groups == 0 {
        return Err(Error::value(layer, "groups must be a positive integer"));
    }
    if !in_c.is_multiple_of(groups) {
        return Err(Error::value(
            layer,
            "in_channels must be divisible by groups",
        ));
    }
    if !out_c.is_multiple_of(groups) {
        return Err(Error::value(
            layer,
            "out_channels must be divisible by groups",
        ));
    }
    Ok(())
}

/// Checks an input's rank (unbatched or batched) and channel count, with PyTorch's wording
/// and the layer's name.
fn check_input<const N: usize>(
    layer: &str,
    op: &str,
    input: &Tensor,
    weight: &Tensor,
    channels: usize,
) -> Result<()> {
    let d = input.dim();
    if d != N + 1 && d != N + 2 {
        return Err(Error::shape(
            layer,
            format!(
                "Expected {}D (unbatched) or {}D (batched) input to {op}, but got input of size: {:?}",
                N + 1,
                N + 2,
                input.shape()
            ),
        ));
    }
    let c = input.shape()[d - N - 1];
    if c != channels {
        return Err(Error::shape(
            layer,
            format!(
                "weight of size {:?}, expected input{:?} to have {channels} channels, but got {c} channels instead",
                weight.shape(),
                input.shape()
            ),
        ));
    }
    Ok(())
}

/// `nn.Conv1d` / `nn.Conv2d` / `nn.Conv3d` (`N` spatial dims): weight
/// `[out_channels, in_channels / groups, *kernel_size]`, bias `[out_channels]`.
#[derive(Module)]
#[module(crate = crate)]
pub struct Conv<const N: usize> {
    pub weight: Tensor,
    pub bias: Option<Tensor>,
    pub in_channels: usize,
    pub out_channels: usize,
    #[module(skip)]
    pub kernel_size: [usize; N],
    #[module(skip)]
    pub options: ConvOptions<N>,
}

/// `nn.Conv1d(in_channels, out_channels, kernel_size, …)`.
pub type Conv1d = Conv<1>;
/// `nn.Conv2d(in_channels, out_channels, kernel_size, …)`.
pub type Conv2d = Conv<2>;
/// `nn.Conv3d(in_channels, out_channels, kernel_size, …)`.
pub type Conv3d = Conv<3>;

impl<const N: usize> Conv<N> {
    fn name() -> &'static str {
        match N {
            1 => "Conv1d",
            2 => "Conv2d",
            _ => "Conv3d",
        }
    }

    /// PyTorch's defaults (stride 1, no padding, bias), float32.
    pub fn new(
        in_channels: usize,
        out_channels: usize,
        kernel_size: impl IntoSize<N>,
    ) -> Result<Self> {
        Self::with_options(
            in_channels,
            out_channels,
            kernel_size,
            ConvOptions::default(),
        )
    }

    /// The full constructor. Errors as PyTorch's: groups must divide both channel counts,
    /// `padding='same'` needs stride 1.
    pub fn with_options(
        in_channels: usize,
        out_channels: usize,
        kernel_size: impl IntoSize<N>,
        options: ConvOptions<N>,
    ) -> Result<Self> {
        let layer = Self::name();
        check_groups(layer, in_channels, out_channels, options.groups)?;
        if options.padding == Padding::Same && options.stride.iter().any(|&s| s != 1) {
            return Err(Error::value(
                layer,
                "padding='same' is not supported for strided convolutions",
            ));
        }
        if options.stride.contains(&0) || options.dilation.contains(&0) {
            return Err(Error::value(layer, "stride and dilation must be positive"));
        }
        let kernel_size = kernel_size.into_size();
        let mut shape = vec![out_channels, in_channels / options.groups];
        shape.extend_from_slice(&kernel_size);
        let (weight, bias) =
            init_conv(&shape, options.bias.then_some(out_channels), options.dtype)?;
        Ok(Conv {
            weight,
            bias,
            in_channels,
            out_channels,
            kernel_size,
            options,
        })
    }

    /// The padding `F.pad` gets for a non-zeros `padding_mode`
    /// (`_reversed_padding_repeated_twice`): last dim first, left then right.
    fn reversed_padding(&self) -> Vec<i64> {
        let mut out = Vec::with_capacity(2 * N);
        for d in (0..N).rev() {
            let (l, r) = match self.options.padding {
                Padding::Explicit(p) => (p[d], p[d]),
                Padding::Valid => (0, 0),
                Padding::Same => {
                    let total = self.options.dilation[d] * (self.kernel_size[d] - 1);
                    (total / 2, total - total / 2)
                }
            };
            out.push(l as i64);
            out.push(r as i64);
        }
        out
    }
}

#[allow(clippy::too_many_arguments)]
fn conv_nd(
    n: usize,
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
) -> Result<Tensor> {
    match n {
        1 => kiln_core::conv1d_with(input, weight, bias, stride, padding, dilation, groups),
        2 => kiln_core::conv2d_with(input, weight, bias, stride, padding, dilation, groups),
        _ => kiln_core::conv3d_with(input, weight, bias, stride, padding, dilation, groups),
    }
}

impl<const N: usize> Forward for Conv<N> {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        let op = ["conv1d", "conv2d", "conv3d"][N - 1];
        check_input::<N>(Self::name(), op, input, &self.weight, self.in_channels)?;
        let o = &self.options;
        let (stride, dilation, groups) = (i64s(&o.stride), i64s(&o.dilation), o.groups as i64);
        let bias = self.bias.as_ref();
        if o.padding_mode != PaddingMode::Zeros {
            let padded = kiln_core::pad_with(
                input,
                self.reversed_padding(),
                o.padding_mode.pad_mode(),
                None,
            )?;
            return conv_nd(
                N,
                &padded,
                &self.weight,
                bias,
                &stride,
                &[0; N],
                &dilation,
                groups,
            );
        }
        match o.padding {
            Padding::Explicit(p) => conv_nd(
                N,
                input,
                &self.weight,
                bias,
                &stride,
                &i64s(&p),
                &dilation,
                groups,
            ),
            Padding::Same | Padding::Valid => {
                let s = if o.padding == Padding::Same {
                    "same"
                } else {
                    "valid"
                };
                match N {
                    1 => kiln_core::conv1d_padding_with(
                        input,
                        &self.weight,
                        bias,
                        &stride,
                        s,
                        &dilation,
                        groups,
                    ),
                    2 => kiln_core::conv2d_padding_with(
                        input,
                        &self.weight,
                        bias,
                        &stride,
                        s,
                        &dilation,
                        groups,
                    ),
                    _ => kiln_core::conv3d_padding_with(
                        input,
                        &self.weight,
                        bias,
                        &stride,
                        s,
                        &dilation,
                        groups,
                    ),
                }
            }
        }
    }
}

/// The keyword arguments of `nn.ConvTranspose{1,2}d` after the kernel size. Only zeros
/// padding exists for transposed convolutions, as in PyTorch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConvTransposeOptions<const N: usize> {
    pub stride: [usize; N],
    pub padding: [usize; N],
    pub output_padding: [usize; N],
    pub groups: usize,
    pub bias: bool,
    pub dilation: [usize; N],
    pub dtype: DType,
}

impl<const N: usize> Default for ConvTransposeOptions<N> {
    fn default() -> Self {
        ConvTransposeOptions {
            stride: [1; N],
            padding: [0; N],
            output_padding: [0; N],
            groups: 1,
            bias: true,
            dilation: [1; N],
            dtype: DType::F32,
        }
    }
}

impl<const N: usize> ConvTransposeOptions<N> {
    pub fn stride(mut self, s: impl IntoSize<N>) -> Self {
        self.stride = s.into_size();
        self
    }
    pub fn padding(mut self, p: impl IntoSize<N>) -> Self {
        self.padding = p.into_size();
        self
    }
    pub fn output_padding(mut self, p: impl IntoSize<N>) -> Self {
        self.output_padding = p.into_size();
        self
    }
    crate::setters!(groups: usize, bias: bool);
    pub fn dilation(mut self, d: impl IntoSize<N>) -> Self {
        self.dilation = d.into_size();
        self
    }
    crate::setters!(dtype: DType);
}

/// `nn.ConvTranspose1d` / `nn.ConvTranspose2d`: weight
/// `[in_channels, out_channels / groups, *kernel_size]`, bias `[out_channels]`.
#[derive(Module)]
#[module(crate = crate)]
pub struct ConvTranspose<const N: usize> {
    pub weight: Tensor,
    pub bias: Option<Tensor>,
    pub in_channels: usize,
    pub out_channels: usize,
    #[module(skip)]
    pub kernel_size: [usize; N],
    #[module(skip)]
    pub options: ConvTransposeOptions<N>,
}

/// `nn.ConvTranspose1d(in_channels, out_channels, kernel_size, …)`.
pub type ConvTranspose1d = ConvTranspose<1>;
/// `nn.ConvTranspose2d(in_channels, out_channels, kernel_size, …)`.
pub type ConvTranspose2d = ConvTranspose<2>;

impl<const N: usize> ConvTranspose<N> {
    fn name() -> &'static str {
        match N {
            1 => "ConvTranspose1d",
            _ => "ConvTranspose2d",
        }
    }

    pub fn new(
        in_channels: usize,
        out_channels: usize,
        kernel_size: impl IntoSize<N>,
    ) -> Result<Self> {
        Self::with_options(
            in_channels,
            out_channels,
            kernel_size,
            ConvTransposeOptions::default(),
        )
    }

    pub fn with_options(
        in_channels: usize,
        out_channels: usize,
        kernel_size: impl IntoSize<N>,
        options: ConvTransposeOptions<N>,
    ) -> Result<Self> {
        let layer = Self::name();
        if N > 2 {
            return Err(Error::not_implemented(
                layer,
                "only 1 and 2 spatial dims are supported",
            ));
        }
        check_groups(layer, in_channels, out_channels, options.groups)?;
        if options.stride.contains(&0) || options.dilation.contains(&0) {
            return Err(Error::value(layer, "stride and dilation must be positive"));
        }
        let kernel_size = kernel_size.into_size();
        let mut shape = vec![in_channels, out_channels / options.groups];
        shape.extend_from_slice(&kernel_size);
        let (weight, bias) =
            init_conv(&shape, options.bias.then_some(out_channels), options.dtype)?;
        Ok(ConvTranspose {
            weight,
            bias,
            in_channels,
            out_channels,
            kernel_size,
            options,
        })
    }

    /// `forward(input, output_size)`: picks the output padding that gives `output_size`
    /// (the spatial sizes, or the full shape), as PyTorch's `_output_padding`.
    pub fn forward_with_output_size(
        &self,
        input: &Tensor,
        output_size: &[usize],
    ) -> Result<Tensor> {
        self.run(input, Some(output_size))
    }

    fn output_padding(&self, input: &Tensor, output_size: Option<&[usize]>) -> Result<[usize; N]> {
        let Some(size) = output_size else {
            return Ok(self.options.output_padding);
        };
        let non_spatial = if input.dim() == N + 2 { 2 } else { 1 };
        let size = if size.len() == non_spatial + N {
            &size[non_spatial..]
        } else {
            size
        };
        if size.len() != N {
            return Err(Error::shape(
                Self::name(),
                format!(
                    "ConvTranspose{N}D: for {}D input, output_size must have {N} or {} elements (got {})",
                    input.dim(),
                    non_spatial + N,
                    size.len()
                ),
            ));
        }
        let o = &self.options;
        let mut ret = [0; N];
        for d in 0..N {
            let base = (input.shape()[d + non_spatial] as i64 - 1) * o.stride[d] as i64
                - 2 * o.padding[d] as i64
                + (o.dilation[d] * (self.kernel_size[d] - 1)) as i64
                + 1;
            let (lo, hi) = (base, base + o.stride[d] as i64 - 1);
            let want = size[d] as i64;
            if want < lo || want > hi {
                return Err(Error::shape(
                    Self::name(),
                    format!(
                        "requested an output size of {size:?}, but valid sizes range from {lo} to {hi} in dim {d} (for an input of {:?})",
                        &input.shape()[non_spatial..]
                    ),
                ));
            }
            ret[d] = (want - lo) as usize;
        }
        Ok(ret)
    }

    fn run(&self, input: &Tensor, output_size: Option<&[usize]>) -> Result<Tensor> {
        let op = ["conv_transpose1d", "conv_transpose2d"][N - 1];
        check_input::<N>(Self::name(), op, input, &self.weight, self.in_channels)?;
        let o = &self.options;
        let op_pad = self.output_padding(input, output_size)?;
        let args = (
            i64s(&o.stride),
            i64s(&o.padding),
            i64s(&op_pad),
            o.groups as i64,
            i64s(&o.dilation),
        );
        let bias = self.bias.as_ref();
        match N {
            1 => kiln_core::conv_transpose1d_with(
                input,
                &self.weight,
                bias,
                &args.0,
                &args.1,
                &args.2,
                args.3,
                &args.4,
            ),
            _ => kiln_core::conv_transpose2d_with(
                input,
                &self.weight,
                bias,
                &args.0,
                &args.1,
                &args.2,
                args.3,
                &args.4,
            ),
        }
    }
}

impl<const N: usize> Forward for ConvTranspose<N> {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        self.run(input, None)
    }
}
