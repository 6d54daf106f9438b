//! Samples for embedding, embedding_bag, dropout and scaled dot-product attention.

use super::{err, index, make, mask, vals};
use crate::harness::{Arg, ErrorSample, Sample};
use kiln::{DType, ErrorKind, Tensor};

/// The first three samples are gradchecked, so they have no padding_idx (its row gets no
/// gradient by definition, which finite differences cannot see); tests/nn.rs checks that.
pub fn embedding(dtype: DType) -> Vec<Sample> {
    let w = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new(
            "[5,3] by [2,4]",
            vec![w(&[5, 3], 1), index(&[0, 4, 2, 2, 1, 0, 3, 4], &[2, 4])],
        ),
        Sample::new("[4,3] by 0-d", vec![w(&[4, 3], 3), Tensor::from(2i64)]),
        Sample::new(
            "[6,2] by [5]",
            vec![w(&[6, 2], 2), index(&[1, 3, 1, 5, 0], &[5])],
        ),
        Sample::new(
            "[6,2] by [5] padding_idx 1",
            vec![w(&[6, 2], 2), index(&[1, 3, 1, 5, 0], &[5])],
        )
        .arg("padding_idx", Arg::Int(1)),
        Sample::new(
            "[4,3] by [3] padding_idx -2",
            vec![w(&[4, 3], 3), index(&[2, 0, 2], &[3])],
        )
        .arg("padding_idx", Arg::Int(-2)),
        Sample::new("[4,3] by [0]", vec![w(&[4, 3], 4), index(&[], &[0])]).edge(),
    ]
}

pub fn embedding_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new(
            "index 5 of 5",
            vec![vals(&[5, 2], DType::F32, 140), index(&[5], &[1])],
        ),
        ErrorKind::Index,
        "index out of range in self",
    )]
}

/// Deterministic cases only (no mask drawn): p = 0, evaluation mode, p = 1. The random
/// mask is tested in tests/nn.rs against its expected statistics.
pub fn dropout(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[3,4] p 0 train", vec![x(&[3, 4], 1)])
            .arg("p", Arg::Float(0.0))
            .arg("train", Arg::Bool(true)),
        Sample::new("[2,3] p 0.5 eval", vec![x(&[2, 3], 2)])
            .arg("p", Arg::Float(0.5))
            .arg("train", Arg::Bool(false)),
        Sample::new("[4] p 1 train", vec![x(&[4], 3)])
            .arg("p", Arg::Float(1.0))
            .arg("train", Arg::Bool(true)),
        Sample::new("0-d p 0 train", vec![x(&[], 4)])
            .arg("p", Arg::Float(0.0))
            .arg("train", Arg::Bool(true))
            .edge(),
    ]
}

pub fn dropout_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("p 1.5", vec![vals(&[3], DType::F32, 141)])
            .arg("p", Arg::Float(1.5))
            .arg("train", Arg::Bool(true)),
        ErrorKind::Value,
        "dropout probability has to be between 0 and 1, but got 1.5",
    )]
}

pub fn sdpa(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new(
            "q [2,3,4] k [2,5,4] v [2,5,6]",
            vec![x(&[2, 3, 4], 1), x(&[2, 5, 4], 2), x(&[2, 5, 6], 3)],
        ),
        Sample::new(
            "[2,2,4,3] causal",
            vec![
                x(&[2, 2, 4, 3], 4),
                x(&[2, 2, 4, 3], 5),
                x(&[2, 2, 4, 3], 6),
            ],
        )
        .arg("is_causal", Arg::Bool(true)),
        Sample::new(
            "[3,4] float mask [3,5] scale 0.3",
            vec![x(&[3, 4], 7), x(&[5, 4], 8), x(&[5, 2], 9), x(&[3, 5], 10)],
        )
        .arg("scale", Arg::Float(0.3)),
        Sample::new(
            "[2,3,4] bool mask [3,5]",
            vec![
                x(&[2, 3, 4], 11),
                x(&[2, 5, 4], 12),
                x(&[2, 5, 3], 13),
                mask_rows(&[3, 5], 14),
            ],
        ),
        Sample::new(
            "gqa q [1,4,3,2] kv [1,2,3,2]",
            vec![
                x(&[1, 4, 3, 2], 15),
                x(&[1, 2, 3, 2], 16),
                x(&[1, 2, 3, 2], 17),
            ],
        )
        .arg("enable_gqa", Arg::Bool(true)),
        Sample::new(
            "[2,3,4] float mask [2,3,5] (a batch dim of its own)",
            vec![
                x(&[2, 3, 4], 28),
                x(&[2, 5, 4], 29),
                x(&[2, 5, 3], 30),
                x(&[2, 3, 5], 31),
            ],
        ),
        Sample::new(
            "[2,3,4] bool mask [3,5] with a fully masked row (zeros)",
            vec![
                x(&[2, 3, 4], 21),
                x(&[2, 5, 4], 22),
                x(&[2, 5, 3], 23),
                mask_rows(&[3, 5], 24).index_fill_row(1, false),
            ],
        ),
        Sample::new(
            "[2,2,70,8] causal, dropout 0 (the fused kernel on the CPU)",
            vec![
                x(&[2, 2, 70, 8], 25),
                x(&[2, 2, 70, 8], 26),
                x(&[2, 2, 70, 8], 27),
            ],
        )
        .arg("is_causal", Arg::Bool(true))
        .arg("dropout_p", Arg::Float(0.0)),
        Sample::new(
            "[0,3,4] empty batch",
            vec![x(&[0, 3, 4], 18), x(&[0, 2, 4], 19), x(&[0, 2, 4], 20)],
        )
        .edge(),
    ]
}

/// A bool mask with at least one `true` per row.
fn mask_rows(shape: &[usize], seed: u64) -> Tensor {
    let m = mask(shape, seed);
    let first = Tensor::zeros(shape, DType::Bool)
        .expect("zeros")
        .index_fill_first_col();
    m.logical_or(&first).expect("or")
}

trait FirstCol {
    fn index_fill_first_col(self) -> Tensor;
    fn index_fill_row(self, row: usize, v: bool) -> Tensor;
}

impl FirstCol for Tensor {
    /// `true` in column 0 of every row.
    fn index_fill_first_col(self) -> Tensor {
        let (r, c) = (self.shape()[0], self.shape()[1]);
        let v: Vec<bool> = (0..r * c).map(|i| i % c == 0).collect();
        Tensor::from_vec(v, &[r, c]).expect("shape")
    }

    /// Row `row` of a 2-D bool mask set to `v`.
    fn index_fill_row(self, row: usize, v: bool) -> Tensor {
        self.select(0, row as i64)
            .expect("row")
            .fill_(v)
            .expect("fill");
        self
    }
}

pub fn sdpa_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![err(
        Sample::new(
            "causal with mask",
            vec![
                vals(&[2, 3], f, 142),
                vals(&[2, 3], f, 143),
                vals(&[2, 3], f, 144),
                vals(&[2, 2], f, 145),
            ],
        )
        .arg("is_causal", Arg::Bool(true)),
        ErrorKind::Value,
        "Explicit attn_mask should not be set when is_causal=True",
    )]
}

/// embedding_bag(weight, indices, offsets, ..., per_sample_weights, ...): sums (weighted),
/// means and column maxima of bags, with padding, empty bags and `include_last_offset`. The
/// gradcheck samples come first; `scale_grad_by_freq` scales the gradient on purpose, so its
/// samples come later (tests/nn.rs checks that gradient).
pub fn embedding_bag(dtype: DType) -> Vec<Sample> {
    let w = |s: &[usize], seed| vals(s, dtype, seed);
    // Pairwise distinct, so a bag's column maximum is never tied.
    let wd = |s: &[usize], seed| super::distinct(s, dtype, seed);
    let i32s = |v: &[i32]| Tensor::from_vec(v.to_vec(), &[v.len()]).expect("index");
    let bag = |desc: &str, tensors: Vec<Tensor>, mode: i64| {
        Sample::new(desc, tensors).arg("mode", Arg::Int(mode))
    };
    vec![
        bag(
            "sum [5,3] bags [0,2,2,5] of 6, per-sample weights",
            vec![
                w(&[5, 3], 1),
                index(&[4, 0, 2, 2, 1, 0], &[6]),
                index(&[0, 2, 2, 5], &[4]),
                w(&[6], 2),
            ],
            0,
        ),
        bag(
            "mean [6,2] bags [0,3,4] of 7, padding_idx 1",
            vec![
                w(&[6, 2], 3),
                index(&[1, 3, 5, 1, 0, 2, 4], &[7]),
                index(&[0, 3, 4], &[3]),
            ],
            1,
        )
        .arg("padding_idx", Arg::OptInt(Some(1))),
        bag(
            "max [5,3] bags [0,2,5] of 6",
            vec![
                wd(&[5, 3], 4),
                index(&[0, 3, 1, 4, 2, 3], &[6]),
                index(&[0, 2, 5], &[3]),
            ],
            2,
        ),
        bag(
            "sum [4,3] include_last_offset [0,2,4,6]",
            vec![
                w(&[4, 3], 5),
                index(&[3, 0, 1, 1, 2, 0], &[6]),
                index(&[0, 2, 4, 6], &[4]),
            ],
            0,
        )
        .arg("include_last_offset", Arg::Bool(true)),
        bag(
            "mean [4,3] empty first bag, scale_grad_by_freq",
            vec![
                w(&[4, 3], 6),
                index(&[2, 2, 3], &[3]),
                index(&[0, 0, 1], &[3]),
            ],
            1,
        )
        .arg("scale_grad_by_freq", Arg::Bool(true)),
        bag(
            "sum [5,2] int32 indices and offsets, padding_idx -1",
            vec![w(&[5, 2], 7), i32s(&[4, 1, 4, 0]), i32s(&[0, 1])],
            0,
        )
        .arg("padding_idx", Arg::OptInt(Some(-1))),
        bag(
            "max [5,3] bag of padding only, padding_idx 2",
            vec![
                wd(&[5, 3], 8),
                index(&[2, 2, 0, 4, 1], &[5]),
                index(&[0, 2], &[2]),
            ],
            2,
        )
        .arg("padding_idx", Arg::OptInt(Some(2))),
        bag(
            "sum [3,2] per-sample weights, scale_grad_by_freq, one bag",
            vec![
                w(&[3, 2], 9),
                index(&[1, 1, 2], &[3]),
                index(&[0], &[1]),
                w(&[3], 10),
            ],
            0,
        )
        .arg("scale_grad_by_freq", Arg::Bool(true)),
        bag(
            "mean [3,2] no indices, one empty bag",
            vec![w(&[3, 2], 11), index(&[], &[0]), index(&[0], &[1])],
            1,
        )
        .edge(),
        bag(
            "max [3,2] no bags",
            vec![w(&[3, 2], 12), index(&[], &[0]), index(&[], &[0])],
            2,
        )
        .edge(),
    ]
}

pub fn embedding_bag_errors() -> Vec<ErrorSample> {
    let w = || vals(&[5, 2], DType::F32, 180);
    let bag = |desc: &str, idx: Tensor, offs: Tensor| Sample::new(desc, vec![w(), idx, offs]);
    vec![
        err(
            bag("index 5 of 5", index(&[0, 5], &[2]), index(&[0], &[1])),
            ErrorKind::Index, "embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be 5",
        ),
        err(
            bag("offsets[0] = 1", index(&[0, 1], &[2]), index(&[1], &[1])),
            ErrorKind::Value, "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from position 0. However, got 1",
        ),
        err(
            bag("offsets[-1] = 3 of 2", index(&[0, 1], &[2]), index(&[0, 3], &[2])),
            ErrorKind::Value, "offsets[-1] can not be greater than input's length 2 but got offsets[-1] of 3",
        ),
        err(
            bag("decreasing offsets", index(&[0, 1, 2], &[3]), index(&[0, 2, 1], &[3])),
            ErrorKind::Value, "offsets has to be non-decreasing, but offsets[2] = 1 is less than offsets[1] = 2",
        ),
        err(
            bag(
                "float indices",
                Tensor::from(vec![0.0f32, 1.0]),
                index(&[0], &[1]),
            ),
            ErrorKind::DType, "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got Float instead",
        ),
        err(
            bag("2-d indices", index(&[0, 1, 1, 0], &[2, 2]), index(&[0], &[1])),
            ErrorKind::Shape, "if input is 2D, then offsets has to be None",
        ),
        err(
            Sample::new(
                "1-d weight",
                vec![vals(&[5], DType::F32, 181), index(&[0], &[1]), index(&[0], &[1])],
            ),
            ErrorKind::Shape, "weight has to be a 2D Tensor, but got Tensor of dimension 1",
        ),
        err(
            Sample::new(
                "per-sample weights in mean mode",
                vec![
                    w(),
                    index(&[0, 1], &[2]),
                    index(&[0], &[1]),
                    vals(&[2], DType::F32, 185),
                ],
            )
            .arg("mode", Arg::Int(1)),
            ErrorKind::Value, "embedding_bag: per_sample_weights only supported with mode='sum'",
        ),
        err(
            bag("padding_idx 5 of 5", index(&[0, 1], &[2]), index(&[0], &[1]))
                .arg("padding_idx", Arg::OptInt(Some(5))),
            ErrorKind::Value, "padding_idx must be within the number of embeddings, -5 through 4, but got 5",
        ),
        err(
            bag("mode 3", index(&[0, 1], &[2]), index(&[0], &[1])).arg("mode", Arg::Int(3)),
            ErrorKind::Value, "mode has to be one of sum (0), mean (1) or max (2), but got 3",
        ),
        err(
            bag("sparse", index(&[0, 1], &[2]), index(&[0], &[1])).arg("sparse", Arg::Bool(true)),
            ErrorKind::NotImplemented, "sparse gradients are not supported by kiln",
        ),
        err(
            bag("include_last_offset without offsets", index(&[], &[0]), index(&[], &[0]))
                .arg("include_last_offset", Arg::Bool(true)),
            ErrorKind::Value, "include_last_offset: number of offset should be at least 1",
        ),
    ]
}

/// embedding_bag_functional(input, weight, offsets, ..., mode, ...): F.embedding_bag, with
/// 2-D inputs (a bag per row) and string modes; default mode "mean".
pub fn embedding_bag_functional(dtype: DType) -> Vec<Sample> {
    let w = |s: &[usize], seed| vals(s, dtype, seed);
    let wd = |s: &[usize], seed| super::distinct(s, dtype, seed);
    vec![
        Sample::new(
            "[2,3] input, mean",
            vec![index(&[0, 4, 2, 3, 3, 1], &[2, 3]), w(&[5, 3], 1)],
        ),
        Sample::new(
            "1-d input, offsets, sum with per-sample weights",
            vec![
                index(&[1, 0, 3, 2], &[4]),
                w(&[4, 2], 2),
                index(&[0, 1], &[2]),
                w(&[4], 3),
            ],
        )
        .arg("mode", Arg::Str("sum")),
        Sample::new(
            "[3,2] input, max",
            vec![index(&[0, 1, 2, 3, 4, 0], &[3, 2]), wd(&[5, 3], 4)],
        )
        .arg("mode", Arg::Str("max")),
        Sample::new(
            "[2,3] input, sum, padding_idx 0",
            vec![index(&[0, 1, 2, 0, 0, 0], &[2, 3]), w(&[3, 2], 5)],
        )
        .arg("mode", Arg::Str("sum"))
        .arg("padding_idx", Arg::OptInt(Some(0))),
        Sample::new(
            "[2,0] input: two empty bags",
            vec![index(&[], &[2, 0]), w(&[3, 2], 6)],
        )
        .edge(),
    ]
}

pub fn embedding_bag_functional_errors() -> Vec<ErrorSample> {
    let w = || vals(&[5, 2], DType::F32, 182);
    vec![
        err(
            Sample::new(
                "2-d input with offsets",
                vec![index(&[0, 1, 1, 0], &[2, 2]), w(), index(&[0], &[1])],
            ),
            ErrorKind::Shape, "if input is 2D, then offsets has to be None, as input is treated is a mini-batch of fixed length sequences. However, found offsets of type Tensor",
        ),
        err(
            Sample::new("1-d input without offsets", vec![index(&[0, 1], &[2]), w()]),
            ErrorKind::Value, "offsets has to be a 1D Tensor but got None",
        ),
        err(
            Sample::new("3-d input", vec![index(&[0; 8], &[2, 2, 2]), w()]),
            ErrorKind::Shape, "input has to be 1D or 2D Tensor, but got Tensor of dimension 3",
        ),
        err(
            Sample::new("mode min", vec![index(&[0, 1, 1, 0], &[2, 2]), w()])
                .arg("mode", Arg::Str("min")),
            ErrorKind::Value, "mode has to be one of sum, mean or max",
        ),
        err(
            Sample::new("max with scale_grad_by_freq", vec![index(&[0, 1, 1, 0], &[2, 2]), w()])
                .arg("mode", Arg::Str("max"))
                .arg("scale_grad_by_freq", Arg::Bool(true)),
            ErrorKind::Value, "max mode does not support scaling the gradient by the frequency",
        ),
        err(
            Sample::new(
                "per-sample weights of another shape",
                vec![
                    index(&[0, 1], &[2]),
                    w(),
                    index(&[0], &[1]),
                    vals(&[3], DType::F32, 183),
                ],
            )
            .arg("mode", Arg::Str("sum")),
            ErrorKind::Shape, "embedding_bag: If per_sample_weights ([3]) is not None, then it must have the same shape as the input ([2])",
        ),
        err(
            Sample::new(
                "per-sample weights in mean mode",
                vec![
                    index(&[0, 1], &[2]),
                    w(),
                    index(&[0], &[1]),
                    vals(&[2], DType::F32, 184),
                ],
            ),
            ErrorKind::Value, "per_sample_weights is only supported for mode='sum' (got mode='mean')",
        ),
    ]
}

/// The fused attention kernel on `[B, H, L, E]` operands. The first three are gradchecked:
/// more query rows than one 64-row block (causal), and more keys than one 256-column block
/// (the online softmax rescales across blocks).
pub fn flash_attention(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let o = DType::F64;
    vec![
        Sample::new(
            "q [2,3,5,4] k [2,3,6,4] v [2,3,6,3]",
            vec![
                x(&[2, 3, 5, 4], 1),
                x(&[2, 3, 6, 4], 2),
                x(&[2, 3, 6, 3], 3),
            ],
        ),
        Sample::new(
            "[1,2,70,8] causal (two query blocks)",
            vec![
                x(&[1, 2, 70, 8], 4),
                x(&[1, 2, 70, 8], 5),
                x(&[1, 2, 70, 8], 6),
            ],
        )
        .arg("is_causal", Arg::Bool(true)),
        Sample::new(
            "q [2,1,3,4] kv [2,1,300,4] (two key blocks)",
            vec![
                x(&[2, 1, 3, 4], 7),
                x(&[2, 1, 300, 4], 8),
                x(&[2, 1, 300, 2], 9),
            ],
        ),
        Sample::new(
            "float mask [3,5] broadcast, scale 0.3",
            vec![
                x(&[2, 2, 3, 4], 10),
                x(&[2, 2, 5, 4], 11),
                x(&[2, 2, 5, 2], 12),
                make(&[3, 5], o, -1.0, 1.0, 13),
            ],
        )
        .arg("scale", Arg::Float(0.3)),
        Sample::new(
            "mask [2,1,3,5] with a fully masked row (zeros, logsumexp -inf)",
            vec![
                x(&[2, 2, 3, 4], 14),
                x(&[2, 2, 5, 4], 15),
                x(&[2, 2, 5, 3], 16),
                dead_row_mask(&[2, 1, 3, 5], 17),
            ],
        ),
        Sample::new(
            "transposed query [1,4,3,2] from [1,3,4,2]",
            vec![
                x(&[1, 3, 4, 2], 18).transpose(1, 2).expect("transpose"),
                x(&[1, 4, 6, 2], 19),
                x(&[1, 4, 6, 5], 20),
            ],
        ),
        Sample::new(
            "no keys [1,1,2,3] k [1,1,0,3]",
            vec![
                x(&[1, 1, 2, 3], 21),
                x(&[1, 1, 0, 3], 22),
                x(&[1, 1, 0, 3], 23),
            ],
        )
        .edge(),
        Sample::new(
            "no queries [1,2,0,3]",
            vec![
                x(&[1, 2, 0, 3], 24),
                x(&[1, 2, 4, 3], 25),
                x(&[1, 2, 4, 3], 26),
            ],
        )
        .edge(),
    ]
}

/// An additive float64 mask in [-1, 1) whose row 1 is `-inf` throughout.
fn dead_row_mask(shape: &[usize], seed: u64) -> Tensor {
    let m = make(shape, DType::F64, -1.0, 1.0, seed);
    let n = shape.len();
    let row = m.select(n as i64 - 2, 1).expect("select");
    row.fill_(f64::NEG_INFINITY).expect("fill");
    m
}

pub fn flash_attention_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    let v = |s: &[usize], seed| vals(s, f, seed);
    vec![
        err(
            Sample::new(
                "dropout",
                vec![
                    v(&[1, 1, 2, 3], 150),
                    v(&[1, 1, 2, 3], 151),
                    v(&[1, 1, 2, 3], 152),
                ],
            )
            .arg("dropout_p", Arg::Float(0.1)),
            ErrorKind::Value,
            "dropout_p must be 0",
        ),
        err(
            Sample::new(
                "3-D query",
                vec![
                    v(&[1, 2, 3], 153),
                    v(&[1, 1, 2, 3], 154),
                    v(&[1, 1, 2, 3], 155),
                ],
            ),
            ErrorKind::Shape,
            "expected query, key and value to be 4-D",
        ),
        err(
            Sample::new(
                "key and value lengths differ",
                vec![
                    v(&[1, 1, 2, 3], 156),
                    v(&[1, 1, 4, 3], 157),
                    v(&[1, 1, 5, 3], 158),
                ],
            ),
            ErrorKind::Shape,
            "expected key and value to have the same sequence length",
        ),
        err(
            Sample::new(
                "mask does not broadcast",
                vec![
                    v(&[1, 1, 2, 3], 159),
                    v(&[1, 1, 4, 3], 160),
                    v(&[1, 1, 4, 3], 161),
                    v(&[3, 4], 162),
                ],
            ),
            ErrorKind::Shape,
            "does not broadcast to the attention scores' shape [1, 1, 2, 4]",
        ),
        err(
            Sample::new(
                "mixed dtypes",
                vec![
                    v(&[1, 1, 2, 3], 163),
                    vals(&[1, 1, 2, 3], DType::F64, 164),
                    v(&[1, 1, 2, 3], 165),
                ],
            ),
            ErrorKind::DType,
            "Expected query, key, and value to have the same dtype",
        ),
    ]
}

/// The backward kernel: `(grad_out, query, key, value, out, logsumexp[, mask])`, the
/// logsumexp computed from the scores with tensor ops, `out` any values (the kernel takes
/// `Σ dO · O` as given).
pub fn flash_attention_backward(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let case = |desc: &str,
                q: [usize; 4],
                sl: usize,
                ev: usize,
                seed: u64,
                mask: Option<Tensor>,
                causal: bool,
                scale: Option<f64>| {
        let [b, h, l, e] = q;
        let (qt, kt, vt) = (
            x(&q, seed),
            x(&[b, h, sl, e], seed + 1),
            x(&[b, h, sl, ev], seed + 2),
        );
        let lse = lse_of(&qt, &kt, mask.as_ref(), causal, scale)
            .to_dtype(dtype)
            .expect("cast");
        let mut tensors = vec![
            x(&[b, h, l, ev], seed + 3),
            qt,
            kt,
            vt,
            x(&[b, h, l, ev], seed + 4),
            lse,
        ];
        tensors.extend(mask);
        let mut s = Sample::new(desc, tensors)
            .arg("dropout_p", Arg::Float(0.0))
            .arg("is_causal", Arg::Bool(causal));
        if let Some(sc) = scale {
            s = s.arg("scale", Arg::Float(sc));
        }
        s
    };
    vec![
        case(
            "[2,3,5,4] k [2,3,6,4] v [2,3,6,3]",
            [2, 3, 5, 4],
            6,
            3,
            1,
            None,
            false,
            None,
        ),
        case(
            "[1,2,70,8] causal (two query blocks)",
            [1, 2, 70, 8],
            70,
            8,
            10,
            None,
            true,
            None,
        ),
        case(
            "q [2,1,3,4] kv 300 (two key blocks)",
            [2, 1, 3, 4],
            300,
            2,
            20,
            None,
            false,
            None,
        ),
        case(
            "float mask [3,5], scale 0.3",
            [2, 2, 3, 4],
            5,
            2,
            30,
            Some(make(&[3, 5], DType::F64, -1.0, 1.0, 35)),
            false,
            Some(0.3),
        ),
        case(
            "mask with a fully masked row",
            [2, 2, 3, 4],
            5,
            3,
            40,
            Some(dead_row_mask(&[2, 1, 3, 5], 45)),
            false,
            None,
        ),
        case(
            "no queries [1,2,0,3]",
            [1, 2, 0, 3],
            4,
            3,
            50,
            None,
            false,
            None,
        )
        .edge(),
        case(
            "no keys [1,1,2,3] k [1,1,0,3]",
            [1, 1, 2, 3],
            0,
            3,
            60,
            None,
            false,
            None,
        )
        .edge(),
    ]
}

/// `logsumexp` over the keys of `q kᵀ · scale + mask` (causal: top-left), in float64.
fn lse_of(
    q: &Tensor,
    k: &Tensor,
    mask: Option<&Tensor>,
    causal: bool,
    scale: Option<f64>,
) -> Tensor {
    let f = |t: &Tensor| t.to_dtype(DType::F64).expect("f64");
    let e = q.shape()[3];
    let sc = scale.unwrap_or(1.0 / (e as f64).sqrt());
    let mut s = f(q)
        .matmul(&f(k).transpose(-2, -1).expect("t"))
        .expect("mm")
        .mul_scalar(sc)
        .expect("scale");
    if let Some(m) = mask {
        s = s.add(m).expect("mask");
    }
    if causal {
        let (l, sl) = (q.shape()[2], k.shape()[2]);
        let drop = Tensor::ones([l, sl], DType::Bool)
            .and_then(|t| t.tril())
            .and_then(|t| t.logical_not())
            .expect("causal");
        s = s.masked_fill(&drop, f64::NEG_INFINITY).expect("fill");
    }
    s.logsumexp(&[-1]).expect("logsumexp")
}

pub fn flash_attention_backward_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    let v = |s: &[usize], seed| vals(s, f, seed);
    vec![err(
        Sample::new(
            "logsumexp of the wrong shape",
            vec![
                v(&[1, 1, 2, 3], 170),
                v(&[1, 1, 2, 3], 171),
                v(&[1, 1, 4, 3], 172),
                v(&[1, 1, 4, 3], 173),
                v(&[1, 1, 2, 3], 174),
                v(&[1, 1, 3], 175),
            ],
        )
        .arg("dropout_p", Arg::Float(0.0))
        .arg("is_causal", Arg::Bool(false)),
        ErrorKind::Shape,
        "expected logsumexp of shape [1, 1, 2]",
    )]
}
