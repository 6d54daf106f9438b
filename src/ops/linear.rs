//! Linear layers: `linear` (`input @ weightᵀ + bias`) and `bilinear`.

use crate::ops::backward::i64s;
use crate::{Error, Result, Tensor};

/// `linear(input, weight, bias)`: `input @ weightᵀ + bias`.
pub fn linear(input: &Tensor, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    if weight.dim() != 2 && weight.dim() != 1 {
        return Err(Error::shape(
            "linear",
            format!(
                "linear(): weight must be 1-D or 2-D, but got weight of size {:?}",
                weight.shape()
            ),
        ));
    }
    // (A bias of more than one dim broadcasts over more than rows: matmul, then add.)
    let Some(bias) = bias.filter(|b| input.dim() > 0 && b.dim() <= 1) else {
        let y = input.matmul(&weight.t()?)?;
        return match bias {
            Some(b) => y.add(b),
            None => Ok(y),
        };
    };
    // With a bias, one `addmm` over the input flattened to rows (PyTorch's
    // `_flatten_nd_linear`): the bias is added to the unrounded f32 sums of a half product,
    // so the result is rounded once, as the fused kernels PyTorch calls round it.
    let d = input.dim();
    let features = input.shape()[d - 1] as i64;
    let lead: usize = input.shape()[..d - 1].iter().product();
    let rows = input.reshape([lead as i64, features])?;
    let (w, out_shape): (Tensor, &[usize]) = if weight.dim() == 1 {
        (weight.unsqueeze(1)?, &[])
    } else {
        (weight.t()?, &weight.shape()[..1])
    };
    let y = bias.addmm(&rows, &w)?;
    let mut shape = crate::ops::backward::i64s(&input.shape()[..d - 1]);
    shape.extend(out_shape.iter().map(|&s| s as i64));
    y.reshape(&shape)
}

/// `bilinear(input1, input2, weight, bias)`: `y_k = x1ᵀ W_k x2 + b_k`.
pub fn bilinear(
    input1: &Tensor,
    input2: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
) -> Result<Tensor> {
    let op = "bilinear";
    let dtypes_match = [input2.dtype(), weight.dtype()]
        .into_iter()
        .chain(bias.map(Tensor::dtype))
        .all(|d| d == input1.dtype());
    if !dtypes_match {
        let bias = bias.map_or(String::new(), |b| {
            format!(", bias: {}", b.dtype().cpp_type_name())
        });
        return Err(Error::dtype(
            op,
            format!(
                "All tensors must have the same dtype, got input1: {}, input2: {}, weight: {}{bias}",
                input1.dtype().cpp_type_name(),
                input2.dtype().cpp_type_name(),
                weight.dtype().cpp_type_name()
            ),
        ));
    }
    if weight.dim() != 3 {
        return Err(Error::shape(
            op,
            format!(
                "bilinear(): weight must be 3-D, but got {:?}",
                weight.shape()
            ),
        ));
    }
    let (o, i1, i2) = (
        weight.shape()[0] as i64,
        weight.shape()[1],
        weight.shape()[2] as i64,
    );
    let (d1, d2) = (input1.dim(), input2.dim());
    if d1 == 0 || d2 == 0 || input1.shape()[d1 - 1] != i1 || input2.shape()[d2 - 1] as i64 != i2 {
        return Err(Error::shape(
            op,
            format!(
                "bilinear(): input sizes {:?} and {:?} do not match weight {:?}",
                input1.shape(),
                input2.shape(),
                weight.shape()
            ),
        ));
    }
    // x1 @ W viewed as [I1, O*I2], then a dot with x2 per output feature.
    let w = weight.permute(&[1, 0, 2])?.reshape([i1 as i64, o * i2])?;
    let mut lead = i64s(&input1.shape()[..d1 - 1]);
    lead.extend([o, i2]);
    let t = input1.matmul(&w)?.reshape(&lead)?;
    let y = crate::sum_dim_with(&t.mul(&input2.unsqueeze(-2)?)?, &[-1], false, None)?;
    match bias {
        Some(b) => y.add(b),
        None => Ok(y),
    }
}
