//! `Embedding`: a lookup table of `num_embeddings` vectors.

use crate::module::Forward;
use crate::Module;
use kiln_core::{no_grad, DType, Error, Result, Tensor};
use std::collections::HashMap;

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
                return Err(Error::value(
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
            return Err(Error::shape(
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

/// The ids of `indices` (int64 or int32, any shape, any device) on the host, flattened.
fn host_ids(op: &str, indices: &Tensor) -> Result<Vec<i64>> {
    if indices.dtype() != DType::I64 && indices.dtype() != DType::I32 {
        return Err(Error::dtype(
            op,
            format!(
                "Expected tensor for argument #2 'indices' to have one of the following scalar types: Long, Int; but got {} instead",
                indices.dtype().scalar_type_name()
            ),
        ));
    }
    indices.to_dtype(DType::I64)?.contiguous()?.to_vec::<i64>()
}

/// PyTorch's `embedding_renorm_(weight, indices, max_norm, norm_type)`: every row that
/// `indices` reads and whose norm exceeds `max_norm` is scaled by `max_norm / (norm + 1e-7)`,
/// in place and outside autograd. Only the distinct rows read are touched (no
/// `ids × num_embeddings` one-hot). PyTorch visits the ids sorted and `select`s each row, so
/// an id outside `[-n, n)` is its `select()` error; every id is checked before any row
/// changes. A negative id in `[-n, 0)` is left to the lookup, which rejects it ("index out of
/// range in self"), and nothing is renormalised (PyTorch's `select` would first wrap it and
/// rescale that row).
pub(crate) fn embedding_renorm_(
    weight: &Tensor,
    indices: &Tensor,
    max_norm: f64,
    norm_type: f64,
) -> Result<()> {
    const OP: &str = "embedding_renorm_";
    let _g = no_grad();
    if weight.dim() != 2 {
        return Err(Error::shape(OP, "'weight' must be 2-D"));
    }
    let (n, d) = (weight.shape()[0], weight.shape()[1]);
    let mut rows = host_ids(OP, indices)?;
    rows.sort_unstable();
    rows.dedup();
    let (Some(&lo), Some(&hi)) = (rows.first(), rows.last()) else {
        return Ok(());
    };
    let ni = n as i64;
    let bad = if lo < -ni {
        Some(lo)
    } else if hi >= ni {
        rows.iter().copied().find(|&i| i >= ni)
    } else {
        None
    };
    if let Some(bad) = bad {
        return Err(Error::index(
            OP,
            format!(
                "select(): index {bad} out of range for tensor of size [{n}, {d}] at dimension 0"
            ),
        ));
    }
    if lo < 0 {
        return Ok(());
    }
    let device = weight.device();
    let read = Tensor::from_vec(rows.clone(), &[rows.len()])?.to_device(device)?;
    let picked = weight.index_select(0, &read)?;
    let norms = kiln_core::linalg_vector_norm_with(&picked, norm_type, Some(&[1]), false, None)?
        .to_dtype(DType::F64)?
        .to_vec::<f64>()?;
    let (mut hit, mut scale) = (Vec::new(), Vec::new());
    for (k, &norm) in norms.iter().enumerate() {
        if norm > max_norm {
            hit.push(k as i64);
            scale.push(max_norm / (norm + 1e-7));
        }
    }
    if hit.is_empty() {
        return Ok(());
    }
    // `row *= scale` with a double scale: computed in the row's opmath type.
    let wdt = weight.dtype();
    let opmath = if wdt == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    let k = hit.len();
    let hit = Tensor::from_vec(hit, &[k])?.to_device(device)?;
    let scale = Tensor::from_vec(scale, &[k, 1])?
        .to_dtype(opmath)?
        .to_device(device)?;
    let rescaled = picked
        .index_select(0, &hit)?
        .to_dtype(opmath)?
        .mul(&scale)?
        .to_dtype(wdt)?;
    weight.index_put_(&[Some(&read.index_select(0, &hit)?)], &rescaled)?;
    Ok(())
}

impl Forward for Embedding {
    /// `input`: integer indices of any shape; output `[*input.shape, embedding_dim]`.
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        if input.is_floating_point() || input.dtype() == DType::Bool {
            return Err(Error::dtype(
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
/// by how often its index occurs in `indices`. The core op has no such flag, so a gradient
/// hook on the lookup multiplies each position's gradient by `1 / count(its id)` before it
/// is summed into the weight's rows (as PyTorch's `embedding_dense_backward` scales each
/// term); the forward value is the lookup itself. Counts are per distinct id (no
/// `ids × num_embeddings` one-hot).
pub(crate) fn embedding_scaled(
    weight: &Tensor,
    indices: &Tensor,
    padding_idx: i64,
    scale_grad_by_freq: bool,
) -> Result<Tensor> {
    let out = kiln_core::embedding_with(weight, indices, padding_idx, false, false)?;
    if !scale_grad_by_freq || !out.requires_grad() {
        return Ok(out);
    }
    let ids = host_ids("embedding", indices)?;
    let mut counts: HashMap<i64, u64> = HashMap::with_capacity(ids.len().min(1 << 20));
    for &i in &ids {
        *counts.entry(i).or_default() += 1;
    }
    let scale: Vec<f64> = ids.iter().map(|i| 1.0 / counts[i] as f64).collect();
    let mut shape: Vec<usize> = indices.shape().to_vec();
    shape.push(1);
    let scale = Tensor::from_vec(scale, &shape)?
        .to_dtype(out.dtype())?
        .to_device(out.device())?;
    out.register_hook(move |g| g.mul(&scale).ok())?;
    // The caller sees a view of the hooked tensor, so its own hooks get the unscaled
    // gradient, as in PyTorch.
    let dims: Vec<i64> = out.shape().iter().map(|&d| d as i64).collect();
    out.view(&dims)
}
