//! Pixel shuffling: `pixel_shuffle` and `pixel_unshuffle` (resampling proper is
//! kernels/src/cpu/upsample.rs).

use crate::ops::backward::i64s;
use crate::{Error, Result, Tensor};

/// `pixel_shuffle(upscale_factor)`: `[*, C·r², H, W]` → `[*, C, H·r, W·r]`.
pub fn pixel_shuffle(t: &Tensor, upscale_factor: i64) -> Result<Tensor> {
    let op = "pixel_shuffle";
    if t.dim() < 3 {
        return Err(Error::shape(
            op,
            format!("pixel_shuffle expects input to have at least 3 dimensions, but got input with {} dimension(s)", t.dim()),
        ));
    }
    let r = upscale_factor;
    if r <= 0 {
        return Err(Error::value(
            op,
            format!("pixel_shuffle expects a positive upscale_factor, but got {r}"),
        ));
    }
    let nd = t.dim();
    let (c, h, w) = (
        t.shape()[nd - 3] as i64,
        t.shape()[nd - 2] as i64,
        t.shape()[nd - 1] as i64,
    );
    // r² beyond int64 divides only an empty channel dim.
    let rr = r.checked_mul(r);
    if rr.map_or(c != 0, |rr| c % rr != 0) {
        return Err(Error::shape(
            op,
            format!("pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, but input.size(-3)={c} is not divisible by {}", rr.map_or(format!("{r}^2"), |rr| rr.to_string())),
        ));
    }
    let (hr, wr) = match (h.checked_mul(r), w.checked_mul(r)) {
        (Some(hr), Some(wr)) => (hr, wr),
        _ => {
            return Err(Error::shape(
                op,
                format!("pixel_shuffle: the output size [{h} x {r}, {w} x {r}] overflows int64"),
            ))
        }
    };
    let out_c = rr.map_or(0, |rr| c / rr);
    let lead = i64s(&t.shape()[..nd - 3]);
    let mut shape = lead.clone();
    shape.extend([out_c, r, r, h, w]);
    let b = lead.len() as i64;
    let mut perm: Vec<i64> = (0..b).collect();
    perm.extend([b, b + 3, b + 1, b + 4, b + 2]);
    let mut out = lead;
    out.extend([out_c, hr, wr]);
    t.reshape(&shape)?.permute(&perm)?.reshape(&out)
}

/// `pixel_unshuffle(downscale_factor)`: `[*, C, H·r, W·r]` → `[*, C·r², H, W]`.
pub fn pixel_unshuffle(t: &Tensor, downscale_factor: i64) -> Result<Tensor> {
    let op = "pixel_unshuffle";
    if t.dim() < 3 {
        return Err(Error::shape(
            op,
            format!("pixel_unshuffle expects input to have at least 3 dimensions, but got input with {} dimension(s)", t.dim()),
        ));
    }
    let r = downscale_factor;
    if r <= 0 {
        return Err(Error::value(
            op,
            format!("pixel_unshuffle expects a positive downscale_factor, but got {r}"),
        ));
    }
    let nd = t.dim();
    let (c, h, w) = (
        t.shape()[nd - 3] as i64,
        t.shape()[nd - 2] as i64,
        t.shape()[nd - 1] as i64,
    );
    if h % r != 0 || w % r != 0 {
        return Err(Error::shape(
            op,
            format!("pixel_unshuffle expects height and width to be divisible by downscale_factor, but input has height {h} and width {w} and downscale_factor={r}"),
        ));
    }
    let lead = i64s(&t.shape()[..nd - 3]);
    let mut shape = lead.clone();
    shape.extend([c, h / r, r, w / r, r]);
    let b = lead.len() as i64;
    let mut perm: Vec<i64> = (0..b).collect();
    perm.extend([b, b + 2, b + 4, b + 1, b + 3]);
    let cr = c
        .checked_mul(r)
        .and_then(|v| v.checked_mul(r))
        .ok_or_else(|| {
            Error::value(
                op,
                format!("pixel_unshuffle: the output channels {c} x {r}^2 overflow int64"),
            )
        })?;
    let mut out = lead;
    out.extend([cr, h / r, w / r]);
    t.reshape(&shape)?.permute(&perm)?.reshape(&out)
}
