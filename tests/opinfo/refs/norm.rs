//! Float64 references for the fused normalization ops and their backward ops, and the
//! normalization functions built on them: plain loops
//! over row-major values. Forward: statistics in two passes, biased variance. Backward: the
//! closed-form gradients, with `a = g * w` and `xhat = (x - mean) * rstd` per group of
//! elements sharing statistics,
//! `dx = rstd * (a - mean(a) - xhat * mean(a * xhat))` (RMS norm: no `mean(a)`; batch norm
//! in evaluation: `dx = rstd * a`), `dw = Σ g * xhat`, `db = Σ g`.

use super::{input, numel, opt, tensor, unravel};
use crate::harness::{RefTensor, Sample};
use kiln::DType;

fn t(shape: Vec<usize>, data: Vec<f64>) -> RefTensor {
    RefTensor { shape, data }
}

/// The empty stand-in for an output `output_mask` leaves out.
fn absent() -> RefTensor {
    t(vec![0], vec![])
}

fn opt_values(s: &Sample, i: usize) -> Option<Vec<f64>> {
    s.opt_t(i).map(|x| RefTensor::of(x).data)
}

fn output_mask(s: &Sample) -> Vec<bool> {
    s.bools("output_mask").expect("output_mask").to_vec()
}

/// Elements in groups: `group[i]` is element i's statistics group, `param[i]` its weight
/// index.
struct Groups {
    group: Vec<usize>,
    param: Vec<usize>,
    count: usize,
}

impl Groups {
    /// `M` rows of `N`.
    fn rows(m: usize, n: usize) -> Groups {
        Groups {
            group: (0..m * n).map(|i| i / n).collect(),
            param: (0..m * n).map(|i| i % n).collect(),
            count: m,
        }
    }

    /// `[N, C, HxW]` in `groups` groups of channels.
    fn channel_groups(n: usize, c: usize, hxw: usize, groups: usize) -> Groups {
        let total = n * c * hxw;
        let cg = (c / groups.max(1)).max(1);
        Groups {
            group: (0..total)
                .map(|i| (i / (c * hxw)) * groups + (i / hxw % c) / cg)
                .collect(),
            param: (0..total).map(|i| i / hxw % c).collect(),
            count: n * groups,
        }
    }

    /// `[N, C, HxW]` by channel (batch norm).
    fn channels(n: usize, c: usize, hxw: usize) -> Groups {
        Groups {
            group: (0..n * c * hxw).map(|i| i / hxw % c).collect(),
            param: (0..n * c * hxw).map(|i| i / hxw % c).collect(),
            count: c,
        }
    }

    fn sizes(&self) -> Vec<f64> {
        let mut k = vec![0.0; self.count];
        for &g in &self.group {
            k[g] += 1.0;
        }
        k
    }

    /// Per group: the mean (0 when not `center`) and the biased variance about it.
    fn stats(&self, x: &[f64], center: bool) -> (Vec<f64>, Vec<f64>) {
        let k = self.sizes();
        let mut mean = vec![0.0; self.count];
        if center {
            for (v, &g) in x.iter().zip(&self.group) {
                mean[g] += v;
            }
            mean.iter_mut().zip(&k).for_each(|(m, k)| *m /= k);
        }
        let mut var = vec![0.0; self.count];
        for (v, &g) in x.iter().zip(&self.group) {
            var[g] += (v - mean[g]) * (v - mean[g]);
        }
        var.iter_mut().zip(&k).for_each(|(v, k)| *v /= k);
        (mean, var)
    }

    fn normalize(
        &self,
        x: &[f64],
        mean: &[f64],
        rstd: &[f64],
        w: Option<&[f64]>,
        b: Option<&[f64]>,
    ) -> Vec<f64> {
        x.iter()
            .enumerate()
            .map(|(i, v)| {
                let (g, p) = (self.group[i], self.param[i]);
                (v - mean[g]) * rstd[g] * w.map_or(1.0, |w| w[p]) + b.map_or(0.0, |b| b[p])
            })
            .collect()
    }

    /// `(dx, dw, db)`, `dw` / `db` with `params` entries.
    #[allow(clippy::too_many_arguments)]
    fn backward(
        &self,
        g: &[f64],
        x: &[f64],
        mean: &[f64],
        rstd: &[f64],
        w: Option<&[f64]>,
        params: usize,
        center: bool,
        stats_terms: bool,
    ) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let k = self.sizes();
        let a: Vec<f64> = (0..x.len())
            .map(|i| g[i] * w.map_or(1.0, |w| w[self.param[i]]))
            .collect();
        let xhat: Vec<f64> = (0..x.len())
            .map(|i| (x[i] - mean[self.group[i]]) * rstd[self.group[i]])
            .collect();
        let (mut s1, mut s2) = (vec![0.0; self.count], vec![0.0; self.count]);
        for i in 0..x.len() {
            let gi = self.group[i];
            s1[gi] += a[i];
            s2[gi] += a[i] * xhat[i];
        }
        let dx = (0..x.len())
            .map(|i| {
                let gi = self.group[i];
                let mut v = a[i];
                if stats_terms {
                    v -= xhat[i] * s2[gi] / k[gi];
                    if center {
                        v -= s1[gi] / k[gi];
                    }
                }
                rstd[gi] * v
            })
            .collect();
        let (mut dw, mut db) = (vec![0.0; params], vec![0.0; params]);
        for i in 0..x.len() {
            dw[self.param[i]] += g[i] * xhat[i];
            db[self.param[i]] += g[i];
        }
        (dx, dw, db)
    }
}

/// `(M, N)` and the trailing shape of a layer / RMS norm sample (`input` is tensor `at`).
fn rows(s: &Sample, at: usize) -> (usize, usize, Vec<usize>, Vec<usize>) {
    let shape = s.t(at).shape().to_vec();
    let k = s.ints("normalized_shape").expect("normalized_shape").len();
    let axis = shape.len() - k;
    let m = shape[..axis].iter().product();
    let n = shape[axis..].iter().product();
    let mut stat = shape[..axis].to_vec();
    stat.extend(std::iter::repeat_n(1, k));
    (m, n, shape[axis..].to_vec(), stat)
}

pub fn native_layer_norm(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let (m, n, _, stat) = rows(s, 0);
    let eps = s.float("eps").expect("eps");
    let gr = Groups::rows(m, n);
    let (mean, var) = gr.stats(&x.data, true);
    let rstd: Vec<f64> = var.iter().map(|v| 1.0 / (v + eps).sqrt()).collect();
    let y = gr.normalize(
        &x.data,
        &mean,
        &rstd,
        opt_values(s, 1).as_deref(),
        opt_values(s, 2).as_deref(),
    );
    vec![t(x.shape, y), t(stat.clone(), mean), t(stat, rstd)]
}

/// The three outputs of a backward op, `[0]` where `output_mask` leaves them out.
fn masked(
    m: &[bool],
    (dx, dw, db): (Vec<f64>, Vec<f64>, Vec<f64>),
    x_shape: Vec<usize>,
    p_shape: Vec<usize>,
) -> Vec<RefTensor> {
    let mut out = vec![
        if m[0] { t(x_shape, dx) } else { absent() },
        if m[1] {
            t(p_shape.clone(), dw)
        } else {
            absent()
        },
    ];
    if m.len() > 2 {
        out.push(if m[2] { t(p_shape, db) } else { absent() });
    }
    out
}

pub fn native_layer_norm_backward(s: &Sample) -> Vec<RefTensor> {
    let (g, x) = (input(s, 0), input(s, 1));
    let (mean, rstd) = (input(s, 2), input(s, 3));
    let (m, n, ns, _) = rows(s, 1);
    let gr = Groups::rows(m, n);
    let r = gr.backward(
        &g.data,
        &x.data,
        &mean.data,
        &rstd.data,
        opt_values(s, 4).as_deref(),
        n,
        true,
        true,
    );
    masked(&output_mask(s), r, x.shape, ns)
}

/// PyTorch's default `eps` of `_fused_rms_norm`: the opmath type's machine epsilon.
fn rms_eps(s: &Sample) -> f64 {
    s.opt_float("eps")
        .flatten()
        .unwrap_or(if s.t(0).dtype() == DType::F64 {
            f64::EPSILON
        } else {
            f32::EPSILON as f64
        })
}

pub fn fused_rms_norm(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let (m, n, _, stat) = rows(s, 0);
    let eps = rms_eps(s);
    let gr = Groups::rows(m, n);
    let (zero, ms) = gr.stats(&x.data, false);
    let rstd: Vec<f64> = ms.iter().map(|v| 1.0 / (v + eps).sqrt()).collect();
    let y = gr.normalize(&x.data, &zero, &rstd, opt_values(s, 1).as_deref(), None);
    vec![t(x.shape, y), t(stat, rstd)]
}

pub fn fused_rms_norm_backward(s: &Sample) -> Vec<RefTensor> {
    let (g, x, rstd) = (input(s, 0), input(s, 1), input(s, 2));
    let (m, n, ns, _) = rows(s, 1);
    let gr = Groups::rows(m, n);
    let zero = vec![0.0; m];
    let r = gr.backward(
        &g.data,
        &x.data,
        &zero,
        &rstd.data,
        opt_values(s, 3).as_deref(),
        n,
        false,
        true,
    );
    masked(&output_mask(s), r, x.shape, ns)
}

fn group_sizes(s: &Sample) -> (usize, usize, usize, usize) {
    let int = |k: &str| s.int(k).expect(k) as usize;
    (int("N"), int("C"), int("HxW"), int("group"))
}

pub fn native_group_norm(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let (n, c, hxw, groups) = group_sizes(s);
    let eps = s.float("eps").expect("eps");
    let gr = Groups::channel_groups(n, c, hxw, groups);
    let (mean, var) = gr.stats(&x.data, true);
    let rstd: Vec<f64> = var.iter().map(|v| 1.0 / (v + eps).sqrt()).collect();
    let y = gr.normalize(
        &x.data,
        &mean,
        &rstd,
        opt_values(s, 1).as_deref(),
        opt_values(s, 2).as_deref(),
    );
    vec![
        t(x.shape, y),
        t(vec![n, groups], mean),
        t(vec![n, groups], rstd),
    ]
}

pub fn native_group_norm_backward(s: &Sample) -> Vec<RefTensor> {
    let (g, x) = (input(s, 0), input(s, 1));
    let (mean, rstd) = (input(s, 2), input(s, 3));
    let (n, c, hxw, groups) = group_sizes(s);
    let gr = Groups::channel_groups(n, c, hxw, groups);
    let r = gr.backward(
        &g.data,
        &x.data,
        &mean.data,
        &rstd.data,
        opt_values(s, 4).as_deref(),
        c,
        true,
        true,
    );
    masked(&output_mask(s), r, x.shape, vec![c])
}

fn batch_sizes(shape: &[usize]) -> (usize, usize, usize) {
    (shape[0], shape[1], shape[2..].iter().product())
}

/// `[out, save_mean, save_invstd, running_mean_out, running_var_out]`.
fn batch_forward(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let (n, c, hxw) = batch_sizes(&x.shape);
    let (w, b, rm, rv) = (
        opt_values(s, 1),
        opt_values(s, 2),
        opt_values(s, 3),
        opt_values(s, 4),
    );
    let training = s.flag("training").expect("training");
    let momentum = s.float("momentum").expect("momentum");
    let eps = s.float("eps").expect("eps");
    let gr = Groups::channels(n, c, hxw);
    let stat_or_empty = |v: &Option<Vec<f64>>| match v {
        Some(v) => t(vec![c], v.clone()),
        None => absent(),
    };
    if !training {
        let (rm, rv) = (rm.clone().expect("rm"), rv.clone().expect("rv"));
        let inv: Vec<f64> = rv.iter().map(|v| 1.0 / (v + eps).sqrt()).collect();
        let y = gr.normalize(&x.data, &rm, &inv, w.as_deref(), b.as_deref());
        return vec![
            t(x.shape, y),
            absent(),
            absent(),
            t(vec![c], rm),
            t(vec![c], rv),
        ];
    }
    let (mean, var) = gr.stats(&x.data, true);
    let inv: Vec<f64> = var.iter().map(|v| 1.0 / (v + eps).sqrt()).collect();
    let y = gr.normalize(&x.data, &mean, &inv, w.as_deref(), b.as_deref());
    let cnt = (n * hxw) as f64;
    let new_rm = rm.map(|r| {
        r.iter()
            .zip(&mean)
            .map(|(r, m)| (1.0 - momentum) * r + momentum * m)
            .collect()
    });
    let new_rv = rv.map(|r| {
        r.iter()
            .zip(&var)
            .map(|(r, v)| (1.0 - momentum) * r + momentum * v * cnt / (cnt - 1.0))
            .collect()
    });
    vec![
        t(x.shape, y),
        t(vec![c], mean),
        t(vec![c], inv),
        stat_or_empty(&new_rm),
        stat_or_empty(&new_rv),
    ]
}

pub fn native_batch_norm(s: &Sample) -> Vec<RefTensor> {
    batch_forward(s).into_iter().take(3).collect()
}

pub fn batch_norm_functional(s: &Sample) -> Vec<RefTensor> {
    batch_forward(s)
}

pub fn native_batch_norm_backward(s: &Sample) -> Vec<RefTensor> {
    let (g, x) = (input(s, 0), input(s, 1));
    let (n, c, hxw) = batch_sizes(&x.shape);
    let train = s.flag("train").expect("train");
    let eps = s.float("eps").expect("eps");
    let (mean, rstd) = if train {
        (
            opt_values(s, 5).expect("save_mean"),
            opt_values(s, 6).expect("save_invstd"),
        )
    } else {
        let rv = opt_values(s, 4).expect("running_var");
        (
            opt_values(s, 3).expect("running_mean"),
            rv.iter().map(|v| 1.0 / (v + eps).sqrt()).collect(),
        )
    };
    let gr = Groups::channels(n, c, hxw);
    let r = gr.backward(
        &g.data,
        &x.data,
        &mean,
        &rstd,
        opt_values(s, 2).as_deref(),
        c,
        true,
        train,
    );
    masked(&output_mask(s), r, x.shape, vec![c])
}

// ---------------------------------------------------------------------------------------
// Normalization functions
// ---------------------------------------------------------------------------------------

/// Normalizes groups of `x` (elements with the same `key(index)`), then applies per-element
/// `scale`/`shift`.
fn normalize_by(
    x: &RefTensor,
    key: impl Fn(&[usize]) -> usize,
    stats: Option<(&[f64], &[f64])>,
    eps: f64,
    affine: impl Fn(&[usize], f64) -> f64,
) -> RefTensor {
    let keys: Vec<usize> = (0..x.data.len())
        .map(|i| key(&unravel(i, &x.shape)))
        .collect();
    let groups = keys.iter().max().map_or(0, |m| m + 1);
    let (mut sum, mut cnt) = (vec![0.0; groups], vec![0.0; groups]);
    for (i, &g) in keys.iter().enumerate() {
        sum[g] += x.data[i];
        cnt[g] += 1.0;
    }
    let mean: Vec<f64> = (0..groups).map(|g| sum[g] / cnt[g]).collect();
    let mut sq = vec![0.0; groups];
    for (i, &g) in keys.iter().enumerate() {
        sq[g] += (x.data[i] - mean[g]).powi(2);
    }
    let var: Vec<f64> = (0..groups).map(|g| sq[g] / cnt[g]).collect();
    let data = (0..x.data.len())
        .map(|i| {
            let g = keys[i];
            let (m, v) = match stats {
                Some((rm, rv)) => (rm[g], rv[g]),
                None => (mean[g], var[g]),
            };
            affine(&unravel(i, &x.shape), (x.data[i] - m) / (v + eps).sqrt())
        })
        .collect();
    tensor(x.shape.clone(), data)
}

pub fn batch_norm(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let (w, b, rm, rv) = (opt(s, 1), opt(s, 2), opt(s, 3), opt(s, 4));
    let training = s.flag("training").expect("training");
    let eps = s.float("eps").expect("eps");
    let stats = if training {
        None
    } else {
        Some((
            rm.as_ref().expect("rm").data.as_slice(),
            rv.as_ref().expect("rv").data.as_slice(),
        ))
    };
    let y = normalize_by(
        &x,
        |ix| ix[1],
        stats,
        eps,
        |ix, v| {
            v * w.as_ref().map_or(1.0, |w| w.data[ix[1]])
                + b.as_ref().map_or(0.0, |b| b.data[ix[1]])
        },
    );
    vec![y]
}

/// Layer/RMS norm helpers: the flat index within the trailing `k` dims, and the row.
fn trailing(ix: &[usize], shape: &[usize], k: usize) -> (usize, usize) {
    let nd = shape.len();
    let inner = ix[nd - k..]
        .iter()
        .zip(&shape[nd - k..])
        .fold(0, |a, (&i, &s)| a * s + i);
    let row = ix[..nd - k]
        .iter()
        .zip(&shape[..nd - k])
        .fold(0, |a, (&i, &s)| a * s + i);
    (row, inner)
}

pub fn layer_norm(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let k = s.ints("normalized_shape").expect("normalized_shape").len();
    let (w, b) = (opt(s, 1), opt(s, 2));
    let eps = s.float("eps").unwrap_or(1e-5);
    let shape = x.shape.clone();
    let y = normalize_by(
        &x,
        |ix| trailing(ix, &shape, k).0,
        None,
        eps,
        |ix, v| {
            let i = trailing(ix, &shape, k).1;
            v * w.as_ref().map_or(1.0, |w| w.data[i]) + b.as_ref().map_or(0.0, |b| b.data[i])
        },
    );
    vec![y]
}

pub fn group_norm(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let g = s.int("num_groups").expect("num_groups") as usize;
    let (w, b) = (opt(s, 1), opt(s, 2));
    let eps = s.float("eps").unwrap_or(1e-5);
    let per = x.shape[1] / g;
    let y = normalize_by(
        &x,
        |ix| ix[0] * g + ix[1] / per,
        None,
        eps,
        |ix, v| {
            v * w.as_ref().map_or(1.0, |w| w.data[ix[1]])
                + b.as_ref().map_or(0.0, |b| b.data[ix[1]])
        },
    );
    vec![y]
}

pub fn instance_norm(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let (w, b) = (opt(s, 1), opt(s, 2));
    let eps = s.float("eps").expect("eps");
    let c = x.shape[1];
    let y = normalize_by(
        &x,
        |ix| ix[0] * c + ix[1],
        None,
        eps,
        |ix, v| {
            v * w.as_ref().map_or(1.0, |w| w.data[ix[1]])
                + b.as_ref().map_or(0.0, |b| b.data[ix[1]])
        },
    );
    vec![y]
}

pub fn rms_norm(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let k = s.ints("normalized_shape").expect("normalized_shape").len();
    let w = opt(s, 1);
    let eps = s.float("eps").unwrap_or(match s.t(0).dtype() {
        kiln::DType::F16 => 0.0009765625,
        kiln::DType::BF16 => 0.0078125,
        kiln::DType::F32 => f32::EPSILON as f64,
        _ => f64::EPSILON,
    });
    let shape = x.shape.clone();
    let rows = x.data.len() / numel(&shape[shape.len() - k..]).max(1);
    let mut ms = vec![0.0; rows];
    let per = numel(&shape[shape.len() - k..]) as f64;
    for i in 0..x.data.len() {
        let (r, _) = trailing(&unravel(i, &shape), &shape, k);
        ms[r] += x.data[i] * x.data[i] / per;
    }
    let data = (0..x.data.len())
        .map(|i| {
            let (r, inner) = trailing(&unravel(i, &shape), &shape, k);
            x.data[i] / (ms[r] + eps).sqrt() * w.as_ref().map_or(1.0, |w| w.data[inner])
        })
        .collect();
    vec![tensor(shape, data)]
}
