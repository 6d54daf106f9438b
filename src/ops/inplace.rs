//! In-place writes that are not arithmetic: `copy_`, `fill_`, `zero_`, `uniform_`, `normal_`
//! (what `nn.init`, `load_state_dict` and optimizers are built on). They follow the in-place
//! rules of the generated ops: a leaf that requires grad may only be written under `no_grad`,
//! and with grad enabled the write is recorded (a copy's gradient flows to `src`, none flows
//! to the overwritten values).

use crate::dispatch::launch::{self, Inplace};
use crate::{no_grad, Error, Result, Scalar, Tensor};

impl Tensor {
    /// Copies `src` into `self` (PyTorch's `copy_`): `src` is broadcast to `self`'s shape and
    /// cast to its dtype, from any device (a `src` elsewhere is moved to `self`'s device first,
    /// and its gradient flows back across). Returns `self`.
    pub fn copy_(&self, src: &Tensor) -> Result<Tensor> {
        // Shapes first: a source that cannot broadcast is refused before any transfer.
        src.layout().broadcast_to(self.shape()).map_err(|_| {
            Error::shape(
                "copy_",
                format!(
                    "The size of tensor a ({:?}) must match the size of tensor b ({:?}): src can't be broadcast to self",
                    self.shape(),
                    src.shape()
                ),
            )
        })?;
        let moved;
        let src = if src.device() != self.device() {
            moved = src
                .to_device(self.device())
                .map_err(|e| rename(e, "copy_"))?;
            &moved
        } else {
            src
        };
        match launch::check_inplace("copy_", self, &[src])? {
            Inplace::Untracked => {
                let shape: Vec<i64> = self.shape().iter().map(|&s| s as i64).collect();
                let src = if src.shape() == self.shape() {
                    src.clone()
                } else {
                    src.expand(&shape)?
                };
                launch::commit_inplace("copy_", self, &src)?;
                Ok(self.clone())
            }
            Inplace::Record => {
                let result = recorded_copy(self, src)?;
                launch::commit_inplace("copy_", self, &result)?;
                if let Some(f) = result.grad_fn() {
                    self.set_grad_fn(f, 0);
                }
                Ok(self.clone())
            }
            Inplace::ViewOf(base) => {
                let result = recorded_copy(self, src)?;
                launch::commit_view_inplace("copy_", self, &base, &result)?;
                Ok(self.clone())
            }
        }
    }

    /// Fills `self` with `value` (PyTorch's `fill_`). Returns `self`.
    pub fn fill_(&self, value: impl Into<Scalar>) -> Result<Tensor> {
        let value = value.into();
        let v = Tensor::full_on((), value, self.dtype(), self.device())?;
        self.copy_(&v).map_err(|e| rename(e, "fill_"))
    }

    /// Fills `self` with zeros (PyTorch's `zero_`). Returns `self`.
    pub fn zero_(&self) -> Result<Tensor> {
        self.fill_(0).map_err(|e| rename(e, "zero_"))
    }

    /// Fills `self` with samples from U(`from`, `to`) from the global generator (PyTorch's
    /// `uniform_`, default `(0, 1)`). Floating dtypes only. Returns `self`.
    pub fn uniform_(&self, from: f64, to: f64) -> Result<Tensor> {
        if from > to {
            return Err(Error::value(
                "uniform_",
                format!("uniform_ expects to return a [from, to) range, but found from={from} > to={to}"),
            ));
        }
        let sample = {
            let _g = no_grad();
            Tensor::rand_on(self.shape(), self.dtype(), self.device())?
                .mul_scalar(to - from)?
                .add_scalar(from)?
        };
        self.copy_(&sample).map_err(|e| rename(e, "uniform_"))
    }

    /// Fills `self` with samples from N(`mean`, `std`²) from the global generator (PyTorch's
    /// `normal_`). Floating dtypes only. Returns `self`.
    pub fn normal_(&self, mean: f64, std: f64) -> Result<Tensor> {
        if std < 0.0 || std.is_nan() {
            return Err(Error::value(
                "normal_",
                format!("normal expects std >= 0.0, but found std {std}"),
            ));
        }
        let sample = {
            let _g = no_grad();
            Tensor::randn_on(self.shape(), self.dtype(), self.device())?
                .mul_scalar(std)?
                .add_scalar(mean)?
        };
        self.copy_(&sample).map_err(|e| rename(e, "normal_"))
    }
}

/// `src` cast and broadcast to `self`, with history: a gradient flows to `src`, and when
/// `self` had history its old values get a zero gradient (PyTorch's CopyBackwards), which
/// `where(true, src, self)` records.
fn recorded_copy(target: &Tensor, src: &Tensor) -> Result<Tensor> {
    let shape: Vec<i64> = target.shape().iter().map(|&s| s as i64).collect();
    let src = src.to_dtype(target.dtype())?.expand(&shape)?;
    if !target.requires_grad() {
        return Ok(src);
    }
    let all = Tensor::full_on((), true, crate::DType::Bool, target.device())?;
    crate::where_cond(&all, &src, target)
}

/// The error of a helper op, renamed to the op the user called.
fn rename(e: Error, op: &str) -> Error {
    match e {
        Error::Op { kind, msg, .. } => Error::new(kind, op, msg),
        Error::Autograd(m) => Error::Autograd(m.replacen("copy_", op, 1)),
        other => other,
    }
}
