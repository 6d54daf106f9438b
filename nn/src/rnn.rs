//! Recurrent layers: `RNN`, `LSTM`, `GRU` (multi-layer, bidirectional, batch_first) and the
//! single-step `RNNCell`, `LSTMCell`, `GRUCell`. Built from core ops (`linear`, `sigmoid`,
//! `tanh`, `stack`, `cat`), so autograd (and double backward) goes through them.
//!
//! Gate layout is PyTorch's: LSTM rows `[i, f, g, o]`, GRU rows `[r, z, n]` with
//! `n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn))`, so state dicts load either way.

use crate::init;
use crate::module::{Module, Visitor, VisitorMut};
use crate::TensorKind;
use kiln_core::{DType, Error, Result, Tensor};

/// `nonlinearity` of [`RNN`] / [`RNNCell`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RnnNonlinearity {
    #[default]
    Tanh,
    Relu,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Rnn(RnnNonlinearity),
    Lstm,
    Gru,
}

impl Mode {
    fn gates(self) -> usize {
        match self {
            Mode::Rnn(_) => 1,
            Mode::Lstm => 4,
            Mode::Gru => 3,
        }
    }
    fn name(self) -> &'static str {
        match self {
            Mode::Rnn(_) => "RNN",
            Mode::Lstm => "LSTM",
            Mode::Gru => "GRU",
        }
    }
}

/// Constructor options shared by [`RNN`], [`LSTM`] and [`GRU`]; `Default` is PyTorch's
/// (`num_layers=1, bias=True, batch_first=False, dropout=0, bidirectional=False,
/// proj_size=0, nonlinearity='tanh'`, float32).
#[derive(Clone, Copy, Debug)]
pub struct RnnOptions {
    pub num_layers: usize,
    pub bias: bool,
    pub batch_first: bool,
    /// Dropout on the outputs of every layer but the last, in training.
    pub dropout: f64,
    pub bidirectional: bool,
    /// LSTM only: project `h` to this size with `weight_hr_l{k}` (0 = off).
    pub proj_size: usize,
    /// RNN only.
    pub nonlinearity: RnnNonlinearity,
    pub dtype: DType,
}

impl Default for RnnOptions {
    fn default() -> Self {
        RnnOptions {
            num_layers: 1,
            bias: true,
            batch_first: false,
            dropout: 0.0,
            bidirectional: false,
            proj_size: 0,
            nonlinearity: RnnNonlinearity::Tanh,
            dtype: DType::F32,
        }
    }
}

/// The weights of one layer and direction.
struct Cell<'a> {
    w_ih: &'a Tensor,
    w_hh: &'a Tensor,
    b_ih: Option<&'a Tensor>,
    b_hh: Option<&'a Tensor>,
    w_hr: Option<&'a Tensor>,
}

/// One step given the input projection `xw = x W_ihᵀ + b_ih`: returns `(h', c')` (`c'` only
/// for LSTM).
fn step(
    mode: Mode,
    xw: &Tensor,
    h: &Tensor,
    c: Option<&Tensor>,
    cell: &Cell<'_>,
) -> Result<(Tensor, Option<Tensor>)> {
    let hw = kiln_core::linear_with(h, cell.w_hh, cell.b_hh)?;
    match mode {
        Mode::Rnn(nl) => {
            let pre = xw.add(&hw)?;
            let h = match nl {
                RnnNonlinearity::Tanh => pre.tanh()?,
                RnnNonlinearity::Relu => pre.relu()?,
            };
            Ok((h, None))
        }
        Mode::Lstm => {
            let g = xw.add(&hw)?.chunk_with(4, -1)?;
            let i = g[0].sigmoid()?;
            let f = g[1].sigmoid()?;
            let gg = g[2].tanh()?;
            let o = g[3].sigmoid()?;
            let c = c.expect("LSTM cell state");
            let c2 = f.mul(c)?.add(&i.mul(&gg)?)?;
            let mut h2 = o.mul(&c2.tanh()?)?;
            if let Some(w_hr) = cell.w_hr {
                h2 = kiln_core::linear(&h2, w_hr)?;
            }
            Ok((h2, Some(c2)))
        }
        Mode::Gru => {
            let gi = xw.chunk_with(3, -1)?;
            let gh = hw.chunk_with(3, -1)?;
            let r = gi[0].add(&gh[0])?.sigmoid()?;
            let z = gi[1].add(&gh[1])?.sigmoid()?;
            let n = gi[2].add(&r.mul(&gh[2])?)?.tanh()?;
            // (1 - z) ⊙ n + z ⊙ h
            let h2 = n.add(&z.mul(&h.sub(&n)?)?)?;
            Ok((h2, None))
        }
    }
}

fn shape_str(s: &[usize]) -> String {
    format!(
        "({})",
        s.iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// The shared multi-layer implementation behind `RNN`, `LSTM`, `GRU`.
struct RnnBase {
    mode: Mode,
    input_size: usize,
    hidden_size: usize,
    num_layers: usize,
    bias: bool,
    batch_first: bool,
    dropout: f64,
    bidirectional: bool,
    proj_size: usize,
    training: bool,
    /// PyTorch's `_flat_weights_names` and `_flat_weights`, in its order.
    names: Vec<String>,
    weights: Vec<Tensor>,
}

impl RnnBase {
    fn new(mode: Mode, input_size: usize, hidden_size: usize, o: RnnOptions) -> Result<Self> {
        let name = mode.name();
        if !(0.0..=1.0).contains(&o.dropout) {
            return Err(Error::value(
                name,
                "dropout should be a number in range [0, 1] representing the probability of an element being zeroed",
            ));
        }
        if hidden_size == 0 {
            return Err(Error::value(name, "hidden_size must be greater than zero"));
        }
        if o.num_layers == 0 {
            return Err(Error::value(name, "num_layers must be greater than zero"));
        }
        if o.proj_size > 0 && mode != Mode::Lstm {
            return Err(Error::value(
                name,
                "proj_size argument is only supported for LSTM, not RNN or GRU",
            ));
        }
        if o.proj_size >= hidden_size && o.proj_size > 0 {
            return Err(Error::value(
                name,
                "proj_size has to be smaller than hidden_size",
            ));
        }
        let dirs = if o.bidirectional { 2 } else { 1 };
        let real_hidden = if o.proj_size > 0 {
            o.proj_size
        } else {
            hidden_size
        };
        let gate = mode.gates() * hidden_size;
        let stdv = 1.0 / (hidden_size as f64).sqrt();
        let mut names = Vec::new();
        let mut weights = Vec::new();
        for layer in 0..o.num_layers {
            for dir in 0..dirs {
                let layer_in = if layer == 0 {
                    input_size
                } else {
                    real_hidden * dirs
                };
                let sfx = if dir == 1 { "_reverse" } else { "" };
                let mut shapes = vec![
                    (format!("weight_ih_l{layer}{sfx}"), vec![gate, layer_in]),
                    (format!("weight_hh_l{layer}{sfx}"), vec![gate, real_hidden]),
                ];
                if o.bias {
                    shapes.push((format!("bias_ih_l{layer}{sfx}"), vec![gate]));
                    shapes.push((format!("bias_hh_l{layer}{sfx}"), vec![gate]));
                }
                if o.proj_size > 0 {
                    shapes.push((
                        format!("weight_hr_l{layer}{sfx}"),
                        vec![o.proj_size, hidden_size],
                    ));
                }
                for (n, s) in shapes {
                    let t = Tensor::empty(&s, o.dtype)?;
                    init::uniform_(&t, -stdv, stdv)?;
                    names.push(n);
                    weights.push(t.requires_grad_(true)?);
                }
            }
        }
        Ok(RnnBase {
            mode,
            input_size,
            hidden_size,
            num_layers: o.num_layers,
            bias: o.bias,
            batch_first: o.batch_first,
            dropout: o.dropout,
            bidirectional: o.bidirectional,
            proj_size: o.proj_size,
            training: true,
            names,
            weights,
        })
    }

    fn dirs(&self) -> usize {
        if self.bidirectional {
            2
        } else {
            1
        }
    }

    fn real_hidden(&self) -> usize {
        if self.proj_size > 0 {
            self.proj_size
        } else {
            self.hidden_size
        }
    }

    fn cell(&self, layer: usize, dir: usize) -> Cell<'_> {
        let per = 2 + 2 * usize::from(self.bias) + usize::from(self.proj_size > 0);
        let w = &self.weights[(layer * self.dirs() + dir) * per..][..per];
        let (b_ih, b_hh, rest) = if self.bias {
            (Some(&w[2]), Some(&w[3]), &w[4..])
        } else {
            (None, None, &w[2..])
        };
        Cell {
            w_ih: &w[0],
            w_hh: &w[1],
            b_ih,
            b_hh,
            w_hr: rest.first(),
        }
    }

    /// Checks a state tensor's shape: `(layers·dirs, N, size)`, or without `N` unbatched.
    fn check_hidden(
        &self,
        t: &Tensor,
        batched: bool,
        batch: usize,
        size: usize,
        what: &str,
    ) -> Result<()> {
        let name = self.mode.name();
        let want_dim = if batched { 3 } else { 2 };
        if t.dim() != want_dim {
            return Err(Error::shape(
                name,
                if batched {
                    format!(
                        "For batched 3-D input, hx and cx should also be 3-D but got ({}-D) tensor",
                        t.dim()
                    )
                } else {
                    format!(
                        "For unbatched 2-D input, hx and cx should also be 2-D but got ({}-D) tensor",
                        t.dim()
                    )
                },
            ));
        }
        let mut want = vec![self.num_layers * self.dirs()];
        if batched {
            want.push(batch);
        }
        want.push(size);
        if t.shape() != want.as_slice() {
            return Err(Error::shape(
                name,
                format!(
                    "Expected {what} size {}, got {:?}",
                    shape_str(&want),
                    t.shape()
                ),
            ));
        }
        Ok(())
    }

    /// Runs the stack. `hx`: `h_0` and (LSTM) `c_0`. Returns the output and `h_n`, `c_n`.
    fn run(
        &self,
        input: &Tensor,
        hx: Option<(&Tensor, Option<&Tensor>)>,
    ) -> Result<(Tensor, Tensor, Option<Tensor>)> {
        let name = self.mode.name();
        let batched = match input.dim() {
            3 => true,
            2 => false,
            d => {
                // The message after the layer's name, as PyTorch words it (its RNN says
                // "tensor").
                let shape = input.shape();
                let what = if name == "RNN" { "D tensor" } else { "D" };
                let msg = format!(
                    "Expected input to be 2D or 3D, got {d}{what} instead (input of shape {shape:?})"
                );
                return Err(Error::value(name, msg));
            }
        };
        let in_size = input.shape()[input.dim() - 1];
        if in_size != self.input_size {
            return Err(Error::shape(
                name,
                format!(
                    "input.size(-1) must be equal to input_size. Expected {}, got {in_size} (input of shape {:?})",
                    self.input_size,
                    input.shape()
                ),
            ));
        }
        // Time-major (L, N, H_in).
        let x = if !batched {
            input.unsqueeze(1)?
        } else if self.batch_first {
            input.transpose(0, 1)?
        } else {
            input.clone()
        };
        let (seq, batch) = (x.shape()[0], x.shape()[1]);
        let dirs = self.dirs();
        let n_states = self.num_layers * dirs;
        let real_hidden = self.real_hidden();
        let lstm = self.mode == Mode::Lstm;
        let zeros =
            |size: usize| Tensor::full_on([n_states, batch, size], 0.0, x.dtype(), x.device());
        let (h0, c0) = match hx {
            None => (
                zeros(real_hidden)?,
                lstm.then(|| zeros(self.hidden_size)).transpose()?,
            ),
            Some((h, c)) => {
                let (hw, cw) = if lstm {
                    ("hidden[0]", "hidden[1]")
                } else {
                    ("hidden", "hidden")
                };
                self.check_hidden(h, batched, batch, real_hidden, hw)?;
                let c = match (lstm, c) {
                    (true, Some(c)) => {
                        self.check_hidden(c, batched, batch, self.hidden_size, cw)?;
                        Some(if batched { c.clone() } else { c.unsqueeze(1)? })
                    }
                    (true, None) => {
                        return Err(Error::value(name, "needs both h_0 and c_0"));
                    }
                    (false, _) => None,
                };
                (if batched { h.clone() } else { h.unsqueeze(1)? }, c)
            }
        };
        let mut layer_input = x;
        let mut h_n = Vec::with_capacity(n_states);
        let mut c_n = Vec::with_capacity(n_states);
        for layer in 0..self.num_layers {
            let mut dir_outs = Vec::with_capacity(dirs);
            for dir in 0..dirs {
                let cell = self.cell(layer, dir);
                let idx = (layer * dirs + dir) as i64;
                let mut h = h0.select(0, idx)?;
                let mut c = c0.as_ref().map(|c| c.select(0, idx)).transpose()?;
                let xw = kiln_core::linear_with(&layer_input, cell.w_ih, cell.b_ih)?;
                let mut outs: Vec<Tensor> = Vec::with_capacity(seq);
                let steps: Box<dyn Iterator<Item = usize>> = if dir == 0 {
                    Box::new(0..seq)
                } else {
                    Box::new((0..seq).rev())
                };
                for t in steps {
                    let (h2, c2) =
                        step(self.mode, &xw.select(0, t as i64)?, &h, c.as_ref(), &cell)?;
                    h = h2;
                    c = c2;
                    outs.push(h.clone());
                }
                if dir == 1 {
                    outs.reverse();
                }
                let out = if seq == 0 {
                    Tensor::full_on([0, batch, real_hidden], 0.0, h.dtype(), h.device())?
                } else {
                    kiln_core::stack(&outs)?
                };
                dir_outs.push(out);
                h_n.push(h);
                if let Some(c) = c {
                    c_n.push(c);
                }
            }
            layer_input = if dirs == 1 {
                dir_outs.pop().expect("one direction")
            } else {
                kiln_core::cat_with(&dir_outs, -1)?
            };
            if self.dropout > 0.0 && self.training && layer + 1 < self.num_layers {
                layer_input = kiln_core::dropout(&layer_input, self.dropout, true)?;
            }
        }
        let mut out = layer_input;
        let mut h_n = kiln_core::stack(&h_n)?;
        let mut c_n = if lstm {
            Some(kiln_core::stack(&c_n)?)
        } else {
            None
        };
        if !batched {
            out = out.squeeze_dim(1)?;
            h_n = h_n.squeeze_dim(1)?;
            c_n = c_n.map(|c| c.squeeze_dim(1)).transpose()?;
        } else if self.batch_first {
            out = out.transpose(0, 1)?;
        }
        Ok((out, h_n, c_n))
    }

    fn visit(&self, v: &mut dyn Visitor) {
        v.training(self.training);
        for (n, w) in self.names.iter().zip(&self.weights) {
            v.tensor(n, TensorKind::Parameter, w);
        }
    }

    fn visit_mut(&mut self, v: &mut dyn VisitorMut) -> Result<()> {
        v.training(&mut self.training);
        for (n, w) in self.names.iter().zip(self.weights.iter_mut()) {
            v.tensor(n, TensorKind::Parameter, w)?;
        }
        Ok(())
    }
}

macro_rules! rnn_layer {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[allow(clippy::upper_case_acronyms)]
        pub struct $name {
            base: RnnBase,
        }

        /// Parameters are named as PyTorch's flat weights (`weight_ih_l0`, …), which depend on
        /// the layer count, so the visit is written by hand.
        impl Module for $name {
            fn visit(&self, v: &mut dyn Visitor) {
                self.base.visit(v)
            }
            fn visit_mut(&mut self, v: &mut dyn VisitorMut) -> Result<()> {
                self.base.visit_mut(v)
            }
        }

        impl $name {
            pub fn input_size(&self) -> usize {
                self.base.input_size
            }
            pub fn hidden_size(&self) -> usize {
                self.base.hidden_size
            }
            pub fn num_layers(&self) -> usize {
                self.base.num_layers
            }
            pub fn bidirectional(&self) -> bool {
                self.base.bidirectional
            }
            pub fn batch_first(&self) -> bool {
                self.base.batch_first
            }
            pub fn dropout(&self) -> f64 {
                self.base.dropout
            }
            /// The flat weights in PyTorch's order (`_flat_weights`).
            pub fn all_weights(&self) -> &[Tensor] {
                &self.base.weights
            }
            /// Their names (`_flat_weights_names`).
            pub fn weight_names(&self) -> &[String] {
                &self.base.names
            }
        }
    };
}

rnn_layer!(
    /// `nn.RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True,
    /// batch_first=False, dropout=0.0, bidirectional=False)`:
    /// `h_t = act(x_t W_ihᵀ + b_ih + h_{t-1} W_hhᵀ + b_hh)`.
    RNN
);
rnn_layer!(
    /// `nn.LSTM(input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
    /// dropout=0.0, bidirectional=False, proj_size=0)`, gates `[i, f, g, o]`.
    LSTM
);
rnn_layer!(
    /// `nn.GRU(input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
    /// dropout=0.0, bidirectional=False)`, gates `[r, z, n]`.
    GRU
);

impl RNN {
    /// `RNN(input_size, hidden_size)` with PyTorch's defaults, float32.
    pub fn new(input_size: usize, hidden_size: usize) -> Result<Self> {
        Self::with_options(input_size, hidden_size, RnnOptions::default())
    }
    pub fn with_options(input_size: usize, hidden_size: usize, o: RnnOptions) -> Result<Self> {
        Ok(RNN {
            base: RnnBase::new(Mode::Rnn(o.nonlinearity), input_size, hidden_size, o)?,
        })
    }
    /// `input`: `(L, N, H_in)` (`(N, L, H_in)` with `batch_first`) or unbatched `(L, H_in)`;
    /// `h_0`: `(num_layers·dirs, N, H)` (zeros when `None`). Returns `(output, h_n)`.
    pub fn forward(&self, input: &Tensor, h_0: Option<&Tensor>) -> Result<(Tensor, Tensor)> {
        let (o, h, _) = self.base.run(input, h_0.map(|h| (h, None)))?;
        Ok((o, h))
    }
}

impl LSTM {
    /// `LSTM(input_size, hidden_size)` with PyTorch's defaults, float32.
    pub fn new(input_size: usize, hidden_size: usize) -> Result<Self> {
        Self::with_options(input_size, hidden_size, RnnOptions::default())
    }
    pub fn with_options(input_size: usize, hidden_size: usize, o: RnnOptions) -> Result<Self> {
        Ok(LSTM {
            base: RnnBase::new(Mode::Lstm, input_size, hidden_size, o)?,
        })
    }
    pub fn proj_size(&self) -> usize {
        self.base.proj_size
    }
    /// `input`: `(L, N, H_in)` (`(N, L, H_in)` with `batch_first`) or unbatched `(L, H_in)`;
    /// `hx = (h_0, c_0)`: `(num_layers·dirs, N, H_out)` and `(num_layers·dirs, N, H)` (zeros
    /// when `None`). Returns `(output, (h_n, c_n))`.
    pub fn forward(
        &self,
        input: &Tensor,
        hx: Option<(&Tensor, &Tensor)>,
    ) -> Result<(Tensor, (Tensor, Tensor))> {
        let (o, h, c) = self.base.run(input, hx.map(|(h, c)| (h, Some(c))))?;
        Ok((o, (h, c.expect("LSTM returns c_n"))))
    }
}

impl GRU {
    /// `GRU(input_size, hidden_size)` with PyTorch's defaults, float32.
    pub fn new(input_size: usize, hidden_size: usize) -> Result<Self> {
        Self::with_options(input_size, hidden_size, RnnOptions::default())
    }
    pub fn with_options(input_size: usize, hidden_size: usize, o: RnnOptions) -> Result<Self> {
        Ok(GRU {
            base: RnnBase::new(Mode::Gru, input_size, hidden_size, o)?,
        })
    }
    /// As [`RNN::forward`]: returns `(output, h_n)`.
    pub fn forward(&self, input: &Tensor, h_0: Option<&Tensor>) -> Result<(Tensor, Tensor)> {
        let (o, h, _) = self.base.run(input, h_0.map(|h| (h, None)))?;
        Ok((o, h))
    }
}

/// Shared single-step cell: `weight_ih [G·H, in]`, `weight_hh [G·H, H]`, `bias_ih`, `bias_hh`.
fn cell_params(
    mode: Mode,
    input_size: usize,
    hidden_size: usize,
    bias: bool,
    dtype: DType,
) -> Result<(Tensor, Tensor, Option<Tensor>, Option<Tensor>)> {
    let g = mode.gates() * hidden_size;
    let stdv = if hidden_size > 0 {
        1.0 / (hidden_size as f64).sqrt()
    } else {
        0.0
    };
    let mk = |s: &[usize]| -> Result<Tensor> {
        let t = Tensor::empty(s, dtype)?;
        init::uniform_(&t, -stdv, stdv)?;
        t.requires_grad_(true)
    };
    let w_ih = mk(&[g, input_size])?;
    let w_hh = mk(&[g, hidden_size])?;
    let (b_ih, b_hh) = if bias {
        (Some(mk(&[g])?), Some(mk(&[g])?))
    } else {
        (None, None)
    };
    Ok((w_ih, w_hh, b_ih, b_hh))
}

/// Checks a cell's input `(N, in)` / `(in)` and state, returns them batched.
fn cell_inputs(
    name: &str,
    input: &Tensor,
    input_size: usize,
    hidden_size: usize,
    states: &[Option<&Tensor>],
) -> Result<(bool, Tensor, Vec<Option<Tensor>>)> {
    let batched = match input.dim() {
        2 => true,
        1 => false,
        d => {
            return Err(Error::shape(
                name,
                format!(
                    "Expected input to be 1D or 2D, got {d}D instead (input of shape {:?})",
                    input.shape()
                ),
            ))
        }
    };
    let got = input.shape()[input.dim() - 1];
    if got != input_size {
        return Err(Error::shape(
            name,
            format!(
                "input has inconsistent input_size: got {got} expected {input_size} (input of shape {:?})",
                input.shape()
            ),
        ));
    }
    let x = if batched {
        input.clone()
    } else {
        input.unsqueeze(0)?
    };
    let n = x.shape()[0];
    // PyTorch's checks and messages (`hidden{i}` is the i-th state: h, then c for LSTMCell).
    let mut out = Vec::new();
    for (i, s) in states.iter().enumerate() {
        let Some(s) = s else {
            out.push(None);
            continue;
        };
        let d = s.dim();
        if d != 1 && d != 2 {
            let what = if name == "LSTMCell" {
                format!("hx[{i}]")
            } else {
                "hidden".to_string()
            };
            return Err(Error::shape(
                name,
                format!("Expected {what} to be 1D or 2D, got {d}D instead"),
            ));
        }
        let s = if batched {
            (*s).clone()
        } else {
            s.unsqueeze(0)?
        };
        if s.dim() != 2 {
            return Err(Error::shape(
                name,
                format!(
                    "Expected 2D hidden{i} (batch x hidden_size), but got {}D tensor",
                    s.dim()
                ),
            ));
        }
        let (hb, hs) = (s.shape()[0], s.shape()[1]);
        if hb != n {
            return Err(Error::shape(
                name,
                format!("Input batch size {n} doesn't match hidden{i} batch size {hb}"),
            ));
        }
        if hs != hidden_size {
            return Err(Error::shape(
                name,
                format!("hidden{i} has inconsistent hidden_size: got {hs}, expected {hidden_size}"),
            ));
        }
        out.push(Some(s));
    }
    Ok((batched, x, out))
}

macro_rules! cell_layer {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(crate::Module)]
        #[module(crate = crate)]
        pub struct $name {
            pub weight_ih: Tensor,
            pub weight_hh: Tensor,
            pub bias_ih: Option<Tensor>,
            pub bias_hh: Option<Tensor>,
            pub input_size: usize,
            pub hidden_size: usize,
            #[module(skip)]
            mode: Mode,
        }

        impl $name {
            fn cell(&self) -> Cell<'_> {
                Cell {
                    w_ih: &self.weight_ih,
                    w_hh: &self.weight_hh,
                    b_ih: self.bias_ih.as_ref(),
                    b_hh: self.bias_hh.as_ref(),
                    w_hr: None,
                }
            }
            fn step(
                &self,
                input: &Tensor,
                h: Option<&Tensor>,
                c: Option<&Tensor>,
            ) -> Result<(Tensor, Option<Tensor>)> {
                let name = stringify!($name);
                let (batched, x, st) =
                    cell_inputs(name, input, self.input_size, self.hidden_size, &[h, c])?;
                let zeros = || {
                    Tensor::full_on(
                        &[x.shape()[0], self.hidden_size],
                        0.0,
                        x.dtype(),
                        x.device(),
                    )
                };
                let h = match &st[0] {
                    Some(h) => h.clone(),
                    None => zeros()?,
                };
                let c = match (self.mode, &st[1]) {
                    (Mode::Lstm, Some(c)) => Some(c.clone()),
                    (Mode::Lstm, None) => Some(zeros()?),
                    _ => None,
                };
                let cell = self.cell();
                let xw = kiln_core::linear_with(&x, cell.w_ih, cell.b_ih)?;
                let (h, c) = step(self.mode, &xw, &h, c.as_ref(), &cell)?;
                if batched {
                    Ok((h, c))
                } else {
                    Ok((h.squeeze_dim(0)?, c.map(|c| c.squeeze_dim(0)).transpose()?))
                }
            }
        }
    };
}

cell_layer!(
    /// `nn.RNNCell(input_size, hidden_size, bias=True, nonlinearity='tanh')`.
    RNNCell
);
cell_layer!(
    /// `nn.LSTMCell(input_size, hidden_size, bias=True)`.
    LSTMCell
);
cell_layer!(
    /// `nn.GRUCell(input_size, hidden_size, bias=True)`.
    GRUCell
);

impl RNNCell {
    pub fn new(input_size: usize, hidden_size: usize) -> Result<Self> {
        Self::with_options(
            input_size,
            hidden_size,
            true,
            RnnNonlinearity::Tanh,
            DType::F32,
        )
    }
    pub fn with_options(
        input_size: usize,
        hidden_size: usize,
        bias: bool,
        nonlinearity: RnnNonlinearity,
        dtype: DType,
    ) -> Result<Self> {
        let mode = Mode::Rnn(nonlinearity);
        let (weight_ih, weight_hh, bias_ih, bias_hh) =
            cell_params(mode, input_size, hidden_size, bias, dtype)?;
        Ok(RNNCell {
            weight_ih,
            weight_hh,
            bias_ih,
            bias_hh,
            input_size,
            hidden_size,
            mode,
        })
    }
    /// `input (N, in)` or `(in)`, `hx (N, H)` / `(H)` (zeros when `None`) → `h'`.
    pub fn forward(&self, input: &Tensor, hx: Option<&Tensor>) -> Result<Tensor> {
        Ok(self.step(input, hx, None)?.0)
    }
}

impl LSTMCell {
    pub fn new(input_size: usize, hidden_size: usize) -> Result<Self> {
        Self::with_options(input_size, hidden_size, true, DType::F32)
    }
    pub fn with_options(
        input_size: usize,
        hidden_size: usize,
        bias: bool,
        dtype: DType,
    ) -> Result<Self> {
        let (weight_ih, weight_hh, bias_ih, bias_hh) =
            cell_params(Mode::Lstm, input_size, hidden_size, bias, dtype)?;
        Ok(LSTMCell {
            weight_ih,
            weight_hh,
            bias_ih,
            bias_hh,
            input_size,
            hidden_size,
            mode: Mode::Lstm,
        })
    }
    /// `input (N, in)` or `(in)`, `hx = (h, c)` (zeros when `None`) → `(h', c')`.
    pub fn forward(
        &self,
        input: &Tensor,
        hx: Option<(&Tensor, &Tensor)>,
    ) -> Result<(Tensor, Tensor)> {
        let (h, c) = match hx {
            Some((h, c)) => (Some(h), Some(c)),
            None => (None, None),
        };
        let (h, c) = self.step(input, h, c)?;
        Ok((h, c.expect("LSTM cell state")))
    }
}

impl GRUCell {
    pub fn new(input_size: usize, hidden_size: usize) -> Result<Self> {
        Self::with_options(input_size, hidden_size, true, DType::F32)
    }
    pub fn with_options(
        input_size: usize,
        hidden_size: usize,
        bias: bool,
        dtype: DType,
    ) -> Result<Self> {
        let (weight_ih, weight_hh, bias_ih, bias_hh) =
            cell_params(Mode::Gru, input_size, hidden_size, bias, dtype)?;
        Ok(GRUCell {
            weight_ih,
            weight_hh,
            bias_ih,
            bias_hh,
            input_size,
            hidden_size,
            mode: Mode::Gru,
        })
    }
    /// `input (N, in)` or `(in)`, `hx (N, H)` / `(H)` (zeros when `None`) → `h'`.
    pub fn forward(&self, input: &Tensor, hx: Option<&Tensor>) -> Result<Tensor> {
        Ok(self.step(input, hx, None)?.0)
    }
}
