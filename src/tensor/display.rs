//! `Display` and `Debug` for tensors, in PyTorch's `repr(tensor)` format.
//!
//! This follows `torch/_tensor_str.py` with the default print options, so that output can be
//! compared with PyTorch's character for character:
//!
//! ```text
//! tensor([[1., 2.],
//!         [3., 4.]], dtype=torch.float64, requires_grad=True)
//! ```
//!
//! The work is split as in PyTorch: [`ElementFormatter`] looks at the elements that will be
//! shown and decides once how every element is written and how wide it is padded; [`Printer`]
//! then walks the dimensions recursively, writing brackets, separators and summarisation gaps;
//! finally the suffixes (`dtype=`, `grad_fn=`, ...) are appended.

use super::{DType, Device, Tensor};
use std::fmt;

/// PyTorch's default `precision`: digits after the point for fixed and scientific floats.
const PRECISION: usize = 4;
/// PyTorch's default `threshold`: a tensor with more elements than this is summarised.
const THRESHOLD: usize = 1000;
/// PyTorch's default `edgeitems`: entries kept at each end of a summarised dimension.
const EDGE_ITEMS: usize = 3;
/// PyTorch's default `linewidth`: vectors and suffixes wrap to stay within this many columns.
const LINE_WIDTH: usize = 80;
/// What precedes the contents; continuation lines are indented by its length.
const PREFIX: &str = "tensor(";

impl fmt::Display for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // PyTorch prints `[]` for every empty tensor and tells the shape in a suffix instead.
        let body = if self.numel() == 0 {
            "[]".to_string()
        } else {
            let values = Values::read(self)?;
            let summarize = self.numel() > THRESHOLD;
            Printer::new(&values, self.shape(), summarize).body()
        };
        f.write_str(&add_suffixes(format!("{PREFIX}{body}"), &suffixes(self)))
    }
}

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A tensor's elements in row-major order, read once in the widest Rust type of their kind so
/// that formatting never goes back to the storage and no integer loses precision.
enum Values {
    Bool(Vec<bool>),
    Int(Vec<i64>),
    Float(Vec<f64>),
}

impl Values {
    /// Reads every element of `t`; fails (as a formatting error) when they cannot be read,
    /// e.g. for a tensor on a device this build cannot access.
    fn read(t: &Tensor) -> Result<Values, fmt::Error> {
        let values = match t.dtype() {
            DType::Bool => t.to_vec().map(Values::Bool),
            // f16 and bf16 widen to f64 exactly, as PyTorch widens them to float before printing.
            d if d.is_floating_point() => t.to_vec().map(Values::Float),
            _ => t.to_vec().map(Values::Int),
        };
        values.map_err(|_| fmt::Error)
    }
}

/// How the floats of one tensor are written (the modes of PyTorch's `_Formatter`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FloatStyle {
    /// Every finite value is an integer: `1.`, `-3.` (the point still says "floating").
    Integer,
    /// Fixed point with [`PRECISION`] decimals: `1.5000`.
    Fixed,
    /// Scientific with [`PRECISION`] decimals and a two-digit signed exponent: `1.0000e+05`.
    Scientific,
}

/// Decides once, from the elements that will be shown, how each element is written and the
/// common width they are right-aligned to (PyTorch's `_Formatter`).
struct ElementFormatter {
    /// Only consulted for floating tensors; integers and bools are written as they are.
    float_style: FloatStyle,
    /// Every element is left-padded to this many characters.
    width: usize,
}

impl ElementFormatter {
    /// Chooses the style and width from the elements of `values` at `shown` (flat indices).
    ///
    /// Only the shown elements count, as PyTorch formats a summarised tensor from its
    /// summarised data: a huge value hidden behind `...` does not widen the columns.
    fn new(values: &Values, shown: &[usize]) -> ElementFormatter {
        let floats = match values {
            Values::Float(v) => v,
            // Integers and bools keep their own text; only the width needs deciding.
            _ => {
                let mut this = ElementFormatter {
                    float_style: FloatStyle::Integer,
                    width: 1,
                };
                this.width = shown
                    .iter()
                    .map(|&i| this.raw(values, i).len())
                    .fold(1, usize::max);
                return this;
            }
        };
        // Zeros and non-finite values print the same in every style, so they take no part in
        // choosing it (nor in the width: `nan` may stick out, as in PyTorch).
        let nonzero_finite: Vec<f64> = shown
            .iter()
            .map(|&i| floats[i])
            .filter(|v| v.is_finite() && *v != 0.0)
            .collect();
        if nonzero_finite.is_empty() {
            return ElementFormatter {
                float_style: FloatStyle::Integer,
                width: 1,
            };
        }
        let abs = nonzero_finite.iter().map(|v| v.abs());
        let max = abs.clone().fold(f64::MIN, f64::max);
        let min = abs.fold(f64::MAX, f64::min);
        let all_integers = nonzero_finite.iter().all(|v| *v == v.ceil());
        // A wide dynamic range would print as many digits in fixed point, so PyTorch switches
        // to scientific; tiny values would round to zero in fixed point.
        let wide_range = max / min > 1000.0 || max > 1.0e8;
        let float_style = if wide_range || (!all_integers && min < 1.0e-4) {
            FloatStyle::Scientific
        } else if all_integers {
            FloatStyle::Integer
        } else {
            FloatStyle::Fixed
        };
        let width = nonzero_finite
            .iter()
            .map(|&v| float_text(v, float_style).len())
            .fold(1, usize::max);
        ElementFormatter { float_style, width }
    }

    /// Element `i` of `values`, without padding.
    fn raw(&self, values: &Values, i: usize) -> String {
        match values {
            // PyTorch shows Python's `True`/`False`.
            Values::Bool(v) => if v[i] { "True" } else { "False" }.to_string(),
            Values::Int(v) => v[i].to_string(),
            Values::Float(v) => float_text(v[i], self.float_style),
        }
    }

    /// Element `i` of `values`, right-aligned to the common width.
    fn format(&self, values: &Values, i: usize) -> String {
        format!("{:>width$}", self.raw(values, i), width = self.width)
    }
}

/// `v` written in `style`, with Python's spelling of the special values and exponents.
fn float_text(v: f64, style: FloatStyle) -> String {
    // Rust writes `NaN`; Python writes `nan` and drops the sign of a negative NaN.
    if v.is_nan() {
        return "nan".to_string();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    match style {
        // Rust keeps the sign of negative zero like Python does: `-0.`.
        FloatStyle::Integer => format!("{v:.0}."),
        FloatStyle::Fixed => format!("{v:.PRECISION$}"),
        FloatStyle::Scientific => {
            // Rust writes `1.0000e5`; Python writes `1.0000e+05`.
            let text = format!("{v:.PRECISION$e}");
            match text.split_once('e') {
                Some((mantissa, exponent)) => {
                    let (sign, digits) = match exponent.strip_prefix('-') {
                        Some(digits) => ('-', digits),
                        None => ('+', exponent),
                    };
                    format!("{mantissa}e{sign}{digits:0>2}")
                }
                None => text,
            }
        }
    }
}

/// The indices of a dimension of `size` that are printed: all of them, or when summarising a
/// long dimension the first and last [`EDGE_ITEMS`], with `None` marking the `...` between.
fn shown_indices(size: usize, summarize: bool) -> Vec<Option<usize>> {
    if summarize && size > 2 * EDGE_ITEMS {
        (0..EDGE_ITEMS)
            .map(Some)
            .chain([None])
            .chain((size - EDGE_ITEMS..size).map(Some))
            .collect()
    } else {
        (0..size).map(Some).collect()
    }
}

/// Writes the nested-bracket contents of a non-empty tensor (PyTorch's
/// `_tensor_str_with_formatter`).
struct Printer<'a> {
    values: &'a Values,
    shape: &'a [usize],
    /// Row-major strides of `shape`: where each sub-tensor starts in `values`.
    strides: Vec<usize>,
    summarize: bool,
    element: ElementFormatter,
}

impl<'a> Printer<'a> {
    /// A printer for `values` laid out row-major with `shape`.
    fn new(values: &'a Values, shape: &'a [usize], summarize: bool) -> Printer<'a> {
        let mut strides = vec![1; shape.len()];
        for d in (0..shape.len().saturating_sub(1)).rev() {
            strides[d] = strides[d + 1] * shape[d + 1];
        }
        // Every element that will appear: the product of the shown indices of each dimension.
        let mut shown = vec![0];
        for (&size, &stride) in shape.iter().zip(&strides) {
            let indices: Vec<usize> = shown_indices(size, summarize)
                .into_iter()
                .flatten()
                .collect();
            shown = shown
                .iter()
                .flat_map(|&base| indices.iter().map(move |&i| base + i * stride))
                .collect();
        }
        let element = ElementFormatter::new(values, &shown);
        Printer {
            values,
            shape,
            strides,
            summarize,
            element,
        }
    }

    /// The whole contents, indented to sit after [`PREFIX`].
    fn body(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, 0, 0, PREFIX.len());
        out
    }

    /// Writes the sub-tensor made of dimensions `dim..` starting at flat index `offset`;
    /// `indent` is the column of its opening bracket, so its rows align one column further.
    fn write(&self, out: &mut String, dim: usize, offset: usize, indent: usize) {
        let remaining = self.shape.len() - dim;
        if remaining == 0 {
            out.push_str(&self.element.format(self.values, offset));
            return;
        }
        let stride = self.strides[dim];
        let indices = shown_indices(self.shape[dim], self.summarize);
        if remaining == 1 {
            self.write_vector(out, &indices, offset, indent);
            return;
        }
        // One line break between rows of a matrix, one more per extra dimension, which gives
        // the blank lines between the blocks of a 3-d tensor.
        let separator = format!(",{}{}", "\n".repeat(remaining - 1), " ".repeat(indent + 1));
        out.push('[');
        for (k, index) in indices.iter().enumerate() {
            if k > 0 {
                out.push_str(&separator);
            }
            match index {
                Some(i) => self.write(out, dim + 1, offset + i * stride, indent + 1),
                None => out.push_str("..."),
            }
        }
        out.push(']');
    }

    /// Writes the last dimension, wrapping so that lines stay within [`LINE_WIDTH`].
    fn write_vector(
        &self,
        out: &mut String,
        indices: &[Option<usize>],
        offset: usize,
        indent: usize,
    ) {
        let cells: Vec<String> = indices
            .iter()
            .map(|index| match index {
                Some(i) => self.element.format(self.values, offset + i),
                // PyTorch's gap entry carries a leading space and no padding: `2,  ..., 7`.
                None => " ...".to_string(),
            })
            .collect();
        // Each cell takes its width plus the ", " after it; at least one cell per line.
        let per_line = (LINE_WIDTH.saturating_sub(indent) / (self.element.width + 2)).max(1);
        let lines: Vec<String> = cells.chunks(per_line).map(|line| line.join(", ")).collect();
        out.push('[');
        out.push_str(&lines.join(&format!(",\n{}", " ".repeat(indent + 1))));
        out.push(']');
    }
}

/// The `key=value` annotations PyTorch appends after the contents, in its order.
fn suffixes(t: &Tensor) -> Vec<String> {
    let mut suffixes = Vec::new();
    if t.device() != Device::Cpu {
        suffixes.push(format!("device='{}'", t.device()));
    }
    let dtype = t.dtype();
    if t.numel() == 0 {
        // `[]` alone reads as shape (0,); any other empty shape is spelled out.
        if t.dim() != 1 {
            suffixes.push(format!("size={}", python_tuple(t.shape())));
        }
        // With no elements to show, only float32 (the default dtype) goes without saying.
        if dtype != DType::F32 {
            suffixes.push(format!("dtype={}", dtype.torch_name()));
        }
    } else if !matches!(dtype, DType::F32 | DType::I64 | DType::Bool) {
        // float32, int64 and bool are what PyTorch infers from Python data, so they are implied.
        suffixes.push(format!("dtype={}", dtype.torch_name()));
    }
    if let Some(node) = t.grad_fn() {
        suffixes.push(format!("grad_fn=<{}>", node.name()));
    } else if t.requires_grad() {
        suffixes.push("requires_grad=True".to_string());
    }
    suffixes
}

/// `shape` as Python writes a tuple: `(0, 3)`, `(0,)`, `()`.
fn python_tuple(shape: &[usize]) -> String {
    match shape {
        [single] => format!("({single},)"),
        _ => {
            let items: Vec<String> = shape.iter().map(usize::to_string).collect();
            format!("({})", items.join(", "))
        }
    }
}

/// Appends `suffixes` and the closing parenthesis to `text`, moving a suffix to its own
/// line when it would pass [`LINE_WIDTH`] (PyTorch's `_add_suffixes`).
fn add_suffixes(mut text: String, suffixes: &[String]) -> String {
    // PyTorch measures the last line as `len - rfind("\n") + 1`, two more than its length
    // (and `len + 2` with no newline, as `rfind` gives -1); copied so lines wrap at the same place.
    let mut last_line_len = match text.rfind('\n') {
        Some(newline) => text.len() - newline + 1,
        None => text.len() + 2,
    };
    for suffix in suffixes {
        if last_line_len + suffix.len() + 2 > LINE_WIDTH {
            text.push_str(",\n");
            text.push_str(&" ".repeat(PREFIX.len()));
            last_line_len = PREFIX.len() + suffix.len();
        } else {
            text.push_str(", ");
            last_line_len += suffix.len() + 2;
        }
        text.push_str(suffix);
    }
    text.push(')');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autograd::{Node, NodeBase};
    use crate::Result;
    use std::sync::Arc;

    fn show(t: &Tensor) -> String {
        format!("{t}")
    }

    #[test]
    fn matrix_rows_align_under_first_element() {
        let x = Tensor::from([[1f32, 2.], [3., 4.]]);
        assert_eq!(show(&x), "tensor([[1., 2.],\n        [3., 4.]])");
    }

    #[test]
    fn debug_is_display() {
        let x = Tensor::from([[1f32, 2.], [3., 4.]]);
        assert_eq!(format!("{x:?}"), show(&x));
    }

    #[test]
    fn three_dims_leave_blank_lines_between_blocks() -> Result<()> {
        let x = Tensor::from_vec((0..8i64).collect(), &[2, 2, 2])?;
        assert_eq!(
            show(&x),
            "tensor([[[0, 1],\n         [2, 3]],\n\n        [[4, 5],\n         [6, 7]]])"
        );
        // Each further dimension adds another blank line between its blocks.
        let y = Tensor::from_vec((0..2i64).collect(), &[2, 1, 1, 1])?;
        assert_eq!(show(&y), "tensor([[[[0]]],\n\n\n        [[[1]]]])");
        Ok(())
    }

    #[test]
    fn zero_dim() {
        assert_eq!(show(&Tensor::from(3f32)), "tensor(3.)");
        assert_eq!(show(&Tensor::from(2.5f32)), "tensor(2.5000)");
        assert_eq!(show(&Tensor::from(3i64)), "tensor(3)");
        assert_eq!(show(&Tensor::from(true)), "tensor(True)");
        assert_eq!(show(&Tensor::from(-0f32)), "tensor(-0.)");
        assert_eq!(show(&Tensor::from(3f64)), "tensor(3., dtype=torch.float64)");
    }

    #[test]
    fn empty_tensors_print_brackets_and_shape() -> Result<()> {
        assert_eq!(
            show(&Tensor::from_vec(Vec::<f32>::new(), &[0])?),
            "tensor([])"
        );
        assert_eq!(
            show(&Tensor::from_vec(Vec::<f32>::new(), &[0, 3])?),
            "tensor([], size=(0, 3))"
        );
        assert_eq!(
            show(&Tensor::from_vec(Vec::<i64>::new(), &[0])?),
            "tensor([], dtype=torch.int64)"
        );
        assert_eq!(
            show(&Tensor::from_vec(Vec::<f64>::new(), &[2, 0])?),
            "tensor([], size=(2, 0), dtype=torch.float64)"
        );
        Ok(())
    }

    #[test]
    fn float_styles() {
        assert_eq!(
            show(&Tensor::from([1.5f32, 2.25])),
            "tensor([1.5000, 2.2500])"
        );
        assert_eq!(
            show(&Tensor::from([1.23456f32, 2.])),
            "tensor([1.2346, 2.0000])"
        );
        // A value below 1e-4 forces scientific notation.
        assert_eq!(
            show(&Tensor::from([1e-5f32, 1.])),
            "tensor([1.0000e-05, 1.0000e+00])"
        );
        // A ratio over 1000 does too, even when every value is an integer.
        assert_eq!(
            show(&Tensor::from([1f32, 100000.])),
            "tensor([1.0000e+00, 1.0000e+05])"
        );
        assert_eq!(
            show(&Tensor::from([1.5f32, 2000.])),
            "tensor([1.5000e+00, 2.0000e+03])"
        );
        // So does a maximum over 1e8.
        assert_eq!(
            show(&Tensor::from([1e9f32, 2e9])),
            "tensor([1.0000e+09, 2.0000e+09])"
        );
        assert_eq!(
            show(&Tensor::from([0f32, -1e-5])),
            "tensor([ 0.0000e+00, -1.0000e-05])"
        );
        // Zeros alone take no part: integer style.
        assert_eq!(show(&Tensor::from([0f32, 0.])), "tensor([0., 0.])");
    }

    #[test]
    fn floats_right_align_to_common_width() {
        assert_eq!(
            show(&Tensor::from([1f32, -10., 100.])),
            "tensor([  1., -10., 100.])"
        );
        assert_eq!(
            show(&Tensor::from([1.5f32, -10.25])),
            "tensor([  1.5000, -10.2500])"
        );
    }

    #[test]
    fn special_floats() {
        let x = Tensor::from([f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1.]);
        assert_eq!(show(&x), "tensor([nan, inf, -inf, 1.])");
        assert_eq!(
            show(&Tensor::from([1.5f32, f32::NAN])),
            "tensor([1.5000,    nan])"
        );
        assert_eq!(show(&Tensor::from([f32::NAN])), "tensor([nan])");
        assert_eq!(show(&Tensor::from([-0f32, 1.])), "tensor([-0., 1.])");
        // Zeros do not count towards the width, so `-0.0000` sticks out like `nan` does.
        assert_eq!(
            show(&Tensor::from([-0f32, 1.5])),
            "tensor([-0.0000, 1.5000])"
        );
    }

    #[test]
    fn integers_and_bools() {
        assert_eq!(
            show(&Tensor::from([1i64, -10, 100])),
            "tensor([  1, -10, 100])"
        );
        assert_eq!(show(&Tensor::from([true, false])), "tensor([ True, False])");
        assert_eq!(
            show(&Tensor::from([1i32, 2])),
            "tensor([1, 2], dtype=torch.int32)"
        );
        assert_eq!(
            show(&Tensor::from([255u8, 0])),
            "tensor([255,   0], dtype=torch.uint8)"
        );
        assert_eq!(
            show(&Tensor::from([i64::MAX, i64::MIN])),
            "tensor([ 9223372036854775807, -9223372036854775808])"
        );
    }

    #[test]
    fn dtype_suffixes() -> Result<()> {
        assert_eq!(
            show(&Tensor::from([1f64, 2.])),
            "tensor([1., 2.], dtype=torch.float64)"
        );
        assert_eq!(
            show(&Tensor::full([2], 1.5, DType::F16)?),
            "tensor([1.5000, 1.5000], dtype=torch.float16)"
        );
        assert_eq!(
            show(&Tensor::full([2], 1, DType::BF16)?),
            "tensor([1., 1.], dtype=torch.bfloat16)"
        );
        Ok(())
    }

    #[test]
    fn long_vectors_wrap_at_line_width() -> Result<()> {
        let x = Tensor::arange(0, 20, 1, DType::F32)?;
        assert_eq!(
            show(&x),
            "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n        \
             14., 15., 16., 17., 18., 19.])"
        );
        // A suffix that would pass the line width goes on its own line.
        let y = Tensor::arange(0, 14, 1, DType::F64)?;
        assert_eq!(
            show(&y),
            "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.],\n       \
             dtype=torch.float64)"
        );
        Ok(())
    }

    #[test]
    fn summarises_above_threshold() -> Result<()> {
        assert_eq!(
            show(&Tensor::arange(0, 2000, 1, DType::I64)?),
            "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"
        );
        let small = Tensor::from_vec(
            (0..1001i64)
                .map(|i| if (3..=997).contains(&i) { 0 } else { i % 10 })
                .collect(),
            &[1001],
        )?;
        assert_eq!(show(&small), "tensor([0, 1, 2,  ..., 8, 9, 0])");
        // Exactly at the threshold nothing is hidden.
        assert!(!show(&Tensor::arange(0, 1000, 1, DType::I64)?).contains("..."));
        Ok(())
    }

    #[test]
    fn summarises_matrices_by_rows_and_columns() -> Result<()> {
        let x = Tensor::from_vec((0..2000i64).collect(), &[100, 20])?;
        assert_eq!(
            show(&x),
            "tensor([[   0,    1,    2,  ...,   17,   18,   19],\n        \
             [  20,   21,   22,  ...,   37,   38,   39],\n        \
             [  40,   41,   42,  ...,   57,   58,   59],\n        \
             ...,\n        \
             [1940, 1941, 1942,  ..., 1957, 1958, 1959],\n        \
             [1960, 1961, 1962,  ..., 1977, 1978, 1979],\n        \
             [1980, 1981, 1982,  ..., 1997, 1998, 1999]])"
        );
        // Hidden elements do not widen the columns or change the float style.
        let mut v = vec![1f32; 2000];
        v[1000] = 1.0e10;
        assert_eq!(
            show(&Tensor::from_vec(v, &[2000])?),
            "tensor([1., 1., 1.,  ..., 1., 1., 1.])"
        );
        Ok(())
    }

    #[test]
    fn non_contiguous_views_print_logical_order() -> Result<()> {
        let x = Tensor::from([[1i64, 2], [3, 4]]);
        let t = x.with_layout(x.layout().transpose(0, 1).expect("valid dims"));
        assert_eq!(show(&t), "tensor([[1, 3],\n        [2, 4]])");
        Ok(())
    }

    #[test]
    fn requires_grad_suffix() -> Result<()> {
        let x = Tensor::from([1f32]).requires_grad_(true)?;
        assert_eq!(show(&x), "tensor([1.], requires_grad=True)");
        let y = Tensor::from([1f64, 2.]).requires_grad_(true)?;
        assert_eq!(
            show(&y),
            "tensor([1., 2.], dtype=torch.float64, requires_grad=True)"
        );
        Ok(())
    }

    /// A stand-in backward node, so the suffix can be tested without running an op.
    struct FakeAddBackward(NodeBase);

    impl Node for FakeAddBackward {
        fn name(&self) -> &'static str {
            "AddBackward0"
        }
        fn base(&self) -> &NodeBase {
            &self.0
        }
        fn apply(&self, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
            Ok(grads)
        }
    }

    #[test]
    fn grad_fn_suffix_replaces_requires_grad() {
        let x = Tensor::from([1f32, 2.]);
        x.set_grad_fn(Arc::new(FakeAddBackward(NodeBase::default())), 0);
        assert_eq!(show(&x), "tensor([1., 2.], grad_fn=<AddBackward0>)");
        let y = Tensor::from(3f64);
        y.set_grad_fn(Arc::new(FakeAddBackward(NodeBase::default())), 0);
        assert_eq!(
            show(&y),
            "tensor(3., dtype=torch.float64, grad_fn=<AddBackward0>)"
        );
    }

    #[test]
    fn grad_fn_suffix_from_a_recorded_op() -> Result<()> {
        let x = Tensor::from([1f32, 2.]).requires_grad_(true)?;
        let y = x.add(&x)?;
        assert_eq!(show(&y), "tensor([2., 4.], grad_fn=<AddBackward0>)");
        Ok(())
    }

    #[test]
    fn python_tuples() {
        assert_eq!(python_tuple(&[0, 3]), "(0, 3)");
        assert_eq!(python_tuple(&[0]), "(0,)");
        assert_eq!(python_tuple(&[]), "()");
    }
}
