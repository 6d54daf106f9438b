//! `f32` buffers kept between calls, for kernels that widen half-precision operands into
//! large temporary copies (a bf16 convolution's input and `f32` output). Allocating those
//! fresh each call cost a fifth of a [16,64,56,56] bf16 convolution in page faults and
//! zeroing; a few are kept instead, up to [`KEEP_BYTES`] in all.

use std::sync::Mutex;

/// Most bytes kept idle across all buffers.
const KEEP_BYTES: usize = 96 << 20;
/// Most buffers kept idle.
const KEEP_COUNT: usize = 4;

static IDLE: Mutex<Vec<Vec<f32>>> = Mutex::new(Vec::new());

/// A buffer of `len` `f32`s whose contents are unspecified (stale values of an earlier use,
/// or zeros): the caller writes every element before reading it. Return it with [`give`].
pub(crate) fn take(len: usize) -> Vec<f32> {
    let found = {
        let mut idle = IDLE.lock().unwrap_or_else(|e| e.into_inner());
        // The smallest idle buffer that holds `len`.
        let best = (0..idle.len())
            .filter(|&i| idle[i].capacity() >= len)
            .min_by_key(|&i| idle[i].capacity());
        best.map(|i| idle.swap_remove(i))
    };
    let mut v = match found {
        Some(mut v) => {
            if v.len() < len {
                v.resize(len, 0.0);
            }
            v.truncate(len);
            v
        }
        None => vec![0.0; len],
    };
    // Under test, NaNs: a kernel that reads an element before writing it shows in results.
    if cfg!(debug_assertions) {
        v.fill(f32::NAN);
    }
    v
}

/// Keeps `v` for a later [`take`] if the idle buffers stay within [`KEEP_BYTES`] and
/// [`KEEP_COUNT`] (evicting the smallest first), else frees it.
pub(crate) fn give(v: Vec<f32>) {
    let bytes = |b: &Vec<f32>| b.capacity() * 4;
    if bytes(&v) > KEEP_BYTES || v.capacity() == 0 {
        return;
    }
    let mut idle = IDLE.lock().unwrap_or_else(|e| e.into_inner());
    idle.push(v);
    idle.sort_by_key(|b| std::cmp::Reverse(b.capacity()));
    let mut total = 0;
    let keep = idle
        .iter()
        .take_while(|b| {
            total += bytes(b);
            total <= KEEP_BYTES
        })
        .count()
        .min(KEEP_COUNT);
    idle.truncate(keep);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_reused_and_bounded() {
        let a = take(1000);
        assert_eq!(a.len(), 1000);
        give(a);
        let b = take(10);
        assert_eq!(b.len(), 10);
        give(b);
        let c = take(2000);
        assert_eq!(c.len(), 2000);
        give(c);
        // Too large to keep: dropped, and the idle set stays within its limits.
        give(vec![0.0; KEEP_BYTES / 4 + 1]);
        let idle = IDLE.lock().unwrap();
        assert!(idle.len() <= KEEP_COUNT);
        assert!(idle.iter().map(|b| b.capacity() * 4).sum::<usize>() <= KEEP_BYTES);
    }
}
