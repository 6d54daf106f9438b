//! Float64 references for upsampling (nearest, bilinear), its backward ops and pixel
//! (un)shuffle.

use super::{input, numel, tensor, unravel};
use crate::harness::{RefTensor, Sample};

/// Each output dim reads input `floor(dst * in / out)` (or `/ scale`).
pub fn upsample_nearest(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let out: Vec<usize> = s
        .ints("output_size")
        .expect("output_size")
        .iter()
        .map(|&v| v as usize)
        .collect();
    let n = out.len();
    let scales: Vec<Option<f64>> = match n {
        1 => vec![s.float("scales")],
        _ => vec![s.float("scales_h"), s.float("scales_w")],
    };
    let mut shape = x.shape[..2].to_vec();
    shape.extend(&out);
    let data = (0..numel(&shape))
        .map(|f| {
            let ix = unravel(f, &shape);
            let mut j = ix[..2].to_vec();
            for i in 0..n {
                let size = x.shape[2 + i];
                let r = scales[i].map_or(size as f64 / out[i] as f64, |sc| 1.0 / sc);
                j.push(((ix[2 + i] as f64 * r).floor() as usize).min(size - 1));
            }
            x.data[x.ravel(&j)]
        })
        .collect();
    vec![tensor(shape, data)]
}

/// Bilinear: the source coordinate per dim, then the four neighbours weighted.
pub fn upsample_bilinear2d(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let out: Vec<usize> = s
        .ints("output_size")
        .expect("output_size")
        .iter()
        .map(|&v| v as usize)
        .collect();
    let align = s.flag("align_corners").expect("align_corners");
    let src = |o: usize, size: usize, out: usize| -> (usize, usize, f64) {
        let v = if align {
            if out > 1 {
                o as f64 * (size - 1) as f64 / (out - 1) as f64
            } else {
                0.0
            }
        } else {
            ((o as f64 + 0.5) * size as f64 / out as f64 - 0.5).max(0.0)
        };
        let i0 = (v.floor() as usize).min(size - 1);
        (i0, (i0 + 1).min(size - 1), v - i0 as f64)
    };
    let mut shape = x.shape[..2].to_vec();
    shape.extend(&out);
    let data = (0..numel(&shape))
        .map(|f| {
            let ix = unravel(f, &shape);
            let (h0, h1, lh) = src(ix[2], x.shape[2], out[0]);
            let (w0, w1, lw) = src(ix[3], x.shape[3], out[1]);
            let at = |h: usize, w: usize| x.data[x.ravel(&[ix[0], ix[1], h, w])];
            (1.0 - lh) * ((1.0 - lw) * at(h0, w0) + lw * at(h0, w1))
                + lh * ((1.0 - lw) * at(h1, w0) + lw * at(h1, w1))
        })
        .collect();
    vec![tensor(shape, data)]
}

/// The `(input index, weight)` pairs output `o` of a resampled dim reads: the input
/// `floor(o * ratio)` (nearest), or the two around PyTorch's source position (linear).
fn taps(
    o: usize,
    size: usize,
    out: usize,
    scale: Option<f64>,
    linear: Option<bool>,
) -> Vec<(usize, f64)> {
    let ratio = |align: bool| {
        if align {
            if out > 1 {
                (size - 1) as f64 / (out - 1) as f64
            } else {
                0.0
            }
        } else {
            match scale {
                Some(sc) if sc > 0.0 => 1.0 / sc,
                _ => size as f64 / out as f64,
            }
        }
    };
    match linear {
        None => vec![(
            ((o as f64 * ratio(false)).floor() as usize).min(size - 1),
            1.0,
        )],
        Some(align) => {
            let v = if align {
                ratio(true) * o as f64
            } else {
                (ratio(false) * (o as f64 + 0.5) - 0.5).max(0.0)
            };
            let i0 = (v.floor() as usize).min(size - 1);
            let l = v - i0 as f64;
            vec![(i0, 1.0 - l), ((i0 + 1).min(size - 1), l)]
        }
    }
}

/// The gradient of a resampling: each element of `grad_output` (sample tensor 0) added, with
/// the weights of the taps it read along each spatial dim, into a zero tensor of
/// `input_size`.
fn resample_backward(s: &Sample, scales: &[Option<f64>], linear: Option<bool>) -> Vec<RefTensor> {
    let g = input(s, 0);
    let shape: Vec<usize> = s
        .ints("input_size")
        .expect("input_size")
        .iter()
        .map(|&v| v as usize)
        .collect();
    let mut out = tensor(shape.clone(), vec![0.0; numel(&shape)]);
    let n = shape.len() - 2;
    for f in 0..g.data.len() {
        let ix = unravel(f, &g.shape);
        let per_dim: Vec<Vec<(usize, f64)>> = (0..n)
            .map(|d| taps(ix[2 + d], shape[2 + d], g.shape[2 + d], scales[d], linear))
            .collect();
        let mut combos: Vec<(Vec<usize>, f64)> = vec![(ix[..2].to_vec(), 1.0)];
        for dim_taps in &per_dim {
            combos = combos
                .iter()
                .flat_map(|(j, w)| {
                    dim_taps.iter().map(move |&(i, tw)| {
                        let mut j = j.clone();
                        j.push(i);
                        (j, w * tw)
                    })
                })
                .collect();
        }
        for (j, w) in combos {
            let p = out.ravel(&j);
            out.data[p] += w * g.data[f];
        }
    }
    vec![out]
}

/// upsample_nearest1d_backward / upsample_nearest2d_backward.
pub fn upsample_nearest_backward(s: &Sample) -> Vec<RefTensor> {
    let scales = match s.ints("output_size").expect("output_size").len() {
        1 => vec![s.float("scales")],
        _ => vec![s.float("scales_h"), s.float("scales_w")],
    };
    resample_backward(s, &scales, None)
}

pub fn upsample_bilinear2d_backward(s: &Sample) -> Vec<RefTensor> {
    let align = s.flag("align_corners").expect("align_corners");
    resample_backward(s, &[s.float("scales_h"), s.float("scales_w")], Some(align))
}

pub fn pixel_shuffle(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let r = s.int("upscale_factor").expect("upscale_factor") as usize;
    let nd = x.shape.len();
    let (c, h, w) = (x.shape[nd - 3], x.shape[nd - 2], x.shape[nd - 1]);
    let mut shape = x.shape[..nd - 3].to_vec();
    shape.extend([c / (r * r), h * r, w * r]);
    let data = (0..numel(&shape))
        .map(|f| {
            let ix = unravel(f, &shape);
            let (co, ho, wo) = (ix[nd - 3], ix[nd - 2], ix[nd - 1]);
            let mut j = ix[..nd - 3].to_vec();
            j.extend([co * r * r + (ho % r) * r + wo % r, ho / r, wo / r]);
            x.data[x.ravel(&j)]
        })
        .collect();
    vec![tensor(shape, data)]
}

pub fn pixel_unshuffle(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let r = s.int("downscale_factor").expect("downscale_factor") as usize;
    let nd = x.shape.len();
    let (c, h, w) = (x.shape[nd - 3], x.shape[nd - 2], x.shape[nd - 1]);
    let mut shape = x.shape[..nd - 3].to_vec();
    shape.extend([c * r * r, h / r, w / r]);
    let data = (0..numel(&shape))
        .map(|f| {
            let ix = unravel(f, &shape);
            let (co, ho, wo) = (ix[nd - 3], ix[nd - 2], ix[nd - 1]);
            let (ci, off) = (co / (r * r), co % (r * r));
            let mut j = ix[..nd - 3].to_vec();
            j.extend([ci, ho * r + off / r, wo * r + off % r]);
            x.data[x.ravel(&j)]
        })
        .collect();
    vec![tensor(shape, data)]
}
