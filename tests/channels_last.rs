//! Channels-last memory format (`torch.channels_last`): the layout API's strides and errors
//! as PyTorch gives them, and a small network (convolution, batch norm, ReLU, max pooling,
//! a strided convolution, backward) run on channels-last `f32` tensors: every activation
//! stays channels-last with no layout copy between layers, and values and gradients equal
//! the same network run on row-major `f64` tensors (kiln's portable kernels, checked
//! against float64 definitions in the OpInfo matrix).

use kiln::{DType, MemoryFormat, Tensor};

const CL: MemoryFormat = MemoryFormat::ChannelsLast;

/// Deterministic values in [-1, 1) from Rust arithmetic (no kernel, no generator).
fn wave(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        })
        .collect()
}

fn leaf(data: Vec<f64>, shape: &[usize], dtype: DType) -> Tensor {
    leaf_in(data, shape, dtype, MemoryFormat::Contiguous)
}

/// A leaf laid out in `format` where it applies to its rank.
fn leaf_in(data: Vec<f64>, shape: &[usize], dtype: DType, format: MemoryFormat) -> Tensor {
    let mut t = Tensor::from_vec(data, shape)
        .unwrap()
        .to_dtype(dtype)
        .unwrap();
    if shape.len() == 4 {
        t = t.to_memory_format(format).unwrap();
    }
    t.requires_grad_(true).unwrap()
}

fn f64s(t: &Tensor) -> Vec<f64> {
    t.to_vec::<f64>().unwrap()
}

fn close(what: &str, got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    let scale = want.iter().fold(1e-3f64, |m, v| m.max(v.abs()));
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 2e-4 * scale,
            "{what}[{i}]: {g} vs {w} (scale {scale})"
        );
    }
}

#[test]
fn layout_api_matches_pytorch() {
    let x = Tensor::from_vec(wave(120, 1), &[2, 3, 4, 5]).unwrap();
    assert_eq!(x.suggest_memory_format(), MemoryFormat::Contiguous);
    let y = x.to_memory_format(CL).unwrap();
    // torch.empty(2, 3, 4, 5).to(memory_format=torch.channels_last).stride()
    assert_eq!(y.strides(), &[60, 1, 15, 3]);
    assert_eq!(y.shape(), x.shape());
    assert_eq!(y.suggest_memory_format(), CL);
    assert!(y.is_contiguous_as(CL).unwrap());
    assert!(!y.is_contiguous());
    assert_eq!(f64s(&y), f64s(&x), "same logical values");
    // Already channels-last: the tensor itself; back to row-major: a copy.
    assert!(y.contiguous_as(CL).unwrap().is_same(&y));
    assert!(y
        .to_memory_format(MemoryFormat::Preserve)
        .unwrap()
        .is_same(&y));
    let back = y.contiguous_as(MemoryFormat::Contiguous).unwrap();
    assert!(back.is_contiguous());
    assert_eq!(f64s(&back), f64s(&x));
    // PyTorch's errors.
    let flat = Tensor::from_vec(wave(6, 2), &[2, 3]).unwrap();
    let e = flat.contiguous_as(CL).unwrap_err().to_string();
    assert!(
        e.contains("required rank 4 tensor to use channels_last format"),
        "{e}"
    );
    let e = flat
        .contiguous_as(MemoryFormat::ChannelsLast3d)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("required rank 5 tensor to use channels_last_3d format"),
        "{e}"
    );
    let e = x
        .is_contiguous_as(MemoryFormat::Preserve)
        .unwrap_err()
        .to_string();
    assert!(e.contains("preserve memory format is unsupported"), "{e}");
    // A 5-d tensor in channels_last_3d.
    let v = Tensor::from_vec(wave(720, 3), &[2, 3, 4, 5, 6]).unwrap();
    let v3 = v.to_memory_format(MemoryFormat::ChannelsLast3d).unwrap();
    assert_eq!(v3.strides(), &[360, 1, 90, 18, 3]);
    assert_eq!(v3.suggest_memory_format(), MemoryFormat::ChannelsLast3d);
}

#[test]
fn conversion_is_differentiable() {
    let x = leaf(wave(48, 4), &[1, 3, 4, 4], DType::F32);
    let w = Tensor::from_vec(wave(48, 5), &[1, 3, 4, 4])
        .unwrap()
        .to_dtype(DType::F32)
        .unwrap();
    let y = x.to_memory_format(CL).unwrap();
    y.mul(&w).unwrap().sum().unwrap().backward().unwrap();
    close("d/dx", &f64s(&x.grad().unwrap()), &f64s(&w));
}

/// The network's parameters, in `dtype`, leaves.
struct Net {
    x: Tensor,
    w1: Tensor,
    b1: Tensor,
    gamma: Tensor,
    beta: Tensor,
    wd: Tensor,
    w2: Tensor,
}

impl Net {
    /// The image and the convolution weights laid out in `format`.
    fn new(dtype: DType, format: MemoryFormat) -> Net {
        Net {
            x: leaf_in(wave(4 * 8 * 12 * 12, 10), &[4, 8, 12, 12], dtype, format),
            w1: leaf_in(wave(16 * 8 * 9, 11), &[16, 8, 3, 3], dtype, format),
            b1: leaf(wave(16, 12), &[16], dtype),
            gamma: leaf(
                wave(16, 13).iter().map(|v| 1.0 + 0.5 * v).collect(),
                &[16],
                dtype,
            ),
            beta: leaf(wave(16, 14), &[16], dtype),
            wd: leaf_in(wave(16 * 9, 16), &[16, 1, 3, 3], dtype, format),
            w2: leaf_in(wave(8 * 16 * 9, 15), &[8, 16, 3, 3], dtype, format),
        }
    }

    /// The forward; every activation is passed to `seen`.
    fn run(&self, seen: &mut dyn FnMut(&str, &Tensor)) -> Tensor {
        let (x, w1, w2) = (&self.x, &self.w1, &self.w2);
        let h = kiln::conv2d_with(x, w1, Some(&self.b1), [1, 1], [1, 1], [1, 1], 1).unwrap();
        seen("conv1", &h);
        let h = kiln::batch_norm(
            &h,
            Some(&self.gamma),
            Some(&self.beta),
            None,
            None,
            true,
            0.1,
            1e-5,
            false,
        )
        .unwrap();
        seen("batch_norm", &h);
        let h = h.relu().unwrap();
        seen("relu", &h);
        let h = kiln::conv2d_with(&h, &self.wd, None, [1, 1], [1, 1], [1, 1], 16).unwrap();
        seen("depthwise conv", &h);
        let h = kiln::max_pool2d_with(&h, &[3, 3], &[2, 2], &[1, 1], &[1, 1], false).unwrap();
        seen("max_pool2d", &h);
        let h = kiln::conv2d_with(&h, w2, None, [2, 2], [1, 1], [1, 1], 1).unwrap();
        seen("conv2 (stride 2)", &h);
        let h = h.add(&h.mul_scalar(0.5).unwrap()).unwrap();
        seen("add", &h);
        h
    }

    fn grads(&self) -> Vec<(&'static str, Vec<f64>)> {
        [
            ("x", &self.x),
            ("w1", &self.w1),
            ("b1", &self.b1),
            ("gamma", &self.gamma),
            ("beta", &self.beta),
            ("wd", &self.wd),
            ("w2", &self.w2),
        ]
        .into_iter()
        .map(|(n, t)| (n, f64s(&t.grad().unwrap())))
        .collect()
    }
}

/// The loss: a fixed weighting of the output, so every output element's gradient differs.
fn loss(y: &Tensor) -> Tensor {
    let w = Tensor::from_vec(wave(y.numel(), 20), y.shape())
        .unwrap()
        .to_dtype(y.dtype())
        .unwrap();
    y.mul(&w).unwrap().sum().unwrap()
}

#[test]
fn a_channels_last_network_stays_channels_last_and_matches_row_major() {
    let reference = Net::new(DType::F64, MemoryFormat::Contiguous);
    let want = reference.run(&mut |_, _| {});
    loss(&want).backward().unwrap();

    let net = Net::new(DType::F32, CL);
    let mut layouts = Vec::new();
    let got =
        net.run(&mut |name, t| layouts.push((name.to_string(), t.is_contiguous_as(CL).unwrap())));
    for (name, channels_last) in &layouts {
        assert!(channels_last, "{name}'s output is not channels-last");
    }
    close("output", &f64s(&got), &f64s(&want));
    loss(&got).backward().unwrap();
    // A channels-last leaf's gradient comes back channels-last, as PyTorch's does.
    assert!(net.x.grad().unwrap().is_contiguous_as(CL).unwrap());
    for ((name, g), (_, w)) in net.grads().iter().zip(reference.grads()) {
        if *name == "b1" {
            // A bias before a training-mode batch norm gets exactly zero: rounding only.
            assert!(g.iter().all(|v| v.abs() < 1e-4), "d/db1 {g:?}");
            assert!(w.iter().all(|v| v.abs() < 1e-9), "f64 d/db1 {w:?}");
            continue;
        }
        close(&format!("d/d{name}"), g, &w);
    }
}

#[test]
fn max_pool_indices_are_plane_offsets_in_either_layout() {
    let x = Tensor::from_vec(wave(2 * 5 * 7 * 6, 30), &[2, 5, 7, 6]).unwrap();
    let (v, i) =
        kiln::max_pool2d_with_indices_with(&x, &[3, 2], &[2, 2], &[1, 1], &[1, 1], true).unwrap();
    let xl = x.to_memory_format(CL).unwrap();
    let (vl, il) =
        kiln::max_pool2d_with_indices_with(&xl, &[3, 2], &[2, 2], &[1, 1], &[1, 1], true).unwrap();
    assert!(vl.is_contiguous_as(CL).unwrap() && il.is_contiguous_as(CL).unwrap());
    // The same maxima at the same flat `H × W` indices: a float64 scan of each window.
    let xs = f64s(&x);
    let (oh, ow) = (v.shape()[2], v.shape()[3]);
    let mut want_v = Vec::new();
    let mut want_i = Vec::new();
    for p in 0..10 {
        for a in 0..oh {
            for b in 0..ow {
                let mut best = (f64::NEG_INFINITY, 0i64);
                for r in (2 * a) as i64 - 1..(2 * a) as i64 + 2 {
                    for c in (2 * b) as i64 - 1..(2 * b) as i64 + 1 {
                        if r < 0 || c < 0 || r >= 7 || c >= 6 {
                            continue;
                        }
                        let val = xs[p * 42 + (r * 6 + c) as usize];
                        if val > best.0 {
                            best = (val, r * 6 + c);
                        }
                    }
                }
                want_v.push(best.0);
                want_i.push(best.1);
            }
        }
    }
    close("values", &f64s(&v), &want_v);
    close("channels-last values", &f64s(&vl), &want_v);
    assert_eq!(i.to_vec::<i64>().unwrap(), want_i);
    assert_eq!(il.to_vec::<i64>().unwrap(), want_i);
}

#[test]
fn the_meta_device_gives_the_cpus_channels_last_strides() {
    let x = Tensor::from_vec(wave(2 * 3 * 6 * 6, 40), &[2, 3, 6, 6])
        .unwrap()
        .to_memory_format(CL)
        .unwrap();
    let w = Tensor::from_vec(wave(4 * 3 * 9, 41), &[4, 3, 3, 3]).unwrap();
    let cpu = kiln::conv2d_with(&x, &w, None, [1, 1], [1, 1], [1, 1], 1).unwrap();
    let (xm, wm) = (
        x.to_device(kiln::Device::Meta).unwrap(),
        w.to_device(kiln::Device::Meta).unwrap(),
    );
    assert_eq!(xm.strides(), x.strides());
    let meta = kiln::conv2d_with(&xm, &wm, None, [1, 1], [1, 1], [1, 1], 1).unwrap();
    assert_eq!(meta.shape(), cpu.shape());
    assert_eq!(meta.strides(), cpu.strides());
    assert!(meta.is_contiguous_as(CL).unwrap());
}
