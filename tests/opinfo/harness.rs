//! The checks the OpInfo runner applies to every op × device × dtype, and the vocabulary
//! they share: `Sample` (an op's inputs, built on the CPU), `RefTensor` (a float64 expected
//! value) and `OpInfo` (one op's adaptors and which checks apply to it).
//!
//! Every check takes the device under test: samples are built on the CPU, moved to the
//! device before the op runs, and results come back to the CPU to be compared.

#![allow(dead_code)]

use kiln::autograd::{gradcheck, gradgradcheck, GradcheckOptions};
use kiln::{DType, Device, ErrorKind, Result, Scalar, Tensor};
use std::panic::AssertUnwindSafe;

/// A non-tensor argument of a sample.
#[derive(Clone, Debug)]
pub enum Arg {
    Int(i64),
    OptInt(Option<i64>),
    Ints(Vec<i64>),
    OptInts(Option<Vec<i64>>),
    Bool(bool),
    /// A `bool[N]` such as a backward op's `output_mask`.
    Bools(Vec<bool>),
    Float(f64),
    OptFloat(Option<f64>),
    Scalar(Scalar),
    OptScalar(Option<Scalar>),
    DType(DType),
    OptDType(Option<DType>),
    Str(&'static str),
    Device(Device),
    OptDevice(Option<Device>),
}

/// One set of inputs for an op: tensors in schema order, tensor lists, lists of optional
/// tensors (`Tensor?[]`, as `index.Tensor`'s `indices`), named other arguments.
#[derive(Clone, Debug)]
pub struct Sample {
    /// The tensors given, in schema order; a `Tensor?` left out is in `absent`.
    pub tensors: Vec<Tensor>,
    /// Schema positions (among the `Tensor` and `Tensor?` arguments) of the optional tensors
    /// given as None when a later tensor follows them; trailing ones are simply not given.
    pub absent: Vec<usize>,
    pub lists: Vec<Vec<Tensor>>,
    pub opt_lists: Vec<Vec<Option<Tensor>>>,
    pub args: Vec<(&'static str, Arg)>,
    /// A 0-d or empty sample.
    pub edge: bool,
    pub desc: String,
}

impl Sample {
    /// A sample with these tensors.
    pub fn new(desc: impl Into<String>, tensors: Vec<Tensor>) -> Sample {
        Sample {
            tensors,
            absent: vec![],
            lists: vec![],
            opt_lists: vec![],
            args: vec![],
            edge: false,
            desc: desc.into(),
        }
    }
    /// A sample with these tensor lists.
    pub fn with_lists(desc: impl Into<String>, lists: Vec<Vec<Tensor>>) -> Sample {
        Sample {
            tensors: vec![],
            absent: vec![],
            lists,
            opt_lists: vec![],
            args: vec![],
            edge: false,
            desc: desc.into(),
        }
    }
    /// Adds the next `Tensor?[]` argument.
    pub fn with_opt_list(mut self, list: Vec<Option<Tensor>>) -> Sample {
        self.opt_lists.push(list);
        self
    }
    /// Adds a named argument.
    pub fn arg(mut self, name: &'static str, a: Arg) -> Sample {
        self.args.push((name, a));
        self
    }
    /// Gives the `Tensor?` argument at schema tensor position `i` as None (the sample's
    /// `tensors` skip it).
    pub fn absent(mut self, i: usize) -> Sample {
        self.absent.push(i);
        self
    }
    /// Marks as a 0-d / empty sample.
    pub fn edge(mut self) -> Sample {
        self.edge = true;
        self
    }

    pub fn get(&self, name: &str) -> Option<&Arg> {
        self.args.iter().find(|(n, _)| *n == name).map(|(_, a)| a)
    }
    /// Where schema tensor `i` is in `tensors` (`None`: given as None).
    pub fn slot(&self, i: usize) -> Option<usize> {
        if self.absent.contains(&i) {
            return None;
        }
        Some(i - self.absent.iter().filter(|&&a| a < i).count())
    }
    pub fn t(&self, i: usize) -> &Tensor {
        let k = self.slot(i).unwrap_or_else(|| {
            panic!(
                "{}: tensor argument {i} is required but given as None",
                self.desc
            )
        });
        &self.tensors[k]
    }
    pub fn opt_t(&self, i: usize) -> Option<&Tensor> {
        self.slot(i).and_then(|k| self.tensors.get(k))
    }
    pub fn list(&self, i: usize) -> &[Tensor] {
        &self.lists[i]
    }
    /// The `i`-th `Tensor?[]` argument, as the op takes it.
    pub fn opt_list(&self, i: usize) -> Vec<Option<&Tensor>> {
        self.opt_lists[i].iter().map(Option::as_ref).collect()
    }
    pub fn scalar(&self, n: &str) -> Option<Scalar> {
        match self.get(n)? {
            Arg::Scalar(s) => Some(*s),
            other => panic!("argument {n} is {other:?}, not a Scalar"),
        }
    }
    pub fn opt_scalar(&self, n: &str) -> Option<Option<Scalar>> {
        match self.get(n)? {
            Arg::OptScalar(s) => Some(*s),
            Arg::Scalar(s) => Some(Some(*s)),
            other => panic!("argument {n} is {other:?}, not a Scalar?"),
        }
    }
    pub fn int(&self, n: &str) -> Option<i64> {
        match self.get(n)? {
            Arg::Int(i) => Some(*i),
            other => panic!("argument {n} is {other:?}, not an int"),
        }
    }
    pub fn opt_int(&self, n: &str) -> Option<Option<i64>> {
        match self.get(n)? {
            Arg::OptInt(i) => Some(*i),
            Arg::Int(i) => Some(Some(*i)),
            other => panic!("argument {n} is {other:?}, not an int?"),
        }
    }
    pub fn ints(&self, n: &str) -> Option<&[i64]> {
        match self.get(n)? {
            Arg::Ints(v) => Some(v),
            other => panic!("argument {n} is {other:?}, not an int[]"),
        }
    }
    pub fn opt_ints(&self, n: &str) -> Option<Option<&[i64]>> {
        match self.get(n)? {
            Arg::OptInts(v) => Some(v.as_deref()),
            Arg::Ints(v) => Some(Some(v)),
            other => panic!("argument {n} is {other:?}, not an int[]?"),
        }
    }
    pub fn flag(&self, n: &str) -> Option<bool> {
        match self.get(n)? {
            Arg::Bool(b) => Some(*b),
            other => panic!("argument {n} is {other:?}, not a bool"),
        }
    }
    pub fn bools(&self, n: &str) -> Option<&[bool]> {
        match self.get(n)? {
            Arg::Bools(v) => Some(v),
            other => panic!("argument {n} is {other:?}, not a bool[]"),
        }
    }
    pub fn opt_flag(&self, n: &str) -> Option<Option<bool>> {
        self.flag(n).map(Some)
    }
    pub fn float(&self, n: &str) -> Option<f64> {
        match self.get(n)? {
            Arg::Float(f) => Some(*f),
            other => panic!("argument {n} is {other:?}, not a float"),
        }
    }
    pub fn opt_float(&self, n: &str) -> Option<Option<f64>> {
        match self.get(n)? {
            Arg::OptFloat(f) => Some(*f),
            Arg::Float(f) => Some(Some(*f)),
            other => panic!("argument {n} is {other:?}, not a float?"),
        }
    }
    pub fn dtype(&self, n: &str) -> Option<DType> {
        match self.get(n)? {
            Arg::DType(d) => Some(*d),
            other => panic!("argument {n} is {other:?}, not a ScalarType"),
        }
    }
    pub fn opt_dtype(&self, n: &str) -> Option<Option<DType>> {
        match self.get(n)? {
            Arg::OptDType(d) => Some(*d),
            Arg::DType(d) => Some(Some(*d)),
            other => panic!("argument {n} is {other:?}, not a ScalarType?"),
        }
    }
    pub fn device(&self, n: &str) -> Option<Device> {
        match self.get(n)? {
            Arg::Device(d) => Some(*d),
            other => panic!("argument {n} is {other:?}, not a Device"),
        }
    }
    pub fn opt_device(&self, n: &str) -> Option<Option<Device>> {
        match self.get(n)? {
            Arg::OptDevice(d) => Some(*d),
            Arg::Device(d) => Some(Some(*d)),
            other => panic!("argument {n} is {other:?}, not a Device?"),
        }
    }
    pub fn string(&self, n: &str) -> Option<&str> {
        match self.get(n)? {
            Arg::Str(s) => Some(s),
            other => panic!("argument {n} is {other:?}, not a str"),
        }
    }

    /// The same sample with every tensor replaced by `f(tensor)`.
    pub fn map_tensors(&self, f: &dyn Fn(&Tensor) -> Tensor) -> Sample {
        let mut s = self.clone();
        s.tensors = self.tensors.iter().map(f).collect();
        s.lists = self
            .lists
            .iter()
            .map(|l| l.iter().map(f).collect())
            .collect();
        s.opt_lists = self
            .opt_lists
            .iter()
            .map(|l| l.iter().map(|t| t.as_ref().map(f)).collect())
            .collect();
        s
    }

    /// The same sample with every tensor on `device`; panics (failing the case) when a tensor
    /// cannot be moved there.
    pub fn on(&self, device: Device) -> Sample {
        self.map_tensors(&|t| {
            t.to_device(device)
                .unwrap_or_else(|e| panic!("{}: moving an input to {device}: {e}", self.desc))
        })
    }
}

/// A sample the op must reject, with a fragment of the expected message.
pub struct ErrorSample {
    pub sample: Sample,
    /// The kind of the error PyTorch raises for this input (`IndexError` -> `Index`, …).
    pub kind: ErrorKind,
    pub message: &'static str,
}

/// An expected value computed in float64 by an independent reference.
#[derive(Clone, Debug, PartialEq)]
pub struct RefTensor {
    pub shape: Vec<usize>,
    pub data: Vec<f64>,
}

impl RefTensor {
    /// The values of `t` (on any device), as float64.
    pub fn of(t: &Tensor) -> RefTensor {
        RefTensor {
            shape: t.shape().to_vec(),
            data: values(t),
        }
    }
    /// Row-major strides of the shape.
    pub fn strides(&self) -> Vec<usize> {
        let mut s = vec![1; self.shape.len()];
        for i in (0..self.shape.len().saturating_sub(1)).rev() {
            s[i] = s[i + 1] * self.shape[i + 1];
        }
        s
    }
    /// The multi-index of flat position `i`.
    pub fn unravel(&self, mut i: usize) -> Vec<usize> {
        let mut idx = vec![0; self.shape.len()];
        for d in (0..self.shape.len()).rev() {
            let n = self.shape[d].max(1);
            idx[d] = i % n;
            i /= n;
        }
        idx
    }
    /// The flat position of a multi-index.
    pub fn ravel(&self, idx: &[usize]) -> usize {
        idx.iter().zip(self.strides()).map(|(i, s)| i * s).sum()
    }
}

/// A reference scalar result: f64, or a bool stored as 0/1.
pub struct RefValue(pub f64);

impl From<f64> for RefValue {
    fn from(v: f64) -> Self {
        RefValue(v)
    }
}

impl From<bool> for RefValue {
    fn from(v: bool) -> Self {
        RefValue(if v { 1.0 } else { 0.0 })
    }
}

/// Applies a float64 closure elementwise with NumPy broadcasting, written independently of
/// kiln's kernels and layouts.
pub fn ref_pointwise(inputs: &[&Tensor], f: impl Fn(&[f64]) -> RefValue) -> RefTensor {
    let refs: Vec<RefTensor> = inputs.iter().map(|t| RefTensor::of(t)).collect();
    let nd = refs.iter().map(|r| r.shape.len()).max().unwrap_or(0);
    let mut shape = vec![1usize; nd];
    for r in &refs {
        for (i, &s) in r.shape.iter().enumerate() {
            let d = nd - r.shape.len() + i;
            if shape[d] == 1 {
                shape[d] = s;
            } else {
                assert!(
                    s == 1 || s == shape[d],
                    "reference: shapes do not broadcast"
                );
            }
        }
    }
    let out = RefTensor {
        shape: shape.clone(),
        data: vec![],
    };
    let n: usize = shape.iter().product();
    let mut data = Vec::with_capacity(n);
    let mut vals = vec![0.0; refs.len()];
    for i in 0..n {
        let idx = out.unravel(i);
        for (k, r) in refs.iter().enumerate() {
            let lead = nd - r.shape.len();
            let ridx: Vec<usize> = (0..r.shape.len())
                .map(|d| if r.shape[d] == 1 { 0 } else { idx[lead + d] })
                .collect();
            vals[k] = r.data[r.ravel(&ridx)];
        }
        data.push(f(&vals).0);
    }
    RefTensor { shape, data }
}

/// erf by its Maclaurin series (|x| ≤ 3) or a continued fraction for erfc (|x| > 3).
pub fn reference_erf(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let a = x.abs();
    let r = if a <= 3.0 {
        let (mut term, mut sum, mut n) = (a, a, 0.0);
        while term.abs() > 1e-17 * sum.abs() {
            n += 1.0;
            term *= -a * a / n;
            sum += term / (2.0 * n + 1.0);
        }
        2.0 / std::f64::consts::PI.sqrt() * sum
    } else {
        // erfc(a) = exp(-a²)/√π · 1/(a + 1/2/(a + 1/(a + 3/2/(a + ...)))).
        let mut frac = a;
        for k in (1..60).rev() {
            frac = a + (k as f64 / 2.0) / frac;
        }
        1.0 - (-a * a).exp() / std::f64::consts::PI.sqrt() / frac
    };
    r.copysign(x)
}

/// erfinv by bisection on [`reference_erf`] (±inf at ±1, NaN outside [-1, 1]).
pub fn reference_erfinv(y: f64) -> f64 {
    if y.is_nan() || y.abs() > 1.0 {
        return f64::NAN;
    }
    if y.abs() == 1.0 {
        return y * f64::INFINITY;
    }
    let (mut lo, mut hi) = (-7.0, 7.0);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if reference_erf(mid) < y {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// PyTorch's gelu, exact or tanh-approximated, in float64.
pub fn reference_gelu(x: f64, approximate: &str) -> f64 {
    if approximate == "tanh" {
        let k = (2.0 / std::f64::consts::PI).sqrt();
        0.5 * x * (1.0 + (k * (x + 0.044715 * x * x * x)).tanh())
    } else {
        0.5 * x * (1.0 + reference_erf(x / std::f64::consts::SQRT_2))
    }
}

/// Calls one public variant of an op on a sample.
pub type Variant = fn(&Sample) -> Result<Vec<Tensor>>;
/// Calls an op's `out=` variant on a sample and output tensors.
pub type OutVariant = fn(&Sample, &[Tensor]) -> Result<Vec<Tensor>>;

/// One op's adaptors from a `Sample` to each public variant, and which checks apply to it;
/// generated from its `opinfo:` entry in native_functions.yaml.
pub struct OpInfo {
    /// The schema name, `add.Tensor`.
    pub name: &'static str,
    /// The Rust name, `add` (`sum_dim` for `sum.dim_IntList`).
    pub rust: &'static str,
    /// Where the op is declared: `native_functions.yaml:27`.
    pub declared: &'static str,
    /// Where its gradient is defined, for gradcheck failures: the backward node and
    /// derivatives.yaml line of its entry, then each formula with its own line; or, for a
    /// composite, the function whose ops autograd records.
    pub gradient: &'static str,
    /// The schema's `Tensor` and `Tensor?` arguments, in the order a sample's `tensors` fill
    /// them.
    pub tensor_args: &'static [&'static str],
    /// The schema's `Tensor[]` arguments, in the order a sample's `lists` fill them.
    pub list_args: &'static [&'static str],
    /// The schema's `Tensor?[]` arguments, in the order a sample's `opt_lists` fill them.
    pub opt_list_args: &'static [&'static str],
    /// The dtypes forward, edge, noncontiguous and variants run in on the CPU and meta.
    pub dtypes: &'static [DType],
    /// ... and on CUDA (`dtypes` unless the YAML gives CUDA its own list).
    pub cuda_dtypes: &'static [DType],
    pub call: Variant,
    pub method: Option<Variant>,
    pub inplace: Option<Variant>,
    pub out: Option<OutVariant>,
    /// The float64 reference, computed from the CPU sample.
    pub reference: fn(&Sample) -> Vec<RefTensor>,
    pub samples: fn(DType) -> Vec<Sample>,
    pub error_samples: fn() -> Vec<ErrorSample>,
    /// Autograd records the op (it has a derivative, or is a composite of ops that do).
    pub differentiable: bool,
    /// Function, method, in-place and `out=` variants are compared (`variants: false` opts out).
    pub variants: bool,
    /// Gradcheck and gradgradcheck run, when the op is also `differentiable`.
    pub gradcheck: bool,
    /// Some input makes the op fail, so the errors check runs.
    pub errors: bool,
    /// The op's `autocast:` policy on the CPU and on CUDA (`lower`, `fp32`, ...), if any.
    pub autocast_cpu: Option<&'static str>,
    pub autocast_cuda: Option<&'static str>,
    /// The tensor arguments whose channels-last layout the outputs follow
    /// (`memory_format:`); the channels-last check runs when there are any.
    pub memory_format: &'static [&'static str],
}

impl OpInfo {
    /// Whether gradcheck and gradgradcheck apply.
    pub fn runs_gradcheck(&self) -> bool {
        self.differentiable && self.gradcheck
    }

    /// The dtypes its per-dtype checks run in on `device`.
    pub fn dtypes_on(&self, device: Device) -> &'static [DType] {
        if device.is_cuda() {
            self.cuda_dtypes
        } else {
            self.dtypes
        }
    }
}

/// The float64 values of `t`, brought back to the CPU first: references and comparisons run
/// there whatever the device under test.
fn values(t: &Tensor) -> Vec<f64> {
    t.to_device(Device::Cpu)
        .and_then(|c| c.to_vec::<f64>())
        .unwrap_or_else(|e| {
            panic!(
                "reading a {:?} {} tensor on {}: {e}",
                t.shape(),
                t.dtype(),
                t.device()
            )
        })
}

/// PyTorch's `assert_close` default tolerances for a dtype (integers and bool exact).
pub fn tolerance(d: DType) -> (f64, f64) {
    match d {
        DType::F16 => (1e-3, 1e-5),
        DType::BF16 => (1.6e-2, 1e-5),
        DType::F32 => (1.3e-6, 1e-5),
        DType::F64 => (1e-7, 1e-7),
        _ => (0.0, 0.0),
    }
}

fn close(a: f64, e: f64, rtol: f64, atol: f64) -> bool {
    if a.is_nan() || e.is_nan() {
        return a.is_nan() && e.is_nan();
    }
    if a.is_infinite() || e.is_infinite() {
        return a == e;
    }
    (a - e).abs() <= atol + rtol * e.abs()
}

/// Asserts `actual` (on any device) matches `expected` in shape and, within the dtype's
/// tolerance, in value.
pub fn assert_close(actual: &Tensor, expected: &RefTensor, ctx: &str) {
    assert_close_with(actual, expected, ctx, tolerance(actual.dtype()))
}

/// [`assert_close`] with the tolerance `(rtol, atol)` given.
fn assert_close_with(actual: &Tensor, expected: &RefTensor, ctx: &str, (rtol, atol): (f64, f64)) {
    assert_eq!(actual.shape(), expected.shape.as_slice(), "{ctx}: shape");
    let got = values(actual);
    // A bool result holds "non-zero": True + True is True.
    let expected_data: Vec<f64> = if actual.dtype() == DType::Bool {
        expected
            .data
            .iter()
            .map(|&e| if e != 0.0 { 1.0 } else { 0.0 })
            .collect()
    } else {
        expected.data.clone()
    };
    for (i, (a, e)) in got.iter().zip(&expected_data).enumerate() {
        assert!(close(*a, *e, rtol, atol), "{ctx}: element {i}: got {a}, expected {e} (rtol {rtol}, atol {atol}); got {got:?}, expected {:?}", expected.data);
    }
}

/// Asserts two kiln results are equal (same shape and dtype, values within tolerance).
pub fn assert_same(a: &Tensor, b: &Tensor, ctx: &str) {
    assert_eq!(a.dtype(), b.dtype(), "{ctx}: dtype");
    assert_close(a, &RefTensor::of(b), ctx);
}

fn selected(info: &OpInfo, dtype: DType, edge: bool) -> Vec<Sample> {
    let v: Vec<Sample> = (info.samples)(dtype)
        .into_iter()
        .filter(|s| s.edge == edge)
        .collect();
    assert!(
        !v.is_empty(),
        "{}: the sample family gives no {} samples for {dtype}",
        info.name,
        if edge { "0-d/empty" } else { "regular" }
    );
    v
}

/// Ops whose f16/bf16 results PyTorch computes with intermediates rounded to the half dtype
/// (its composites op by op, its CPU batch norm's statistics kept in the input's dtype), which
/// kiln reproduces (`tests/parity_half_precision.rs` holds them to PyTorch's own half
/// results). Against the float64 reference they get a looser absolute tolerance for half
/// dtypes, as PyTorch's OpInfo entries for them carry `toleranceOverride`s: `(op, f16 atol,
/// bf16 atol)`; rtol stays the dtype's default.
const HALF_ATOL_OVERRIDES: &[(&str, f64, f64)] = &[
    ("logit", 1e-3, 1e-2),
    ("tanhshrink", 1e-3, 1e-2),
    ("binary_cross_entropy_with_logits", 1e-3, 1e-2),
    ("batch_norm", 1e-3, 1e-2),
    ("native_batch_norm", 1e-3, 1e-2),
    ("_native_batch_norm_legit_functional", 1e-3, 1e-2),
    ("instance_norm", 1e-3, 1e-2),
];

/// The tolerance `(rtol, atol)` for an output of dtype `out` of `op` run in `dtype` against
/// the float64 reference: an overridden op run in a half dtype has that dtype's tolerances on
/// every output (its float32 statistics hold half-rounded values, as PyTorch's half ones do).
fn reference_tolerance(op: &str, dtype: DType, out: DType) -> (f64, f64) {
    let atol = match HALF_ATOL_OVERRIDES.iter().find(|(o, ..)| *o == op) {
        Some(&(_, f16, _)) if dtype == DType::F16 => f16,
        Some(&(_, _, bf16)) if dtype == DType::BF16 => bf16,
        _ => return tolerance(out),
    };
    (tolerance(dtype).0, atol)
}

/// The op on `device` against the float64 reference computed from the CPU sample.
fn check_against_reference(info: &OpInfo, s: &Sample, dtype: DType, device: Device) {
    let ctx = format!("{} [{dtype}, {device}] {}", info.name, s.desc);
    let outs = (info.call)(&s.on(device)).unwrap_or_else(|e| panic!("{ctx}: {e}"));
    let refs = (info.reference)(s);
    assert_eq!(outs.len(), refs.len(), "{ctx}: number of outputs");
    for (i, (o, r)) in outs.iter().zip(&refs).enumerate() {
        let tol = reference_tolerance(info.name, dtype, o.dtype());
        assert_close_with(o, r, &format!("{ctx} output {i}"), tol);
    }
}

/// Forward against the float64 reference on regular (including broadcasting) samples.
pub fn check_forward(info: &OpInfo, dtype: DType, device: Device) {
    for s in selected(info, dtype, false) {
        check_against_reference(info, &s, dtype, device);
    }
}

/// Forward against the reference on 0-d and empty samples.
pub fn check_edge(info: &OpInfo, dtype: DType, device: Device) {
    for s in selected(info, dtype, true) {
        check_against_reference(info, &s, dtype, device);
    }
}

/// The same values laid out non-contiguously: through a transpose of the last two dims
/// where that is not contiguous again (it is when one of them has size 1), else through a
/// step-2 view of every element (a stack with a copy of itself, then one half of it). A
/// tensor of one element or none is returned as it is: every layout of it is contiguous.
pub fn noncontiguous(t: &Tensor) -> Tensor {
    if t.numel() <= 1 {
        return t.clone();
    }
    let n = t.dim();
    let transposed = || -> kiln::Result<Tensor> {
        let (a, b) = ((n - 2) as i64, (n - 1) as i64);
        t.transpose(a, b)?.contiguous()?.transpose(a, b)
    };
    let strided = || -> kiln::Result<Tensor> {
        kiln::stack_with(&[t.clone(), t.clone()], n as i64)?
            .contiguous()?
            .select(n as i64, 0)
    };
    let made = match (n >= 2).then(transposed) {
        Some(Ok(m)) if !m.is_contiguous() => Ok(m),
        _ => strided(),
    };
    // Only a bug in the views above lands here; the caller's panic names the sample.
    let made = made.unwrap_or_else(|e| panic!("making a non-contiguous copy of {t:?}: {e}"));
    assert!(
        !made.is_contiguous(),
        "no non-contiguous layout made for shape {:?} (strides {:?})",
        t.shape(),
        made.strides()
    );
    made.detach()
}

/// Non-contiguous inputs give the results contiguous inputs give.
pub fn check_noncontiguous(info: &OpInfo, dtype: DType, device: Device) {
    for s in selected(info, dtype, false) {
        let ctx = format!(
            "{} [{dtype}, {device}] {} (non-contiguous)",
            info.name, s.desc
        );
        let s = s.on(device);
        let expected = (info.call)(&s).unwrap_or_else(|e| panic!("{ctx}: {e}"));
        let nc = std::panic::catch_unwind(AssertUnwindSafe(|| s.map_tensors(&noncontiguous)))
            .unwrap_or_else(|p| panic!("{ctx}: {}", crate::runner::payload_message(&*p)));
        let got = (info.call)(&nc).unwrap_or_else(|e| panic!("{ctx}: {e}"));
        for (g, e) in got.iter().zip(&expected) {
            assert_same(g, e, &ctx);
        }
    }
}

/// Ops with `memory_format:` (CPU): with every 4-d input channels-last (5-d:
/// channels-last-3d), the outputs equal the float64 reference, and those of a followed
/// input's rank come back in its layout, as PyTorch's convolution, pooling and batch norm.
pub fn check_channels_last(info: &OpInfo, dtype: DType, device: Device) {
    use kiln::MemoryFormat;
    for s in selected(info, dtype, false) {
        let ctx = format!(
            "{} [{dtype}, {device}] {} (channels-last inputs)",
            info.name, s.desc
        );
        let last = s.map_tensors(&|t| {
            let f = match t.dim() {
                4 => MemoryFormat::ChannelsLast,
                5 => MemoryFormat::ChannelsLast3d,
                _ => return t.clone(),
            };
            t.to_memory_format(f)
                .unwrap_or_else(|e| panic!("{ctx}: converting an input: {e}"))
        });
        // The format each followed input now suggests (size-1 dims can leave a tensor
        // row-major and channels-last at once; it then suggests row-major, as in PyTorch).
        let followed: Vec<(usize, MemoryFormat)> = info
            .memory_format
            .iter()
            .filter_map(|name| info.tensor_args.iter().position(|a| a == name))
            .filter_map(|i| last.slot(i).map(|k| &last.tensors[k]))
            .map(|t| (t.dim(), t.suggest_memory_format()))
            .filter(|&(_, f)| f != MemoryFormat::Contiguous)
            .collect();
        let outs = (info.call)(&last.on(device)).unwrap_or_else(|e| panic!("{ctx}: {e}"));
        let refs = (info.reference)(&s);
        assert_eq!(outs.len(), refs.len(), "{ctx}: number of outputs");
        for (i, (o, r)) in outs.iter().zip(&refs).enumerate() {
            let tol = reference_tolerance(info.name, dtype, o.dtype());
            assert_close_with(o, r, &format!("{ctx} output {i}"), tol);
            if let Some(&(_, f)) = followed.first().filter(|(rank, _)| *rank == o.dim()) {
                assert!(
                    o.is_contiguous_as(f).unwrap_or(false),
                    "{ctx} output {i}: expected {f} like the input, got strides {:?} for shape {:?}",
                    o.strides(),
                    o.shape()
                );
            }
        }
    }
}

/// Function, method, `out=` and in-place variants agree.
pub fn check_variants(info: &OpInfo, dtype: DType, device: Device) {
    for s in selected(info, dtype, false) {
        let ctx = format!("{} [{dtype}, {device}] {}", info.name, s.desc);
        let s = s.on(device);
        let expected = (info.call)(&s).unwrap_or_else(|e| panic!("{ctx}: {e}"));
        if let Some(m) = info.method {
            let got = m(&s).unwrap_or_else(|e| panic!("{ctx} (method): {e}"));
            for (g, e) in got.iter().zip(&expected) {
                assert_same(g, e, &format!("{ctx} (method)"));
            }
        }
        if let Some(out) = info.out {
            let outs: Vec<Tensor> = expected
                .iter()
                .map(|e| zeros_on(e.shape(), e.dtype(), device))
                .collect();
            let got = out(&s, &outs).unwrap_or_else(|e| panic!("{ctx} (out=): {e}"));
            for ((g, o), e) in got.iter().zip(&outs).zip(&expected) {
                assert!(
                    g.shares_storage_with(o),
                    "{ctx} (out=): result is not the out tensor"
                );
                assert_eq!(o.version(), 1, "{ctx} (out=): version not bumped");
                assert_same(o, e, &format!("{ctx} (out=)"));
            }
        }
        if let Some(inplace) = info.inplace {
            let fresh = s.map_tensors(&|t| t.detached_copy().expect("copy of a small sample"));
            let target = fresh.t(0).clone();
            let r = inplace(&fresh);
            let e = &expected[0];
            let fits = e.shape() == target.shape()
                && kiln::tensor::promotion::can_cast(e.dtype(), target.dtype());
            match r {
                Ok(got) => {
                    assert!(
                        fits,
                        "{ctx} (in-place): should have failed: result {:?} {} into self {:?} {}",
                        e.shape(),
                        e.dtype(),
                        target.shape(),
                        target.dtype()
                    );
                    assert!(
                        got[0].is_same(&target),
                        "{ctx} (in-place): did not return self"
                    );
                    assert!(
                        target.version() >= 1,
                        "{ctx} (in-place): version not bumped"
                    );
                    assert_close(
                        &target,
                        &RefTensor::of(&e.to_dtype(target.dtype()).unwrap()),
                        &format!("{ctx} (in-place)"),
                    );
                }
                Err(err) => assert!(!fits, "{ctx} (in-place): unexpected error {err}"),
            }
        }
    }
}

/// Zeros on `device`: an `out=` tensor on the device under test, as PyTorch's tests make.
fn zeros_on(shape: &[usize], dtype: DType, device: Device) -> Tensor {
    Tensor::full_on(shape, 0, dtype, device)
        .unwrap_or_else(|e| panic!("zeros {shape:?} {dtype} on {device}: {e}"))
}

fn grad_samples(info: &OpInfo) -> Vec<Sample> {
    let v: Vec<Sample> = (info.samples)(DType::F64)
        .into_iter()
        .filter(|s| !s.edge)
        .take(3)
        .collect();
    assert!(
        !v.is_empty(),
        "{}: no float64 samples for gradcheck",
        info.name
    );
    v
}

/// The schema name of each of a sample's tensors in `leaves` order: its tensors, then every
/// element of its lists (`tensors[1]`), then the present elements of its optional lists.
fn input_names(info: &OpInfo, s: &Sample) -> Vec<String> {
    let named = |list: &[&str], i: usize| list.get(i).map_or(format!("#{i}"), |n| n.to_string());
    let mut names: Vec<String> = (0..)
        .filter(|i| !s.absent.contains(i))
        .take(s.tensors.len())
        .map(|i| named(info.tensor_args, i))
        .collect();
    for (j, l) in s.lists.iter().enumerate() {
        let list = named(info.list_args, j);
        names.extend((0..l.len()).map(|k| format!("{list}[{k}]")));
    }
    for (j, l) in s.opt_lists.iter().enumerate() {
        let list = named(info.opt_list_args, j);
        names.extend(
            l.iter()
                .enumerate()
                .filter(|(_, t)| t.is_some())
                .map(|(k, _)| format!("{list}[{k}]")),
        );
    }
    names
}

/// The report of a failed gradcheck or gradgradcheck (`check`): the op and where it is
/// declared, the device, the sample (its index among the gradcheck samples, description, and
/// each input's name, shape and dtype), where the gradient is defined in derivatives.yaml, and
/// gradcheck's own message, whose input numbers index the list printed here. `outputs` are
/// the op's float outputs, whose gradients gradgradcheck takes as further inputs.
fn gradcheck_failure(
    check: &str,
    info: &OpInfo,
    device: Device,
    (index, s): (usize, &Sample),
    inputs: &[Tensor],
    outputs: &[Tensor],
    error: &kiln::Error,
) -> String {
    let mut lines = vec![
        format!(
            "{check} failed: {} ({}), float64 on {device}",
            info.name, info.declared
        ),
        format!(
            "  sample {index} (of the first regular float64 samples): \"{}\"",
            s.desc
        ),
        "  inputs:".to_string(),
    ];
    let names = input_names(info, s);
    for (i, t) in inputs.iter().enumerate() {
        let name = names.get(i).map_or("?", String::as_str);
        let grad = if t.requires_grad() {
            ""
        } else {
            " (not differentiated)"
        };
        lines.push(format!(
            "    {i}: {name} {:?} {}{grad}",
            t.shape(),
            t.dtype()
        ));
    }
    for (o, t) in outputs.iter().enumerate() {
        lines.push(format!(
            "    {}: grad of output {o} {:?} {}",
            inputs.len() + o,
            t.shape(),
            t.dtype()
        ));
    }
    lines.push(format!("  gradient: {}", info.gradient));
    lines.push(format!("  {error}"));
    lines.join("\n")
}

/// Splits a sample's tensors into copies on `device`, the float ones leaves requiring grad,
/// and rebuilds samples from them.
fn leaves(s: &Sample, device: Device) -> (Vec<Tensor>, impl Fn(&[Tensor]) -> Sample + '_) {
    let mut flat: Vec<Tensor> = s.tensors.clone();
    for l in &s.lists {
        flat.extend(l.iter().cloned());
    }
    for l in &s.opt_lists {
        flat.extend(l.iter().flatten().cloned());
    }
    let inputs: Vec<Tensor> = flat
        .iter()
        .map(|t| {
            // Moved before requires_grad_, so each is a leaf on the device (a move after
            // would make it a non-leaf `_to_copy` of a CPU leaf).
            let c = t
                .detached_copy()
                .and_then(|c| c.to_device(device))
                .unwrap_or_else(|e| panic!("{}: moving an input to {device}: {e}", s.desc));
            if c.is_floating_point() {
                c.requires_grad_(true).unwrap()
            } else {
                c
            }
        })
        .collect();
    let rebuild = move |ts: &[Tensor]| {
        let mut out = s.clone();
        let mut it = ts.iter().cloned();
        out.tensors = s.tensors.iter().map(|_| it.next().unwrap()).collect();
        out.lists = s
            .lists
            .iter()
            .map(|l| l.iter().map(|_| it.next().unwrap()).collect())
            .collect();
        out.opt_lists = s
            .opt_lists
            .iter()
            .map(|l| {
                l.iter()
                    .map(|t| t.as_ref().map(|_| it.next().unwrap()))
                    .collect()
            })
            .collect();
        out
    };
    (inputs, rebuild)
}

/// Autograd's first derivatives match finite differences (float64).
pub fn check_gradcheck(info: &OpInfo, device: Device) {
    for (i, s) in grad_samples(info).into_iter().enumerate() {
        let (inputs, rebuild) = leaves(&s, device);
        let f = |ts: &[Tensor]| (info.call)(&rebuild(ts));
        if let Err(e) = gradcheck(&f, &inputs, GradcheckOptions::default()) {
            let report = gradcheck_failure("gradcheck", info, device, (i, &s), &inputs, &[], &e);
            panic!("{report}");
        }
    }
}

/// Autograd's second derivatives match finite differences of its first (float64).
pub fn check_gradgradcheck(info: &OpInfo, device: Device) {
    for (i, s) in grad_samples(info).into_iter().enumerate() {
        let (inputs, rebuild) = leaves(&s, device);
        let f = |ts: &[Tensor]| (info.call)(&rebuild(ts));
        if let Err(e) = gradgradcheck(&f, &inputs, GradcheckOptions::default()) {
            let outputs: Vec<Tensor> = f(&inputs)
                .map(|o| o.into_iter().filter(Tensor::is_floating_point).collect())
                .unwrap_or_default();
            let report = gradcheck_failure(
                "gradgradcheck",
                info,
                device,
                (i, &s),
                &inputs,
                &outputs,
                &e,
            );
            panic!("{report}");
        }
    }
}

/// Whether an error message holds the expected fragment. A dtype a kernel lacks reads
/// `"pow" not implemented for 'Bool'` on the CPU and, as in PyTorch, `"pow_cuda" not
/// implemented for 'Bool'` on CUDA: a sample's fragment names the CPU form.
fn message_matches(got: &str, want: &str, device: Device) -> bool {
    got.contains(want)
        || (device.is_cuda()
            && got.contains(&want.replacen("\" not implemented", "_cuda\" not implemented", 1)))
}

/// Ops whose output shape depends on the input's values (or that read a value as an
/// argument): on meta they fail with PyTorch's error for reading a meta tensor, as PyTorch's
/// do. `to.device` is here for its "meta to cpu" sample, which has no data to copy.
const DATA_DEPENDENT: &[&str] = &[
    "argwhere",
    "nonzero",
    "masked_select",
    "repeat_interleave.self_Tensor",
    "one_hot",
    "narrow.Tensor",
    "index.Tensor",
    // `nonzero` as one index tensor per dim: as many elements as `condition` has non-zeros.
    "where",
    "to.device",
];

/// What the meta device must reproduce of a CPU result: shape, dtype, strides.
fn meta_view(t: &Tensor) -> (Vec<usize>, DType, Vec<usize>) {
    (t.shape().to_vec(), t.dtype(), t.strides().to_vec())
}

/// On the meta device every sample gives the CPU's output shapes, dtypes and strides, with
/// outputs on meta and the same autograd node; every error sample fails with the CPU's
/// message, unless only the values could reveal the error (an index out of range).
pub fn check_meta(info: &OpInfo, dtype: DType) {
    let data_dependent = DATA_DEPENDENT.contains(&info.name);
    for s in (info.samples)(dtype) {
        let cpu = (info.call)(&s);
        let meta = (info.call)(&s.on(Device::Meta));
        let ctx = format!("{} [meta] {}", info.name, s.desc);
        match (cpu, meta) {
            (Ok(c), Ok(m)) => {
                assert_eq!(c.len(), m.len(), "{ctx}: output count");
                for (i, (c, m)) in c.iter().zip(&m).enumerate() {
                    assert_eq!(m.device(), Device::Meta, "{ctx}: output {i} device");
                    assert_eq!(
                        meta_view(m),
                        meta_view(c),
                        "{ctx}: output {i} (shape, dtype, strides)"
                    );
                }
            }
            (Err(c), Err(m)) => assert!(
                m.to_string() == c.to_string()
                    || value_dependent_error(&c)
                    || (data_dependent && m.to_string().contains("meta")),
                "{ctx}: errors differ: {m} (CPU: {c})"
            ),
            (Ok(_), Err(m)) => assert!(
                data_dependent && m.to_string().contains("meta"),
                "{ctx}: fails on meta only: {m}"
            ),
            (Err(c), Ok(_)) => assert!(
                value_dependent_error(&c),
                "{ctx}: the CPU fails ({c}), meta does not"
            ),
        }
    }
}

/// On meta, every error sample fails as on the CPU (same message), except errors only the
/// values could reveal.
pub fn check_meta_errors(info: &OpInfo) {
    let data_dependent = DATA_DEPENDENT.contains(&info.name);
    for c in (info.error_samples)() {
        let Err(cpu) = (info.call)(&c.sample) else {
            panic!(
                "{} {}: the error sample runs on the CPU",
                info.name, c.sample.desc
            );
        };
        match (info.call)(&c.sample.on(Device::Meta)) {
            Err(m) => assert!(
                m.to_string() == cpu.to_string()
                    || value_dependent_error(&cpu)
                    || (data_dependent && m.to_string().contains("meta")),
                "{} [meta] {}: errors differ: {m} (CPU: {cpu})",
                info.name,
                c.sample.desc
            ),
            Ok(_) => assert!(
                value_dependent_error(&cpu),
                "{} [meta] {}: the CPU fails ({cpu}), meta does not",
                info.name,
                c.sample.desc
            ),
        }
    }
}

/// An error only the values of a tensor could reveal, which no meta kernel can see.
fn value_dependent_error(e: &kiln::Error) -> bool {
    let m = e.to_string();
    [
        "out of bounds",
        "out of range",
        "between 0 and 1",
        "must be non-negative",
        "negative",
        "must be in",
        "nan",
        "NaN",
        "inf",
        "singular",
        "positive-definite",
        "not positive",
        "found idx to be",
        "the number of true mask entries",
        "offsets[0] has to be 0",
        "offsets[-1] can not be greater",
        "offsets has to be non-decreasing",
        "the last offset closes the last bag",
    ]
    .iter()
    .any(|p| m.contains(p))
}

/// Bad inputs give an `Err` whose message says what is wrong; so does an `out=` tensor of
/// the wrong shape.
pub fn check_errors(info: &OpInfo, device: Device) {
    let cases = (info.error_samples)();
    let mut checked = 0;
    if let Some(out) = info.out {
        // float32 unless the op does not take it (bitwise ops).
        let dtypes = info.dtypes_on(device);
        let dtype = if dtypes.contains(&DType::F32) {
            DType::F32
        } else {
            dtypes[0]
        };
        let s = (info.samples)(dtype)
            .into_iter()
            .find(|s| !s.edge)
            .expect("a regular sample")
            .on(device);
        let expected = (info.call)(&s).expect("regular sample runs");
        let wrong: Vec<Tensor> = expected
            .iter()
            .map(|e| zeros_on(&[e.numel() + 1], e.dtype(), device))
            .collect();
        let err = out(&s, &wrong).err().unwrap_or_else(|| {
            panic!(
                "{} [{device}]: out= of the wrong shape was accepted",
                info.name
            )
        });
        assert!(
            err.to_string()
                .contains("doesn't match the broadcast shape"),
            "{} [{device}]: {err}",
            info.name
        );
        assert_eq!(
            err.kind(),
            ErrorKind::Shape,
            "{} [{device}]: out= of the wrong shape: {err}",
            info.name
        );
        checked += 1;
    }
    assert!(checked + cases.len() > 0, "{}: no error samples", info.name);
    for c in cases {
        match (info.call)(&c.sample.on(device)) {
            Ok(_) => panic!(
                "{} [{device}] {}: expected an error containing {:?}",
                info.name, c.sample.desc, c.message
            ),
            Err(e) => {
                assert!(
                    message_matches(&e.to_string(), c.message, device),
                    "{} [{device}] {}: error {:?} does not contain {:?}",
                    info.name,
                    c.sample.desc,
                    e.to_string(),
                    c.message
                );
                assert_eq!(
                    e.kind(),
                    c.kind,
                    "{} [{device}] {}: error {:?} is of kind {:?}, expected {:?}",
                    info.name,
                    c.sample.desc,
                    e.to_string(),
                    e.kind(),
                    c.kind
                );
            }
        }
    }
}
