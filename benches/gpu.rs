//! kiln's side of the GPU comparison with PyTorch: the same rows, shapes, models and timing
//! method as `benches/gpu_torch.py`; `benches/gpu_table.py` joins the two JSON files.
//!
//! ```sh
//! cargo bench --features cuda --bench gpu -- --device cuda --json kiln.json
//! python3 benches/gpu_torch.py --device cuda --json torch.json
//! python3 benches/gpu_table.py kiln.json torch.json
//! ```
//!
//! Flags: `--device cuda|cuda:N|cpu` (default cuda), `--suite gpu|cpu` (the rows: `gpu` the
//! GPU table's, `cpu` issue 27's CPU table at its shapes; default `cpu` on `--device cpu`,
//! else `gpu`), `--json PATH` (one JSON object per row, written as each row completes),
//! `--quick` (tiny sizes: a smoke run on the CPU), `--only TEXT` (the rows whose name
//! contains TEXT).
//!
//! The CPU table beside PyTorch, both on kiln's pool size (`KILN_NUM_THREADS`, PyTorch's
//! `--threads`):
//!
//! ```sh
//! KILN_NUM_THREADS=2 cargo bench --bench gpu -- --device cpu --json kiln.json
//! python3 benches/gpu_torch.py --device cpu --threads 2 --json torch.json
//! python3 benches/gpu_table.py kiln.json torch.json
//! ``` Without the `cuda` feature or a GPU only
//! `--device cpu` runs; with no `--device` at all such a build prints why and exits 0, so a
//! plain `cargo bench` on a CPU machine does not fail here.
//!
//! Timing: 3 warm-up iterations (on CUDA the first one compiles kiln's kernels with NVRTC;
//! the warm-up's wall time is reported as `warmup_s`), then 5 repeats (3 for steps over
//! 50 ms, 1 over 1 s) of N iterations, N chosen from the last warm-up iteration so a repeat
//! takes about 50 ms; the device is synchronized before and after each repeat, and the
//! median time per iteration is reported. A row that fails prints its error and the run
//! goes on.

use kiln::nn::{
    functional as F, generate_square_subsequent_mask, Activation, BatchNorm2d, Conv2d, ConvOptions,
    Embedding, Forward, LayerNorm, Linear, MaxPool2d, Module, TransformerEncoder,
    TransformerEncoderLayer, TransformerLayerOptions,
};
use kiln::optim::{Adam, AdamOptions, AdamW, Optimizer, SGDOptions, SGD};
use kiln::{no_grad, DType, Device, Error, MemoryFormat, Result, Tensor};
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

const WARMUP: usize = 3;

struct Args {
    device: Device,
    explicit_device: bool,
    suite: Option<String>,
    json: Option<String>,
    quick: bool,
    only: Option<String>,
}

fn parse_args() -> std::result::Result<Args, String> {
    let mut args = Args {
        device: Device::Cuda(0),
        explicit_device: false,
        suite: None,
        json: None,
        quick: false,
        only: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |flag: &str| it.next().ok_or(format!("{flag} needs a value"));
        match a.as_str() {
            "--device" => {
                let v = value("--device")?;
                args.device = match v.as_str() {
                    "cpu" => Device::Cpu,
                    "cuda" => Device::Cuda(0),
                    _ => match v.strip_prefix("cuda:").and_then(|i| i.parse().ok()) {
                        Some(i) => Device::Cuda(i),
                        None => return Err(format!("unknown device '{v}' (cpu, cuda, cuda:N)")),
                    },
                };
                args.explicit_device = true;
            }
            "--suite" => {
                let v = value("--suite")?;
                if v != "gpu" && v != "cpu" {
                    return Err(format!("unknown suite '{v}' (gpu, cpu)"));
                }
                args.suite = Some(v);
            }
            "--json" => args.json = Some(value("--json")?),
            "--only" => args.only = Some(value("--only")?),
            "--quick" => args.quick = true,
            // `cargo bench` appends `--bench` to a harness-less bench's arguments.
            "--bench" => {}
            _ => return Err(format!("unknown argument '{a}'")),
        }
    }
    Ok(args)
}

/// What one iteration of a row does, for turning its time into the row's unit.
enum Work {
    Flops(f64),
    Bytes(f64),
    /// The row is reported as milliseconds per iteration.
    Time,
}

/// A measured row: the shape it ran at, its work per iteration and its timing.
struct Measured {
    shape: String,
    work: Work,
    timing: Timing,
}

struct Timing {
    /// Median seconds per iteration over the repeats.
    seconds: f64,
    iters: usize,
    repeats: usize,
    warmup_s: f64,
}

struct Bench {
    device: Device,
    quick: bool,
}

impl Bench {
    fn sync(&self) -> Result<()> {
        match self.device {
            Device::Cuda(i) => kiln::cuda::synchronize(i),
            _ => Ok(()),
        }
    }

    /// Times `step` as the module docs describe.
    fn time(&self, step: &mut dyn FnMut() -> Result<()>) -> Result<Timing> {
        let start = Instant::now();
        let mut last = 0.0;
        for _ in 0..WARMUP {
            self.sync()?;
            let t = Instant::now();
            step()?;
            self.sync()?;
            last = t.elapsed().as_secs_f64();
        }
        let warmup_s = start.elapsed().as_secs_f64();
        let target = if self.quick { 0.01 } else { 0.05 };
        let iters = ((target / last.max(1e-7)).ceil() as usize).clamp(1, 2000);
        let repeats = match last {
            l if l > 1.0 => 1,
            l if l > 0.05 => 3,
            _ => 5,
        };
        let mut per_iter = Vec::with_capacity(repeats);
        for _ in 0..repeats {
            self.sync()?;
            let t = Instant::now();
            for _ in 0..iters {
                step()?;
            }
            self.sync()?;
            per_iter.push(t.elapsed().as_secs_f64() / iters as f64);
        }
        per_iter.sort_by(f64::total_cmp);
        Ok(Timing {
            seconds: per_iter[per_iter.len() / 2],
            iters,
            repeats,
            warmup_s,
        })
    }
}

/// `(name, unit, run)`: names and units are shared with `gpu_torch.py`.
type RowFn = fn(&Bench) -> Result<Measured>;
const ROWS: &[(&str, &str, RowFn)] = &[
    ("matmul_f32", "TFLOP/s", |b| matmul(b, DType::F32)),
    ("matmul_bf16", "TFLOP/s", |b| matmul(b, DType::BF16)),
    ("copy_f32", "GB/s", copy),
    ("add_f32", "GB/s", add),
    ("exp_f32", "GB/s", exp),
    ("softmax_f32", "GB/s", softmax),
    ("conv2d_fwd", "ms", conv_forward),
    ("conv2d_fwd_bwd", "ms", conv_forward_backward),
    ("mlp_digits_step", "ms", mlp_step),
    ("transformer_sort_step", "ms", transformer_step),
    ("resnet18_step", "ms", resnet_step),
];

/// Issue 27's CPU table: its shapes, f32, GFLOP/s for the products.
const CPU_ROWS: &[(&str, &str, RowFn)] = &[
    ("matmul_f32_64", "GFLOP/s", |b| {
        giga(square_matmul(b, DType::F32, 64))
    }),
    ("matmul_f32_256", "GFLOP/s", |b| {
        giga(square_matmul(b, DType::F32, 256))
    }),
    ("matmul_f32_1024", "GFLOP/s", |b| {
        giga(square_matmul(b, DType::F32, 1024))
    }),
    ("matmul_f32_2048", "GFLOP/s", |b| {
        giga(square_matmul(b, DType::F32, 2048))
    }),
    ("conv2d_fwd", "ms", conv_forward),
    ("conv2d_fwd_bwd", "ms", conv_forward_backward),
    ("depthwise_fwd", "ms", |b| {
        conv_forward_with(b, grouped_setup(b, 0)?)
    }),
    ("depthwise_fwd_bwd", "ms", |b| {
        conv_forward_backward_with(b, grouped_setup(b, 0)?)
    }),
    ("grouped32_fwd_bwd", "ms", |b| {
        conv_forward_backward_with(b, grouped_setup(b, 32)?)
    }),
    ("small_cnn_step", "ms", small_cnn_step),
    ("mlp_784_step", "ms", mlp_784_step),
    ("encoder_step", "ms", encoder_step),
    ("resnet18_64_step", "ms", |b| resnet_at(b, 16, 64)),
    ("resnet18_64_eval", "ms", resnet_eval),
    ("resnet18_64_step_cl", "ms", resnet_channels_last),
    ("resnet18_64_eval_cl", "ms", resnet_eval_channels_last),
];

/// A throughput row in units of 10^9 rather than 10^12.
fn giga(m: Result<Measured>) -> Result<Measured> {
    m.map(|m| Measured {
        work: match m.work {
            Work::Flops(f) => Work::Flops(f * 1e3),
            w => w,
        },
        ..m
    })
}

fn matmul(b: &Bench, dtype: DType) -> Result<Measured> {
    square_matmul(b, dtype, if b.quick { 128 } else { 4096 })
}

fn square_matmul(b: &Bench, dtype: DType, n: usize) -> Result<Measured> {
    let n = if b.quick { n.min(128) } else { n };
    let x = Tensor::randn_on([n, n], DType::F32, b.device)?.to_dtype(dtype)?;
    let y = Tensor::randn_on([n, n], DType::F32, b.device)?.to_dtype(dtype)?;
    let timing = b.time(&mut || x.matmul(&y).map(drop))?;
    Ok(Measured {
        shape: format!("{n}x{n}x{n}"),
        work: Work::Flops(2.0 * (n as f64).powi(3)),
        timing,
    })
}

/// The element count of the bandwidth rows: 64M f32 (256 MB per tensor).
fn elements(b: &Bench) -> usize {
    if b.quick {
        1 << 16
    } else {
        64 << 20
    }
}

/// A device-to-device copy of one tensor into another: the roofline for `add` and `exp`.
fn copy(b: &Bench) -> Result<Measured> {
    let n = elements(b);
    let src = Tensor::rand_on([n], DType::F32, b.device)?;
    let dst = Tensor::rand_on([n], DType::F32, b.device)?;
    let timing = b.time(&mut || dst.copy_(&src).map(drop))?;
    Ok(Measured {
        shape: format!("{n}"),
        work: Work::Bytes(2.0 * 4.0 * n as f64),
        timing,
    })
}

fn add(b: &Bench) -> Result<Measured> {
    let n = elements(b);
    let x = Tensor::rand_on([n], DType::F32, b.device)?;
    let y = Tensor::rand_on([n], DType::F32, b.device)?;
    let timing = b.time(&mut || x.add(&y).map(drop))?;
    Ok(Measured {
        shape: format!("{n}"),
        work: Work::Bytes(3.0 * 4.0 * n as f64),
        timing,
    })
}

fn exp(b: &Bench) -> Result<Measured> {
    let n = elements(b);
    let x = Tensor::rand_on([n], DType::F32, b.device)?;
    let timing = b.time(&mut || x.exp().map(drop))?;
    Ok(Measured {
        shape: format!("{n}"),
        work: Work::Bytes(2.0 * 4.0 * n as f64),
        timing,
    })
}

fn softmax(b: &Bench) -> Result<Measured> {
    let n = if b.quick { 256 } else { 4096 };
    let x = Tensor::randn_on([n, n], DType::F32, b.device)?;
    let timing = b.time(&mut || x.softmax(-1).map(drop))?;
    Ok(Measured {
        shape: format!("{n}x{n}, dim -1"),
        work: Work::Bytes(2.0 * 4.0 * (n * n) as f64),
        timing,
    })
}

/// `Conv2d(c, c, 3, padding=1)` and an input `[n, c, hw, hw]` on the bench's device.
fn conv_setup(b: &Bench) -> Result<(Conv2d, Tensor, String)> {
    let (n, c, hw) = if b.quick { (2, 8, 14) } else { (16, 64, 56) };
    conv_layer(b, n, c, hw, 1)
}

/// A 3x3 pad-1 convolution of `c` channels in `groups` groups over `[n, c, hw, hw]`.
fn conv_layer(
    b: &Bench,
    n: usize,
    c: usize,
    hw: usize,
    groups: usize,
) -> Result<(Conv2d, Tensor, String)> {
    let options = ConvOptions::default().padding(1).groups(groups);
    let mut conv = Conv2d::with_options(c, c, 3, options)?;
    conv.to_device(b.device)?;
    let x = Tensor::randn_on([n, c, hw, hw], DType::F32, b.device)?;
    let g = if groups > 1 {
        format!(", groups {groups}")
    } else {
        String::new()
    };
    Ok((
        conv,
        x,
        format!("[{n},{c},{hw},{hw}], {c}->{c} 3x3 pad 1{g}"),
    ))
}

/// Issue 27's grouped layers: depthwise (`groups == c`) and 32 groups of 4 at 28².
fn grouped_setup(b: &Bench, groups: usize) -> Result<(Conv2d, Tensor, String)> {
    let (n, c, hw) = if b.quick { (2, 16, 14) } else { (16, 256, 28) };
    let c = if groups == 32 { c / 2 } else { c };
    conv_layer(b, n, c, hw, if groups == 0 { c } else { groups.min(c) })
}

fn conv_forward(b: &Bench) -> Result<Measured> {
    conv_forward_with(b, conv_setup(b)?)
}

fn conv_forward_with(b: &Bench, (conv, x, shape): (Conv2d, Tensor, String)) -> Result<Measured> {
    let _guard = no_grad();
    let timing = b.time(&mut || conv.forward(&x).map(drop))?;
    Ok(Measured {
        shape: format!("{shape}, no_grad"),
        work: Work::Time,
        timing,
    })
}

fn conv_forward_backward(b: &Bench) -> Result<Measured> {
    conv_forward_backward_with(b, conv_setup(b)?)
}

/// Forward, then backward from a fixed output gradient into the input, weight and bias
/// (their `.grad` cleared each iteration, as `zero_grad` does).
fn conv_forward_backward_with(
    b: &Bench,
    (conv, x, shape): (Conv2d, Tensor, String),
) -> Result<Measured> {
    // Padding 1 keeps the spatial size, so the output gradient has the input's shape.
    let grad = Tensor::randn_on(x.shape(), DType::F32, b.device)?;
    let x = x.requires_grad_(true)?;
    let timing = b.time(&mut || {
        conv.zero_grad();
        x.zero_grad();
        conv.forward(&x)?.backward_with(Some(&grad), false, false)
    })?;
    Ok(Measured {
        shape,
        work: Work::Time,
        timing,
    })
}

/// examples/digits.rs's model.
#[derive(Module)]
struct Mlp {
    fc1: Linear,
    fc2: Linear,
}

impl Forward for Mlp {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.fc2.forward(&self.fc1.forward(x)?.relu()?)
    }
}

/// One optimizer step of `model` on `(x, y)` with cross entropy, as the examples train.
fn train_step(
    model: &dyn Forward,
    opt: &mut dyn Optimizer,
    x: &Tensor,
    y: &Tensor,
    classes: i64,
) -> Result<()> {
    let logits = model.forward(x)?.reshape([-1, classes])?;
    let loss = F::cross_entropy(&logits, &y.reshape([-1])?)?;
    opt.zero_grad()?;
    loss.backward()?;
    opt.step()
}

/// digits.rs's train step: 64-128-10 MLP, batch 64, Adam (lr 1e-3), on one fixed batch
/// (no DataLoader, no `loss.item()` per step).
fn mlp_step(b: &Bench) -> Result<Measured> {
    let mut model = Mlp {
        fc1: Linear::new(64, 128)?,
        fc2: Linear::new(128, 10)?,
    };
    model.to_device(b.device)?;
    let options = AdamOptions {
        lr: 1e-3,
        ..Default::default()
    };
    let mut opt = Adam::new(model.parameters(), options)?;
    let x = Tensor::rand_on([64, 64], DType::F32, b.device)?;
    let y = Tensor::randint_on(0, 10, [64], DType::I64, b.device)?;
    let timing = b.time(&mut || train_step(&model, &mut opt, &x, &y, 10))?;
    Ok(Measured {
        shape: "batch 64, 64-128-10, Adam".into(),
        work: Work::Time,
        timing,
    })
}

/// examples/tiny_transformer.rs's model and sizes.
const LENGTH: usize = 6;
const VOCAB: usize = 3;
const BLOCK: usize = 2 * LENGTH - 1;
const D_MODEL: usize = 48;
const BATCH: usize = 64;

#[derive(Module)]
struct TinyGpt {
    tok_emb: Embedding,
    pos_emb: Tensor,
    /// The causal mask `[BLOCK, BLOCK]`, made once and moved with the model (the example
    /// builds it on the CPU and copies it over in every forward; a host-to-device copy per
    /// step, synchronous in PyTorch, would blur what the row measures).
    #[module(buffer)]
    mask: Tensor,
    blocks: Vec<TransformerEncoderLayer>,
    ln_f: LayerNorm,
    head: Linear,
}

impl TinyGpt {
    fn new() -> Result<Self> {
        let options = TransformerLayerOptions {
            dim_feedforward: 4 * D_MODEL,
            dropout: 0.0,
            activation: Activation::Gelu,
            batch_first: true,
            norm_first: true,
            ..Default::default()
        };
        Ok(TinyGpt {
            tok_emb: Embedding::new(VOCAB, D_MODEL)?,
            pos_emb: Tensor::zeros([1, BLOCK, D_MODEL], DType::F32)?
                .normal_(0.0, 0.02)?
                .requires_grad_(true)?,
            mask: generate_square_subsequent_mask(BLOCK, DType::F32)?,
            blocks: (0..2)
                .map(|_| TransformerEncoderLayer::with_options(D_MODEL, 4, options))
                .collect::<Result<_>>()?,
            ln_f: LayerNorm::new(&[D_MODEL])?,
            head: Linear::new(D_MODEL, VOCAB)?,
        })
    }
}

impl Forward for TinyGpt {
    fn forward(&self, idx: &Tensor) -> Result<Tensor> {
        let t = idx.shape()[1];
        let mask = self.mask.narrow(0, 0, t as i64)?.narrow(1, 0, t as i64)?;
        let mut x = self
            .tok_emb
            .forward(idx)?
            .add(&self.pos_emb.narrow(1, 0, t as i64)?)?;
        for block in &self.blocks {
            x = block.forward_with(&x, Some(&mask), None, true)?;
        }
        self.head.forward(&self.ln_f.forward(&x)?)
    }
}

/// tiny_transformer.rs's train step: batch 64 of 11 tokens, AdamW (lr 3e-3, weight decay
/// 0.01), on one fixed batch (the example draws a fresh one and steps a OneCycleLR
/// schedule each step; neither is timed here).
fn transformer_step(b: &Bench) -> Result<Measured> {
    let mut model = TinyGpt::new()?;
    model.to_device(b.device)?;
    let options = AdamOptions {
        lr: 3e-3,
        weight_decay: 0.01,
        ..Default::default()
    };
    let mut opt = AdamW::new(model.parameters(), options)?;
    let seq = Tensor::randint(0, VOCAB as i64, [BATCH, LENGTH], DType::I64)?;
    let (sorted, _) = seq.sort()?;
    let x = kiln::cat_with(&[seq, sorted.narrow(1, 0, LENGTH as i64 - 1)?], 1)?;
    let ignored = Tensor::full([BATCH, LENGTH - 1], -100i64, DType::I64)?;
    let y = kiln::cat_with(&[ignored, sorted], 1)?;
    let (x, y) = (x.to_device(b.device)?, y.to_device(b.device)?);
    let timing = b.time(&mut || train_step(&model, &mut opt, &x, &y, VOCAB as i64))?;
    Ok(Measured {
        shape: format!("batch {BATCH}x{BLOCK} tokens, d_model {D_MODEL}, 2 layers, AdamW"),
        work: Work::Time,
        timing,
    })
}

/// A 3×3 convolution without bias, torchvision's `conv3x3`.
fn conv3x3(cin: usize, cout: usize, stride: usize) -> Result<Conv2d> {
    let options = ConvOptions::default().stride(stride).padding(1).bias(false);
    Conv2d::with_options(cin, cout, 3, options)
}

/// The shortcut of a block that changes shape: 1×1 convolution with stride, batch norm.
#[derive(Module)]
struct Downsample {
    conv: Conv2d,
    bn: BatchNorm2d,
}

/// torchvision's `BasicBlock`.
#[derive(Module)]
struct BasicBlock {
    conv1: Conv2d,
    bn1: BatchNorm2d,
    conv2: Conv2d,
    bn2: BatchNorm2d,
    downsample: Option<Downsample>,
}

impl BasicBlock {
    fn new(cin: usize, cout: usize, stride: usize) -> Result<Self> {
        let downsample = if stride != 1 || cin != cout {
            let options = ConvOptions::default().stride(stride).bias(false);
            Some(Downsample {
                conv: Conv2d::with_options(cin, cout, 1, options)?,
                bn: BatchNorm2d::new(cout)?,
            })
        } else {
            None
        };
        Ok(BasicBlock {
            conv1: conv3x3(cin, cout, stride)?,
            bn1: BatchNorm2d::new(cout)?,
            conv2: conv3x3(cout, cout, 1)?,
            bn2: BatchNorm2d::new(cout)?,
            downsample,
        })
    }
}

impl Forward for BasicBlock {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let out = self.bn1.forward(&self.conv1.forward(x)?)?.relu()?;
        let out = self.bn2.forward(&self.conv2.forward(&out)?)?;
        let identity = match &self.downsample {
            Some(d) => d.bn.forward(&d.conv.forward(x)?)?,
            None => x.clone(),
        };
        out.add(&identity)?.relu()
    }
}

/// ResNet-18 (torchvision's layout): 7×7/2 stem, 3×3/2 max pool, four stages of two basic
/// blocks (64, 128, 256, 512 channels), global average pool, a linear head.
#[derive(Module)]
struct ResNet18 {
    conv1: Conv2d,
    bn1: BatchNorm2d,
    maxpool: MaxPool2d,
    blocks: Vec<BasicBlock>,
    fc: Linear,
}

impl ResNet18 {
    fn new(classes: usize) -> Result<Self> {
        let stem = ConvOptions::default().stride(2).padding(3).bias(false);
        let mut blocks = Vec::new();
        let mut cin = 64;
        for (i, cout) in [64, 128, 256, 512].into_iter().enumerate() {
            let stride = if i == 0 { 1 } else { 2 };
            blocks.push(BasicBlock::new(cin, cout, stride)?);
            blocks.push(BasicBlock::new(cout, cout, 1)?);
            cin = cout;
        }
        Ok(ResNet18 {
            conv1: Conv2d::with_options(3, 64, 7, stem)?,
            bn1: BatchNorm2d::new(64)?,
            maxpool: MaxPool2d::new(3).stride(2).padding(1),
            blocks,
            fc: Linear::new(512, classes)?,
        })
    }
}

impl Forward for ResNet18 {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let x = self.bn1.forward(&self.conv1.forward(x)?)?.relu()?;
        let mut x = self.maxpool.forward(&x)?;
        for block in &self.blocks {
            x = block.forward(&x)?;
        }
        // AdaptiveAvgPool2d(1) + flatten.
        self.fc.forward(&x.mean_dim(&[2, 3])?)
    }
}

/// A ResNet-18 train step: batch 32 of 3×224×224 (56×56 after the stem, 7×7 in the last
/// stage), 1000 classes, SGD (lr 0.1, momentum 0.9, weight decay 1e-4), train-mode batch
/// norm. `--quick`: batch 2 of 3×32×32.
fn resnet_step(b: &Bench) -> Result<Measured> {
    resnet_at(b, 32, 224)
}

/// A ResNet-18 train step on a batch of `n` images of `hw x hw` (`--quick`: 2 of 32 x 32).
fn resnet_at(b: &Bench, n: usize, hw: usize) -> Result<Measured> {
    resnet_in(b, n, hw, MemoryFormat::Contiguous)
}

/// [`resnet_at`] at batch 16 of 64 x 64 with the model and the images channels-last
/// (`model.to(memory_format=torch.channels_last)`).
fn resnet_channels_last(b: &Bench) -> Result<Measured> {
    resnet_in(b, 16, 64, MemoryFormat::ChannelsLast)
}

/// A ResNet-18 train step with 4-d parameters and images laid out in `format`.
fn resnet_in(b: &Bench, n: usize, hw: usize, format: MemoryFormat) -> Result<Measured> {
    let (n, hw) = if b.quick { (2, 32) } else { (n, hw) };
    let classes = 1000;
    let mut model = ResNet18::new(classes)?;
    model.to_device(b.device)?;
    model.to_memory_format(format)?;
    let options = SGDOptions {
        lr: 0.1,
        momentum: 0.9,
        weight_decay: 1e-4,
        ..Default::default()
    };
    let mut opt = SGD::new(model.parameters(), options)?;
    let x = Tensor::randn_on([n, 3, hw, hw], DType::F32, b.device)?.to_memory_format(format)?;
    let y = Tensor::randint_on(0, classes as i64, [n], DType::I64, b.device)?;
    let timing = b.time(&mut || train_step(&model, &mut opt, &x, &y, classes as i64))?;
    Ok(Measured {
        shape: format!(
            "batch {n}x3x{hw}x{hw}, 1000 classes, SGD momentum{}",
            layout_note(format)
        ),
        work: Work::Time,
        timing,
    })
}

/// A ResNet-18 forward in eval mode under `no_grad`, batch 16 of 3 x 64 x 64.
fn resnet_eval(b: &Bench) -> Result<Measured> {
    resnet_eval_in(b, MemoryFormat::Contiguous)
}

/// [`resnet_eval`] channels-last.
fn resnet_eval_channels_last(b: &Bench) -> Result<Measured> {
    resnet_eval_in(b, MemoryFormat::ChannelsLast)
}

/// `, channels_last` for a channels-last row's shape.
fn layout_note(format: MemoryFormat) -> &'static str {
    match format {
        MemoryFormat::ChannelsLast => ", channels_last",
        _ => "",
    }
}

fn resnet_eval_in(b: &Bench, format: MemoryFormat) -> Result<Measured> {
    let (n, hw) = if b.quick { (2, 32) } else { (16, 64) };
    let mut model = ResNet18::new(1000)?;
    model.to_device(b.device)?;
    model.to_memory_format(format)?;
    model.eval();
    let x = Tensor::randn_on([n, 3, hw, hw], DType::F32, b.device)?.to_memory_format(format)?;
    let _guard = no_grad();
    let timing = b.time(&mut || model.forward(&x).map(drop))?;
    Ok(Measured {
        shape: format!(
            "batch {n}x3x{hw}x{hw}, eval, no_grad{}",
            layout_note(format)
        ),
        work: Work::Time,
        timing,
    })
}

/// Issue 27's small CNN: two 3x3 convolutions (3->32->64, padding 1) each followed by ReLU
/// and a 2x2 max pool, then a linear layer to 10 classes.
#[derive(Module)]
struct SmallCnn {
    conv1: Conv2d,
    conv2: Conv2d,
    pool: MaxPool2d,
    fc: Linear,
}

impl Forward for SmallCnn {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let x = self.pool.forward(&self.conv1.forward(x)?.relu()?)?;
        let x = self.pool.forward(&self.conv2.forward(&x)?.relu()?)?;
        self.fc.forward(&kiln::flatten_with(&x, 1, -1)?)
    }
}

/// SmallCnn's train step: batch 64 of 3x32x32, SGD (lr 0.01).
fn small_cnn_step(b: &Bench) -> Result<Measured> {
    let n = if b.quick { 4 } else { 64 };
    let pad = ConvOptions::default().padding(1);
    let mut model = SmallCnn {
        conv1: Conv2d::with_options(3, 32, 3, pad)?,
        conv2: Conv2d::with_options(32, 64, 3, pad)?,
        pool: MaxPool2d::new(2),
        fc: Linear::new(64 * 8 * 8, 10)?,
    };
    model.to_device(b.device)?;
    let options = SGDOptions {
        lr: 0.01,
        ..Default::default()
    };
    let mut opt = SGD::new(model.parameters(), options)?;
    let x = Tensor::randn_on([n, 3, 32, 32], DType::F32, b.device)?;
    let y = Tensor::randint_on(0, 10, [n], DType::I64, b.device)?;
    let timing = b.time(&mut || train_step(&model, &mut opt, &x, &y, 10))?;
    Ok(Measured {
        shape: format!("batch {n}x3x32x32, conv 3-32-64, SGD"),
        work: Work::Time,
        timing,
    })
}

/// An MLP 784-1024-1024-10 (ReLU) train step: batch 256, SGD (lr 0.01).
fn mlp_784_step(b: &Bench) -> Result<Measured> {
    #[derive(Module)]
    struct Mlp3 {
        fc1: Linear,
        fc2: Linear,
        fc3: Linear,
    }
    impl Forward for Mlp3 {
        fn forward(&self, x: &Tensor) -> Result<Tensor> {
            let x = self.fc1.forward(x)?.relu()?;
            self.fc3.forward(&self.fc2.forward(&x)?.relu()?)
        }
    }
    let (n, h) = if b.quick { (8, 64) } else { (256, 1024) };
    let mut model = Mlp3 {
        fc1: Linear::new(784, h)?,
        fc2: Linear::new(h, h)?,
        fc3: Linear::new(h, 10)?,
    };
    model.to_device(b.device)?;
    let options = SGDOptions {
        lr: 0.01,
        ..Default::default()
    };
    let mut opt = SGD::new(model.parameters(), options)?;
    let x = Tensor::rand_on([n, 784], DType::F32, b.device)?;
    let y = Tensor::randint_on(0, 10, [n], DType::I64, b.device)?;
    let timing = b.time(&mut || train_step(&model, &mut opt, &x, &y, 10))?;
    Ok(Measured {
        shape: format!("batch {n}, 784-{h}-{h}-10, SGD"),
        work: Work::Time,
        timing,
    })
}

/// A 2-layer transformer encoder train step: d_model 256, 4 heads, feed-forward 1024, no
/// dropout, batch 32 x 128 (batch first), Adam, the loss the mean square of the output.
fn encoder_step(b: &Bench) -> Result<Measured> {
    let (n, l) = if b.quick { (2, 16) } else { (32, 128) };
    let options = TransformerLayerOptions {
        dim_feedforward: 1024,
        dropout: 0.0,
        batch_first: true,
        ..Default::default()
    };
    let layer = TransformerEncoderLayer::with_options(256, 4, options)?;
    let mut model = TransformerEncoder::new(layer, 2, None)?;
    model.to_device(b.device)?;
    let mut opt = Adam::new(model.parameters(), AdamOptions::default())?;
    let x = Tensor::randn_on([n, l, 256], DType::F32, b.device)?;
    let timing = b.time(&mut || {
        let loss = model.forward(&x)?.square()?.mean()?;
        opt.zero_grad()?;
        loss.backward()?;
        opt.step()
    })?;
    Ok(Measured {
        shape: format!("batch {n}x{l}, d 256, 4 heads, ff 1024, 2 layers, Adam"),
        work: Work::Time,
        timing,
    })
}

/// A JSON string literal.
fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A JSON number, or `null` for a value JSON cannot hold (inf, NaN).
fn json_num(x: f64) -> String {
    if x.is_finite() {
        x.to_string()
    } else {
        "null".into()
    }
}

/// Runs one row, turning a panic into an error so the rows after it still run.
fn run_row(bench: &Bench, name: &str, run: RowFn) -> Result<Measured> {
    let result = catch_unwind(AssertUnwindSafe(|| run(bench)))
        .unwrap_or_else(|_| Err(Error::value(name, "panicked (message above)")));
    // Hand the row's memory back so the next row starts from an empty pool. A failure here
    // is reported, not returned: the row's own result (or error) is what matters.
    if matches!(bench.device, Device::Cuda(_)) {
        if let Err(e) = kiln::cuda::empty_cache() {
            eprintln!("gpu bench: empty_cache after {name}: {e}");
        }
    }
    result
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("gpu bench: {e}");
            std::process::exit(2);
        }
    };
    if let Device::Cuda(i) = args.device {
        if i >= kiln::cuda::device_count() {
            let why = Tensor::zeros([1], DType::F32)
                .and_then(|t| t.to_device(args.device))
                .err()
                .map_or_else(|| format!("no device cuda:{i}"), |e| e.to_string());
            if args.explicit_device {
                eprintln!("gpu bench: {why}");
                std::process::exit(1);
            }
            println!("gpu bench: nothing to run on the default device ({why}); pass --device cpu");
            return;
        }
    }
    let mut json = args.json.as_ref().map(|path| {
        std::fs::File::create(path).unwrap_or_else(|e| {
            eprintln!("gpu bench: cannot create {path}: {e}");
            std::process::exit(2);
        })
    });
    let device = args.device.to_string();
    let mut write_json = |line: String| {
        if let Some(f) = json.as_mut() {
            // Flushed per row, so a run cut short by a timeout keeps the rows it finished.
            if let Err(e) = writeln!(f, "{line}").and_then(|()| f.flush()) {
                eprintln!("gpu bench: writing JSON: {e}");
            }
        }
    };
    write_json(format!(
        r#"{{"kind":"meta","impl":"kiln","device":{},"quick":{}}}"#,
        json_str(&device),
        args.quick
    ));
    println!(
        "kiln on {device}{}",
        if args.quick { " (--quick sizes)" } else { "" }
    );
    let cpu_suite = match args.suite.as_deref() {
        Some(s) => s == "cpu",
        None => args.device == Device::Cpu,
    };
    let rows = if cpu_suite { CPU_ROWS } else { ROWS };
    let bench = Bench {
        device: args.device,
        quick: args.quick,
    };
    let start = Instant::now();
    let mut failed = 0;
    for &(name, unit, run) in rows {
        if args
            .only
            .as_ref()
            .is_some_and(|o| !name.contains(o.as_str()))
        {
            continue;
        }
        let kind = if unit == "ms" { "time" } else { "throughput" };
        match run_row(&bench, name, run) {
            Ok(m) => {
                let t = &m.timing;
                let value = match m.work {
                    // TFLOP/s (a `giga` row's work is scaled by 1000: GFLOP/s).
                    Work::Flops(f) => f / t.seconds / 1e12,
                    Work::Bytes(bytes) => bytes / t.seconds / 1e9,
                    Work::Time => t.seconds * 1e3,
                };
                println!(
                    "{name:<22} {value:>10.3} {unit:<8} {:>9.3} ms/iter  {}x{} iters, warm-up {:.1} s  [{}]",
                    t.seconds * 1e3,
                    t.repeats,
                    t.iters,
                    t.warmup_s,
                    m.shape
                );
                write_json(format!(
                    r#"{{"name":{},"unit":{},"value":{},"kind":"{kind}","impl":"kiln","device":{},"shape":{},"ms":{},"iters":{},"repeats":{},"warmup_s":{}}}"#,
                    json_str(name),
                    json_str(unit),
                    json_num(value),
                    json_str(&device),
                    json_str(&m.shape),
                    json_num(t.seconds * 1e3),
                    t.iters,
                    t.repeats,
                    json_num(t.warmup_s)
                ));
            }
            Err(e) => {
                failed += 1;
                println!("{name:<22} FAILED: {e}");
                write_json(format!(
                    r#"{{"name":{},"unit":{},"value":null,"kind":"{kind}","impl":"kiln","device":{},"error":{}}}"#,
                    json_str(name),
                    json_str(unit),
                    json_str(&device),
                    json_str(&e.to_string())
                ));
            }
        }
    }
    println!(
        "total {:.1} s, {failed} row(s) failed",
        start.elapsed().as_secs_f64()
    );
    if failed > 0 {
        std::process::exit(1);
    }
}
