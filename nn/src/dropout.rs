//! Dropout layers: `Dropout` (elementwise) and `Dropout1d`/`Dropout2d`/`Dropout3d` (whole
//! channels). All are the identity in eval mode.

use crate::module::Forward;
use crate::Module;
use kiln_core::{Error, Result, Tensor};

fn check_p(layer: &str, p: f64) -> Result<()> {
    if !(0.0..=1.0).contains(&p) {
        return Err(Error::value(
            layer,
            format!("dropout probability has to be between 0 and 1, but got {p}"),
        ));
    }
    Ok(())
}

/// `nn.Dropout(p=0.5)`: during training zeroes each element with probability `p` (drawn from
/// the global generator, `kiln::manual_seed`) and scales the rest by `1/(1-p)`.
#[derive(Module, Clone, Debug)]
#[module(crate = crate)]
pub struct Dropout {
    pub p: f64,
    pub training: bool,
}

impl Dropout {
    /// `Dropout(p)`; an error unless `0 ≤ p ≤ 1`.
    pub fn new(p: f64) -> Result<Self> {
        check_p("Dropout", p)?;
        Ok(Dropout { p, training: true })
    }
}

impl Default for Dropout {
    fn default() -> Self {
        Dropout {
            p: 0.5,
            training: true,
        }
    }
}

impl Forward for Dropout {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        kiln_core::dropout(input, self.p, self.training)
    }
}

/// Channel dropout shared by `Dropout1d/2d/3d`: zeroes whole channels (`input[n, c]`) with
/// probability `p`, as `F.dropout{1,2,3}d`. `spatial` is the number of dims after the channel
/// dim of a batched input; an input with one dim fewer is unbatched.
fn channel_dropout(
    layer: &str,
    input: &Tensor,
    p: f64,
    training: bool,
    spatial: usize,
) -> Result<Tensor> {
    let d = input.dim();
    if d != spatial + 1 && d != spatial + 2 {
        return Err(Error::shape(
            layer,
            format!(
                "Expected {}D or {}D input, but received a {d}D input of size {:?}",
                spatial + 1,
                spatial + 2,
                input.shape()
            ),
        ));
    }
    if !training || p == 0.0 {
        return Ok(input.clone());
    }
    // As `F.dropout2d`, a 3-D input to `Dropout2d` is read as a batched `(N, C, L)`.
    let batched = d == spatial + 2 || (spatial == 2 && d == 3);
    let spatial = if batched { d - 2 } else { spatial };
    let x = if batched {
        input.clone()
    } else {
        input.unsqueeze(0)?
    };
    let mut mask_shape = x.shape()[..2].to_vec();
    mask_shape.extend(std::iter::repeat_n(1, spatial));
    let compute = if x.dtype().is_floating_point() {
        x.dtype()
    } else {
        kiln_core::DType::F32
    };
    let y = if p == 1.0 {
        x.mul(&x.zeros_like()?)?
    } else {
        let keep = Tensor::rand_on(&mask_shape, compute, x.device())?
            .ge_scalar(p)?
            .to_dtype(x.dtype())?;
        x.mul(&keep)?.div_scalar(1.0 - p)?
    };
    if batched {
        Ok(y)
    } else {
        y.squeeze_dim(0)
    }
}

macro_rules! channel_dropout_layer {
    ($name:ident, $spatial:expr, $doc:expr) => {
        #[doc = $doc]
        #[derive(Module, Clone, Debug)]
        #[module(crate = crate)]
        pub struct $name {
            pub p: f64,
            pub training: bool,
        }

        impl $name {
            /// An error unless `0 ≤ p ≤ 1`.
            pub fn new(p: f64) -> Result<Self> {
                check_p(stringify!($name), p)?;
                Ok($name { p, training: true })
            }
        }

        impl Default for $name {
            fn default() -> Self {
                $name {
                    p: 0.5,
                    training: true,
                }
            }
        }

        impl Forward for $name {
            fn forward(&self, input: &Tensor) -> Result<Tensor> {
                channel_dropout(stringify!($name), input, self.p, self.training, $spatial)
            }
        }
    };
}

channel_dropout_layer!(
    Dropout1d,
    1,
    "`nn.Dropout1d(p=0.5)`: zeroes whole channels of `(N, C, L)` or `(C, L)` input in training."
);
channel_dropout_layer!(
    Dropout2d,
    2,
    "`nn.Dropout2d(p=0.5)`: zeroes whole channels of `(N, C, H, W)` or `(C, H, W)` input in training."
);
channel_dropout_layer!(
    Dropout3d,
    3,
    "`nn.Dropout3d(p=0.5)`: zeroes whole channels of `(N, C, D, H, W)` or `(C, D, H, W)` input in training."
);
