//! Activations as modules (`nn.ReLU`, `nn.GELU`, …), each a thin layer over the core op.
//! Parameterless ones are unit structs (`ReLU`); those with arguments have `new(…)` taking
//! PyTorch's required arguments and `Default` giving PyTorch's defaults where every
//! argument has one (`LeakyReLU::default()` is slope 0.01). PyTorch's `inplace=True` is not
//! offered: it only saves memory.

use crate::module::Forward;
use crate::Module;
use kiln_core::{DType, Error, Result, Tensor};

macro_rules! unit_activation {
    ($($(#[$doc:meta])* $name:ident => $f:expr;)*) => {$(
        $(#[$doc])*
        #[derive(Module, Clone, Copy, Debug, Default, PartialEq)]
        #[module(crate = crate)]
        pub struct $name;

        impl Forward for $name {
            fn forward(&self, input: &Tensor) -> Result<Tensor> {
                let f: fn(&Tensor) -> Result<Tensor> = $f;
                f(input)
            }
        }
    )*};
}

unit_activation! {
    /// `nn.ReLU()`: max(0, x).
    ReLU => kiln_core::relu;
    /// `nn.SiLU()`: x·σ(x).
    SiLU => kiln_core::silu;
    /// `nn.Sigmoid()`.
    Sigmoid => kiln_core::sigmoid;
    /// `nn.Tanh()`.
    Tanh => kiln_core::tanh;
    /// `nn.SELU()`: scale·ELU(x, α) with PyTorch's constants.
    SELU => kiln_core::selu;
    /// `nn.Hardswish()`: x·relu6(x + 3)/6.
    Hardswish => kiln_core::hardswish;
    /// `nn.Hardsigmoid()`: relu6(x + 3)/6.
    Hardsigmoid => kiln_core::hardsigmoid;
    /// `nn.Mish()`: x·tanh(softplus(x)).
    Mish => kiln_core::mish;
    /// `nn.ReLU6()`: min(max(0, x), 6).
    ReLU6 => kiln_core::relu6;
    /// `nn.Softsign()`: x / (1 + |x|).
    Softsign => kiln_core::softsign;
    /// `nn.Tanhshrink()`: x − tanh(x).
    Tanhshrink => kiln_core::tanhshrink;
    /// `nn.LogSigmoid()`: log σ(x).
    LogSigmoid => kiln_core::log_sigmoid;
}

/// `nn.LeakyReLU(negative_slope=0.01)`.
#[derive(Module, Clone, Copy, Debug, PartialEq)]
#[module(crate = crate)]
pub struct LeakyReLU {
    pub negative_slope: f64,
}

impl LeakyReLU {
    pub fn new(negative_slope: f64) -> Self {
        LeakyReLU { negative_slope }
    }
}

impl Default for LeakyReLU {
    fn default() -> Self {
        Self::new(0.01)
    }
}

impl Forward for LeakyReLU {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        kiln_core::leaky_relu_with(input, self.negative_slope)
    }
}

/// `approximate` of `nn.GELU`: `'none'` (exact, erf) or `'tanh'`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum GeluApproximate {
    #[default]
    None,
    Tanh,
}

impl GeluApproximate {
    pub fn as_str(self) -> &'static str {
        match self {
            GeluApproximate::None => "none",
            GeluApproximate::Tanh => "tanh",
        }
    }
}

/// `nn.GELU(approximate='none')`.
#[derive(Module, Clone, Copy, Debug, Default, PartialEq)]
#[module(crate = crate)]
pub struct GELU {
    #[module(skip)]
    pub approximate: GeluApproximate,
}

impl GELU {
    pub fn new(approximate: GeluApproximate) -> Self {
        GELU { approximate }
    }
}

impl Forward for GELU {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        kiln_core::gelu_with(input, self.approximate.as_str())
    }
}

macro_rules! dim_activation {
    ($($(#[$doc:meta])* $name:ident => |$x:ident, $d:ident| $body:expr;)*) => {$(
        $(#[$doc])*
        #[derive(Module, Clone, Copy, Debug, PartialEq)]
        #[module(crate = crate)]
        pub struct $name {
            pub dim: i64,
        }

        impl $name {
            pub fn new(dim: i64) -> Self {
                $name { dim }
            }
        }

        impl Forward for $name {
            fn forward(&self, $x: &Tensor) -> Result<Tensor> {
                let $d = self.dim;
                $body
            }
        }
    )*};
}

dim_activation! {
    /// `nn.Softmax(dim)`. (PyTorch's legacy `dim=None` is not offered: name the dim.)
    Softmax => |x, d| kiln_core::softmax(x, d);
    /// `nn.LogSoftmax(dim)`.
    LogSoftmax => |x, d| kiln_core::log_softmax(x, d);
    /// `nn.Softmin(dim)`: softmax(−x).
    Softmin => |x, d| kiln_core::softmax(&x.neg()?, d);
}

/// `nn.GLU(dim=-1)`: a ⊗ σ(b) for the two halves of `dim`.
#[derive(Module, Clone, Copy, Debug, PartialEq)]
#[module(crate = crate)]
pub struct GLU {
    pub dim: i64,
}

impl GLU {
    pub fn new(dim: i64) -> Self {
        GLU { dim }
    }
}

impl Default for GLU {
    fn default() -> Self {
        GLU { dim: -1 }
    }
}

impl Forward for GLU {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        kiln_core::glu_with(input, self.dim)
    }
}

/// `nn.ELU(alpha=1.0)`.
#[derive(Module, Clone, Copy, Debug, PartialEq)]
#[module(crate = crate)]
pub struct ELU {
    pub alpha: f64,
}

impl ELU {
    pub fn new(alpha: f64) -> Self {
        ELU { alpha }
    }
}

impl Default for ELU {
    fn default() -> Self {
        ELU { alpha: 1.0 }
    }
}

impl Forward for ELU {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        kiln_core::elu_with(input, self.alpha, 1.0, 1.0)
    }
}

/// `nn.CELU(alpha=1.0)`.
#[derive(Module, Clone, Copy, Debug, PartialEq)]
#[module(crate = crate)]
pub struct CELU {
    pub alpha: f64,
}

impl CELU {
    pub fn new(alpha: f64) -> Self {
        CELU { alpha }
    }
}

impl Default for CELU {
    fn default() -> Self {
        CELU { alpha: 1.0 }
    }
}

impl Forward for CELU {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        kiln_core::celu_with(input, self.alpha)
    }
}

/// `nn.Softplus(beta=1.0, threshold=20.0)`: log(1 + exp(βx))/β, linear above the threshold.
#[derive(Module, Clone, Copy, Debug, PartialEq)]
#[module(crate = crate)]
pub struct Softplus {
    pub beta: f64,
    pub threshold: f64,
}

impl Softplus {
    pub fn new(beta: f64, threshold: f64) -> Self {
        Softplus { beta, threshold }
    }
}

impl Default for Softplus {
    fn default() -> Self {
        Softplus::new(1.0, 20.0)
    }
}

impl Forward for Softplus {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        kiln_core::softplus_with(input, self.beta, self.threshold)
    }
}

/// `nn.Hardtanh(min_val=-1.0, max_val=1.0)`.
#[derive(Module, Clone, Copy, Debug, PartialEq)]
#[module(crate = crate)]
pub struct Hardtanh {
    pub min_val: f64,
    pub max_val: f64,
}

impl Hardtanh {
    /// Errors as PyTorch's when `max_val <= min_val`.
    pub fn new(min_val: f64, max_val: f64) -> Result<Self> {
        if max_val <= min_val {
            return Err(Error::value(
                "Hardtanh",
                "max_val must be greater than min_val",
            ));
        }
        Ok(Hardtanh { min_val, max_val })
    }
}

impl Default for Hardtanh {
    fn default() -> Self {
        Hardtanh {
            min_val: -1.0,
            max_val: 1.0,
        }
    }
}

impl Forward for Hardtanh {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        kiln_core::hardtanh_with(input, self.min_val, self.max_val)
    }
}

/// `nn.Threshold(threshold, value)`: x if x > threshold, else value.
#[derive(Module, Clone, Copy, Debug, PartialEq)]
#[module(crate = crate)]
pub struct Threshold {
    pub threshold: f64,
    pub value: f64,
}

impl Threshold {
    pub fn new(threshold: f64, value: f64) -> Self {
        Threshold { threshold, value }
    }
}

impl Forward for Threshold {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        kiln_core::threshold(input, self.threshold, self.value)
    }
}

/// `nn.Hardshrink(lambd=0.5)`.
#[derive(Module, Clone, Copy, Debug, PartialEq)]
#[module(crate = crate)]
pub struct Hardshrink {
    pub lambd: f64,
}

impl Default for Hardshrink {
    fn default() -> Self {
        Hardshrink { lambd: 0.5 }
    }
}

impl Forward for Hardshrink {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        kiln_core::hardshrink_with(input, self.lambd)
    }
}

/// `nn.Softshrink(lambd=0.5)`.
#[derive(Module, Clone, Copy, Debug, PartialEq)]
#[module(crate = crate)]
pub struct Softshrink {
    pub lambd: f64,
}

impl Default for Softshrink {
    fn default() -> Self {
        Softshrink { lambd: 0.5 }
    }
}

impl Forward for Softshrink {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        kiln_core::softshrink_with(input, self.lambd)
    }
}

/// `nn.PReLU(num_parameters=1, init=0.25)`: parameter `weight` `[num_parameters]`, one slope
/// per channel (dim 1) or one shared.
#[derive(Module)]
#[module(crate = crate)]
pub struct PReLU {
    pub weight: Tensor,
    pub num_parameters: usize,
}

impl PReLU {
    /// One shared slope of 0.25, float32.
    pub fn new() -> Result<Self> {
        Self::with_options(1, 0.25, DType::F32)
    }

    pub fn with_options(num_parameters: usize, init: f64, dtype: DType) -> Result<Self> {
        Ok(PReLU {
            weight: Tensor::full([num_parameters], init, dtype)?.requires_grad_(true)?,
            num_parameters,
        })
    }
}

impl Forward for PReLU {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        if self.num_parameters != 1 {
            let c = if input.dim() >= 2 {
                input.shape()[1]
            } else {
                0
            };
            if c != self.num_parameters {
                return Err(Error::shape(
                    "PReLU",
                    format!(
                        "Mismatch of parameter numbers and input channel size. Found parameter numbers = {} and channel size = {c} (input of size {:?})",
                        self.num_parameters,
                        input.shape()
                    ),
                ));
            }
        }
        kiln_core::prelu(input, &self.weight)
    }
}
