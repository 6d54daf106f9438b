//! `Args`: turns a byte string into adversarial op arguments, and logs what it drew so a
//! failing call can be described and replayed. Past the end of the bytes every draw reads 0,
//! so any byte string (libfuzzer's or the stable runner's) decodes to some call.

use kiln_core::{DType, Device, Scalar, Tensor};

/// Ints a new user might pass: small values, dims, and the edges of i32/u32/i64.
const EDGE_INTS: [i64; 10] = [
    i64::MIN,
    -(1 << 31),
    -3,
    -1,
    1 << 31,
    1 << 32,
    1 << 62,
    i64::MAX,
    (1 << 31) - 1,
    -(1 << 62),
];

/// Floats that break naive arithmetic.
const EDGE_FLOATS: [f64; 14] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    2.0,
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    1e308,
    -1e308,
    1e-310,
    65504.0,
    3.0,
];

/// Which part of a fuzz call is running: a panic while building arguments is kiln's too,
/// but it belongs to the view op used to build them, not to the op under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Args,
    Call,
    Finish,
}

/// The argument source. One per call.
pub struct Args<'a> {
    data: &'a [u8],
    pos: usize,
    /// `name = value` lines describing every draw, in order.
    pub log: Vec<String>,
    pub phase: Phase,
    /// Allow ints like 2^62. The runner turns this off for an op once a huge value made it
    /// abort on allocation or hang, so the rest of the run still covers that op.
    pub huge: bool,
    /// Stop at [`Args::call`]: only draw and log the arguments.
    pub dry_run: bool,
    /// Set when the harness declined to make the call (see [`Args::skip`]).
    pub skipped: bool,
    /// Shape and dtype of the last tensor drawn, so later arguments often fit it.
    last_shape: Vec<usize>,
    last_dtype: DType,
}

impl<'a> Args<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Args {
            data,
            pos: 0,
            log: Vec::new(),
            phase: Phase::Args,
            huge: true,
            dry_run: false,
            skipped: false,
            last_shape: vec![2, 3],
            last_dtype: DType::F32,
        }
    }

    /// The next byte, or 0 past the end.
    pub fn byte(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }

    /// A number in `0..n` (n ≤ 256).
    pub fn below(&mut self, n: usize) -> usize {
        self.byte() as usize % n.max(1)
    }

    /// True with probability `pct`%.
    pub fn chance(&mut self, pct: u32) -> bool {
        (self.byte() as u32 * 100) / 256 < pct
    }

    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())]
    }

    fn note(&mut self, name: &str, value: impl std::fmt::Debug) {
        self.log.push(format!("{name} = {value:?}"));
    }

    /// Chooses which public form of the op to call.
    pub fn form(&mut self, labels: &[&str]) -> usize {
        let i = self.below(labels.len());
        self.log.insert(0, format!("form = {}", labels[i]));
        i
    }

    /// Marks the start of the op call proper.
    pub fn call(&mut self) {
        if self.dry_run {
            // Unwinds without running the panic hook; `describe` catches it.
            std::panic::resume_unwind(Box::new("dry run"));
        }
        self.phase = Phase::Call;
    }

    /// Uses the results the way a user would: sometimes a reduction, and `backward` when they
    /// carry a gradient. Errors are fine; only panics count.
    pub fn finish(&mut self, outs: &[&Tensor]) {
        self.phase = Phase::Finish;
        let reduce = self.chance(30);
        for t in outs {
            // A result can be a huge zero-stride view (`expand` to 2^62): reading it is a hang,
            // not a bug.
            let small = t
                .shape()
                .iter()
                .try_fold(1usize, |n, &d| n.checked_mul(d))
                .is_some_and(|n| n <= 1 << 20);
            if !small {
                continue;
            }
            if t.requires_grad() && t.is_floating_point() {
                let _ = t.sum().and_then(|s| s.backward());
            } else if reduce {
                let _ = t.sum();
            }
        }
    }

    // ---------------------------------------------------------------- scalars

    /// A dim-like or edge int.
    fn raw_int(&mut self) -> i64 {
        let nd = self.last_shape.len() as i64;
        match self.below(10) {
            0..=4 => self.below(2 * nd as usize + 3) as i64 - nd - 1,
            5..=7 => self.below(7) as i64 - 3,
            _ => self.edge_int(),
        }
    }

    /// An edge int; with `huge` off, -1 instead of anything past 2^20.
    fn edge_int(&mut self) -> i64 {
        let e = self.pick(&EDGE_INTS);
        if !self.huge && e.unsigned_abs() > 1 << 20 {
            -1
        } else {
            e
        }
    }

    pub fn int(&mut self, name: &str) -> i64 {
        let v = self.raw_int();
        self.note(name, v);
        v
    }

    pub fn opt_int(&mut self, name: &str) -> Option<i64> {
        let v = (!self.chance(30)).then(|| self.raw_int());
        self.note(name, v);
        v
    }

    fn raw_float(&mut self) -> f64 {
        self.pick(&EDGE_FLOATS)
    }

    pub fn float(&mut self, name: &str) -> f64 {
        let v = self.raw_float();
        self.note(name, v);
        v
    }

    pub fn opt_float(&mut self, name: &str) -> Option<f64> {
        let v = (!self.chance(30)).then(|| self.raw_float());
        self.note(name, v);
        v
    }

    pub fn bool(&mut self, name: &str) -> bool {
        let v = self.chance(50);
        self.note(name, v);
        v
    }

    /// A `bool[N]` (a backward op's `output_mask`): usually three flags, sometimes another
    /// length, which the op must reject.
    pub fn bool_list(&mut self, name: &str) -> Vec<bool> {
        let n = if self.chance(85) { 3 } else { self.below(5) };
        let v: Vec<bool> = (0..n).map(|_| self.chance(70)).collect();
        self.note(name, &v);
        v
    }

    pub fn opt_bool(&mut self, name: &str) -> Option<bool> {
        let v = (!self.chance(30)).then(|| self.chance(50));
        self.note(name, v);
        v
    }

    fn raw_scalar(&mut self) -> Scalar {
        match self.below(3) {
            0 => Scalar::Int(self.raw_int()),
            1 => Scalar::Float(self.raw_float()),
            _ => Scalar::Bool(self.chance(50)),
        }
    }

    pub fn scalar(&mut self, name: &str) -> Scalar {
        let v = self.raw_scalar();
        self.note(name, v);
        v
    }

    pub fn opt_scalar(&mut self, name: &str) -> Option<Scalar> {
        let v = (!self.chance(30)).then(|| self.raw_scalar());
        self.note(name, v);
        v
    }

    fn raw_dtype(&mut self) -> DType {
        // Often f32, so that dtype-restricted ops get past their dtype check.
        if self.chance(35) {
            DType::F32
        } else {
            self.pick(&DType::ALL)
        }
    }

    pub fn dtype(&mut self, name: &str) -> DType {
        let v = self.raw_dtype();
        self.note(name, v);
        v
    }

    pub fn opt_dtype(&mut self, name: &str) -> Option<DType> {
        let v = (!self.chance(40)).then(|| self.raw_dtype());
        self.note(name, v);
        v
    }

    /// A device; CUDA ones are drawn too, so a build or machine without CUDA is exercised.
    pub fn device(&mut self, name: &str) -> Device {
        let v = self.pick(&[Device::Cpu, Device::Cpu, Device::Cuda(0), Device::Cuda(7)]);
        self.note(name, v);
        v
    }

    pub fn opt_device(&mut self, name: &str) -> Option<Device> {
        let v = (!self.chance(40)).then(|| self.device("_"));
        self.note(name, v);
        v
    }

    pub fn string(&mut self, name: &str) -> String {
        let v = self
            .pick(&[
                "none",
                "tanh",
                "",
                "NONE",
                "tanh ",
                "\u{0}",
                "floor",
                "trunc",
                "reflect",
                "replicate",
                "circular",
                "constant",
                "ij",
                "xy",
                "reduced",
                "r",
                "complete",
                "ij,jk->ik",
                "...ij->ji",
                "ii->i",
                "i,i",
            ])
            .to_string();
        self.note(name, &v);
        v
    }

    pub fn opt_string(&mut self, name: &str) -> Option<String> {
        if self.chance(30) {
            self.note(name, Option::<String>::None);
            return None;
        }
        Some(self.string(name))
    }

    // ---------------------------------------------------------------- int lists

    fn raw_int_list(&mut self) -> Vec<i64> {
        let shape: Vec<i64> = self.last_shape.iter().map(|&d| d as i64).collect();
        let nd = shape.len();
        let mut v = match self.below(6) {
            // The last tensor's shape, reversed, or with a -1: often valid for view ops.
            0 => shape.clone(),
            1 => shape.iter().rev().copied().collect(),
            2 => {
                let mut s = shape.clone();
                if !s.is_empty() {
                    let i = self.below(nd);
                    s[i] = -1;
                }
                s
            }
            // A permutation-like list of dims.
            3 => {
                let mut p: Vec<i64> = (0..nd as i64).collect();
                for i in (1..nd).rev() {
                    let j = self.below(i + 1);
                    p.swap(i, j);
                }
                p
            }
            _ => {
                let n = self.below(5);
                (0..n).map(|_| self.below(8) as i64 - 2).collect()
            }
        };
        if self.chance(12) {
            // An edge value in some position, huge sizes included (they only reach kiln as
            // size arguments, never as tensors the harness allocates).
            let e = self.edge_int();
            if v.is_empty() || self.chance(30) {
                v.push(e);
            } else {
                let i = self.below(v.len());
                v[i] = e;
            }
        }
        v
    }

    pub fn int_list(&mut self, name: &str) -> Vec<i64> {
        let v = self.raw_int_list();
        self.note(name, &v);
        v
    }

    pub fn opt_int_list(&mut self, name: &str) -> Option<Vec<i64>> {
        let v = (!self.chance(30)).then(|| self.raw_int_list());
        self.note(name, &v);
        v
    }

    // ---------------------------------------------------------------- tensors

    fn shape(&mut self) -> Vec<usize> {
        // Other tensors often match or broadcast against the previous one.
        match self.below(10) {
            0..=3 => self.last_shape.clone(),
            4 => {
                let mut s = self.last_shape.clone();
                for d in s.iter_mut() {
                    if self.chance(40) {
                        *d = 1;
                    }
                }
                if !s.is_empty() && self.chance(30) {
                    s.remove(0);
                }
                s
            }
            _ => {
                let nd = [0, 1, 1, 2, 2, 2, 3, 3, 4][self.below(9)];
                (0..nd)
                    .map(|_| [0, 1, 1, 2, 2, 3, 3, 4, 5][self.below(9)])
                    .collect()
            }
        }
    }

    /// Element values as f64 before conversion: edge values, small ints, indices.
    fn values(&mut self, n: usize, index_like: bool) -> Vec<f64> {
        (0..n)
            .map(|_| match self.below(10) {
                0..=5 if index_like => self.below(8) as f64 - 2.0,
                0..=5 => self.below(9) as f64 - 4.0,
                6..=7 => self.raw_float(),
                _ => self.pick(&EDGE_INTS) as f64,
            })
            .collect()
    }

    fn dtype_for(&mut self, name: &str) -> DType {
        let index_like = index_like(name);
        let mask_like = name == "mask" || name == "condition";
        if index_like && self.chance(70) {
            DType::I64
        } else if mask_like && self.chance(70) {
            DType::Bool
        } else if self.chance(45) {
            self.last_dtype
        } else {
            self.raw_dtype()
        }
    }

    /// A tensor: contiguous or one of several strided views, sometimes requiring grad.
    fn raw_tensor(&mut self, name: &str) -> (Tensor, String) {
        let dtype = self.dtype_for(name);
        let shape = self.shape();
        let grad = dtype.is_floating_point() && self.chance(25);
        let nd = shape.len();
        let how = if nd == 0 { 0 } else { self.below(6) };
        let (t, via) = match build_view(self, how, &shape, dtype, grad, name) {
            Ok(x) => x,
            // A view op refusing a valid request is not what this call tests; fall back.
            Err(_) => (leaf(self, &shape, dtype, grad, name), "contiguous".into()),
        };
        self.last_shape = t.shape().to_vec();
        self.last_dtype = dtype;
        let desc = format!(
            "{:?}{:?} strides {:?} offset {} ({via}{})",
            dtype,
            t.shape(),
            t.strides(),
            t.storage_offset(),
            if grad { ", requires_grad" } else { "" }
        );
        (t, desc)
    }

    pub fn tensor(&mut self, name: &str) -> Tensor {
        let (t, d) = self.raw_tensor(name);
        self.log.push(format!("{name} = {d}"));
        t
    }

    pub fn opt_tensor(&mut self, name: &str) -> Option<Tensor> {
        if self.chance(30) {
            self.note(name, None::<()>);
            return None;
        }
        Some(self.tensor(name))
    }

    pub fn tensor_list(&mut self, name: &str) -> Vec<Tensor> {
        let n = self.below(4);
        let mut v = Vec::new();
        for i in 0..n {
            let (t, d) = self.raw_tensor(name);
            self.log.push(format!("{name}[{i}] = {d}"));
            v.push(t);
        }
        if n == 0 {
            self.note(name, "[]");
        }
        v
    }

    /// A `Tensor?[]` (`index.Tensor`'s `indices`): 0–4 entries, each absent or drawn as an
    /// index (mostly int64, values in [-2, 6)) or, a quarter of the time, as a mask (mostly
    /// bool), so the list usually gets past the dtype checks.
    pub fn opt_tensor_list(&mut self, name: &str) -> Vec<Option<Tensor>> {
        let n = self.below(5);
        let mut v = Vec::new();
        for i in 0..n {
            if self.chance(30) {
                self.log.push(format!("{name}[{i}] = None"));
                v.push(None);
                continue;
            }
            let like = if self.chance(25) { "mask" } else { "index" };
            let (t, d) = self.raw_tensor(like);
            self.log.push(format!("{name}[{i}] = {d}"));
            v.push(Some(t));
        }
        if n == 0 {
            self.note(name, "[]");
        }
        v
    }
}

/// Arguments that hold indices (`index`, `indices`, `offsets`), drawn mostly as small int64
/// values so calls get past the dtype checks.
fn index_like(name: &str) -> bool {
    name.contains("index") || name.contains("indices") || name == "offsets"
}

/// A contiguous tensor with adversarial values.
fn leaf(a: &mut Args, shape: &[usize], dtype: DType, grad: bool, name: &str) -> Tensor {
    let n = shape.iter().product();
    let vals = a.values(n, index_like(name));
    let t = typed(&vals, shape, dtype);
    if grad {
        t.requires_grad_(true).expect("float leaf can require grad")
    } else {
        t
    }
}

/// `vals` converted to `dtype` on the Rust side (so building arguments exercises no kiln op).
fn typed(vals: &[f64], shape: &[usize], dtype: DType) -> Tensor {
    fn mk<T: kiln_core::BufferElement>(v: Vec<T>, shape: &[usize]) -> Tensor {
        Tensor::from_vec(v, shape).expect("length matches shape")
    }
    let ints = || vals.iter().map(|&v| v as i64);
    match dtype {
        DType::Bool => mk(vals.iter().map(|&v| v != 0.0).collect(), shape),
        DType::U8 => mk(ints().map(|v| v as u8).collect(), shape),
        DType::I8 => mk(ints().map(|v| v as i8).collect(), shape),
        DType::I16 => mk(ints().map(|v| v as i16).collect(), shape),
        DType::I32 => mk(ints().map(|v| v as i32).collect(), shape),
        DType::I64 => mk(ints().collect(), shape),
        DType::F16 => mk(
            vals.iter().map(|&v| half::f16::from_f64(v)).collect(),
            shape,
        ),
        DType::BF16 => mk(
            vals.iter().map(|&v| half::bf16::from_f64(v)).collect(),
            shape,
        ),
        DType::F32 => mk(vals.iter().map(|&v| v as f32).collect(), shape),
        DType::F64 => mk(vals.to_vec(), shape),
    }
}

/// A view with shape `shape` built by kiln's own view ops from a larger or smaller leaf.
fn build_view(
    a: &mut Args,
    how: usize,
    shape: &[usize],
    dtype: DType,
    grad: bool,
    name: &str,
) -> kiln_core::Result<(Tensor, String)> {
    let nd = shape.len() as i64;
    Ok(match how {
        // Transposed: a leaf of the shape with two dims swapped, transposed back.
        1 => {
            let (i, j) = (a.below(nd as usize), a.below(nd as usize));
            let mut s = shape.to_vec();
            s.swap(i, j);
            let base = leaf(a, &s, dtype, grad, name);
            (
                base.transpose(i as i64, j as i64)?,
                format!("transpose({i}, {j}) of {s:?}"),
            )
        }
        // Every other element along one dim, from an offset.
        2 => {
            let k = a.below(nd as usize);
            let mut s = shape.to_vec();
            s[k] = s[k] * 2 + 1;
            let base = leaf(a, &s, dtype, grad, name);
            let v = base.slice_with(k as i64, Some(1), None, 2)?;
            (v, format!("slice(dim {k}, 1.., step 2) of {s:?}"))
        }
        // Broadcast: size-1 dims expanded, stride 0.
        3 => {
            let s: Vec<usize> = shape
                .iter()
                .map(|&d| if a.chance(50) { 1 } else { d })
                .collect();
            let base = leaf(a, &s, dtype, grad, name);
            let size: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
            (base.expand(&size)?, format!("expand of {s:?}"))
        }
        // as_strided over a 1-d storage with small, possibly overlapping strides.
        4 => {
            let strides: Vec<i64> = shape.iter().map(|_| a.below(4) as i64).collect();
            let offset = a.below(3);
            let span: usize = shape
                .iter()
                .zip(&strides)
                .map(|(&d, &s)| d.saturating_sub(1) * s as usize)
                .sum();
            let n = offset + span + 1;
            let base = leaf(a, &[n], dtype, grad, name);
            let size: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
            let v = base.as_strided_with(&size, &strides, Some(offset as i64))?;
            (
                v,
                format!("as_strided(stride {strides:?}, offset {offset}) of [{n}]"),
            )
        }
        _ => (leaf(a, shape, dtype, grad, name), "contiguous".into()),
    })
}

impl Args<'_> {
    /// A `usize` size: an int reinterpreted, so -1 becomes `usize::MAX` as a careless cast would.
    pub fn size(&mut self, name: &str) -> usize {
        let v = self.raw_int();
        let v = self.usize_of(v);
        self.note(name, v);
        v
    }

    /// `v as usize`, or `|v|` with `huge` off (-1 as usize is huge).
    fn usize_of(&self, v: i64) -> usize {
        if self.huge {
            v as usize
        } else {
            v.unsigned_abs() as usize
        }
    }

    /// A `&[usize]` shape for the constructors, drawn like an int list.
    pub fn sizes(&mut self, name: &str) -> Vec<usize> {
        let v: Vec<usize> = (self.raw_int_list().iter())
            .map(|&d| self.usize_of(d))
            .collect();
        self.note(name, &v);
        v
    }

    /// Records that the harness skipped this call because it would allocate over
    /// 64 MiB; see the README.
    pub fn skip(&mut self) {
        self.skipped = true;
        self.log.push("skipped: would allocate > 64 MiB".into());
    }
}
