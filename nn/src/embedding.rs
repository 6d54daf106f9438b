//! `Embedding`: a lookup table of `num_embeddings` vectors.

use crate::module::Forward;
use crate::Module;
use kiln::{no_grad, DType, Error, Result, Tensor};

/// The keyword arguments of `nn.Embedding` after the two sizes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EmbeddingOptions {
    /// A row that reads as zeros at init and gets no gradient; negative counts from the end.
    pub padding_idx: Option<i64>,
    /// Rows looked up with a `norm_type`-norm above this are rescaled to it, in place, at
    /// each forward (PyTorch's `embedding_renorm_`).
    pub max_norm: Option<f64>,
    pub norm_type: f64,
    /// Divide each row's gradient by its index's frequency in the mini-batch.
    pub scale_grad_by_freq: bool,
    pub dtype: DType,
}

impl Default for EmbeddingOptions {
    fn default() -> Self {
        EmbeddingOptions {
            padding_idx: None,
            max_norm: None,
            norm_type: 2.0,
            scale_grad_by_freq: false,
            dtype: DType::F32,
        }
    }
}

impl EmbeddingOptions {
    crate::setters!(padding_idx: Option<i64>, max_norm: Option<f64>, norm_type: f64, scale_grad_by_freq: bool, dtype: DType);
}

/// `nn.Embedding(num_embeddings, embedding_dim, padding_idx=None, max_norm=None,
/// norm_type=2.0, scale_grad_by_freq=False, sparse=False)`: `weight`
/// `[num_embeddings, embedding_dim]`, N(0, 1) with the `padding_idx` row zeroed. The padding
/// row gets no gradient. `sparse=True` is not offered (kiln has no sparse tensors).
#[derive(Module)]
#[module(crate = crate)]
pub struct Embedding {
    pub weight: Tensor,
    pub num_embeddings: usize,
    pub embedding_dim: usize,
    /// Non-negative after construction (a negative index counts from the end, as PyTorch).
    #[module(skip)]
    pub padding_idx: Option<usize>,
    #[module(skip)]
    pub max_norm: Option<f64>,
    pub norm_type: f64,
    pub scale_grad_by_freq: bool,
}

fn norm_padding_idx(num_embeddings: usize, padding_idx: Option<i64>) -> Result<Option<usize>> {
    match padding_idx {
        None => Ok(None),
        Some(p) => {
            let n = num_embeddings as i64;
            if p >= n || p < -n {
                return Err(Error::op(
                    "Embedding",
                    format!("Padding_idx must be within num_embeddings (got padding_idx={p}, num_embeddings={n})"),
                ));
            }
            Ok(Some(if p < 0 { (p + n) as usize } else { p as usize }))
        }
    }
}

impl Embedding {
    /// float32, PyTorch's defaults.
    pub fn new(num_embeddings: usize, embedding_dim: usize) -> Result<Self> {
        Self::with_options(num_embeddings, embedding_dim, EmbeddingOptions::default())
    }

    pub fn with_options(
        num_embeddings: usize,
        embedding_dim: usize,
        options: EmbeddingOptions,
    ) -> Result<Self> {
        let padding_idx = norm_padding_idx(num_embeddings, options.padding_idx)?;
        let weight = Tensor::empty([num_embeddings, embedding_dim], options.dtype)?;
        crate::init::normal_(&weight, 0.0, 1.0)?;
        if let Some(p) = padding_idx {
            let _g = no_grad();
            weight.select(0, p as i64)?.zero_()?;
        }
        Ok(Embedding {
            weight: weight.requires_grad_(true)?,
            num_embeddings,
            embedding_dim,
            padding_idx,
            max_norm: options.max_norm,
            norm_type: options.norm_type,
            scale_grad_by_freq: options.scale_grad_by_freq,
        })
    }

    /// `Embedding.from_pretrained(embeddings, freeze=True, padding_idx, max_norm, norm_type,
    /// scale_grad_by_freq)`: the layer holds `embeddings` itself (no copy; the padding row is
    /// left as given, as PyTorch); with `freeze` it does not require grad. `options.dtype` is
    /// ignored (the table's is kept).
    pub fn from_pretrained(
        embeddings: &Tensor,
        freeze: bool,
        options: EmbeddingOptions,
    ) -> Result<Self> {
        if embeddings.dim() != 2 {
            return Err(Error::op(
                "Embedding",
                "Embeddings parameter is expected to be 2-dimensional",
            ));
        }
        let (n, d) = (embeddings.shape()[0], embeddings.shape()[1]);
        let padding_idx = norm_padding_idx(n, options.padding_idx)?;
        let weight = embeddings.detach().requires_grad_(!freeze)?;
        Ok(Embedding {
            weight,
            num_embeddings: n,
            embedding_dim: d,
            padding_idx,
            max_norm: options.max_norm,
            norm_type: options.norm_type,
            scale_grad_by_freq: options.scale_grad_by_freq,
        })
    }
}

/// PyTorch's `embedding_renorm_(weight, indices, max_norm, norm_type)`: every row that
/// `indices` reads and whose norm exceeds `max_norm` is scaled by `max_norm / (norm + 1e-7)`,
/// in place and outside autograd.
pub(crate) fn embedding_renorm_(
    weight: &Tensor,
    indices: &Tensor,
    max_norm: f64,
    norm_type: f64,
) -> Result<()> {
    let _g = no_grad();
    let n = weight.shape().first().copied().unwrap_or(0) as i64;
    let flat = indices.reshape([-1])?;
    let used = kiln::one_hot_with(&flat, n)?.sum_dim(&[0])?.gt_scalar(0)?;
    let norms = kiln::linalg_vector_norm_with(weight, norm_type, Some(&[1]), false, None)?;
    let ones = norms.ones_like()?;
    let shrink = norms.add_scalar(1e-7)?.reciprocal()?.mul_scalar(max_norm)?;
    let scale = kiln::where_cond(&norms.gt_scalar(max_norm)?, &shrink, &ones)?;
    let scale = kiln::where_cond(&used, &scale, &ones)?;
    weight.copy_(&weight.mul(&scale.unsqueeze(1)?)?)?;
    Ok(())
}

impl Forward for Embedding {
    /// `input`: integer indices of any shape; output `[*input.shape, embedding_dim]`.
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        if input.is_floating_point() || input.dtype() == DType::Bool {
            return Err(Error::op(
                "Embedding",
                format!(
                    "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got {} instead",
                    input.dtype()
                ),
            ));
        }
        let pad = self.padding_idx.map_or(-1, |p| p as i64);
        if let Some(max_norm) = self.max_norm {
            embedding_renorm_(&self.weight, input, max_norm, self.norm_type)?;
        }
        embedding_scaled(&self.weight, input, pad, self.scale_grad_by_freq)
    }
}

/// `embedding` with PyTorch's `scale_grad_by_freq`: each looked-up row's gradient is divided
/// by how often its index occurs in `indices`. The core op has no such flag, so the scaling
/// rides on a zero-valued term: `out + (s·out − detach(s·out))` is exactly `out`, and its
/// gradient is `s·grad`.
pub(crate) fn embedding_scaled(
    weight: &Tensor,
    indices: &Tensor,
    padding_idx: i64,
    scale_grad_by_freq: bool,
) -> Result<Tensor> {
    let out = kiln::embedding_with(weight, indices, padding_idx, false, false)?;
    if !scale_grad_by_freq || !out.requires_grad() {
        return Ok(out);
    }
    let flat = indices.reshape([-1])?;
    let n = weight.shape().first().copied().unwrap_or(0) as i64;
    let counts = kiln::one_hot_with(&flat, n)?.sum_dim(&[0])?;
    let scale = counts
        .to_dtype(out.dtype())?
        .reciprocal()?
        .index_select(0, &flat)?;
    let mut shape: Vec<i64> = indices.shape().iter().map(|&d| d as i64).collect();
    shape.push(1);
    let scaled = out.mul(&scale.reshape(&shape)?)?;
    out.detach().add(&scaled.sub(&scaled.detach())?)
}
