//! Which gradients travel together: PyTorch's `compute_bucket_assignment_by_size`.

use kiln_core::{DType, Device};

/// PyTorch's `dist._DEFAULT_FIRST_BUCKET_BYTES`: the bucket holding the parameters defined
/// first (reduced last) is kept small, so little communication is left once backward ends.
pub(crate) const FIRST_BUCKET_BYTES: usize = 1024 * 1024;

/// What bucketing needs to know of a parameter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ParamSpec {
    pub numel: usize,
    pub dtype: DType,
    pub device: Device,
}

impl ParamSpec {
    fn bytes(&self) -> usize {
        self.numel * self.dtype.size_in_bytes()
    }
}

/// Splits `params` (given in `parameters()` order) into buckets of one dtype and device each,
/// in the order their all-reduces are launched: reverse definition order, because backward
/// produces the gradients of the last layers first (PyTorch assigns in definition order with
/// the limits `[first_bucket_bytes, cap_bytes]` per dtype and device, then reverses the list).
///
/// Each bucket holds at most `cap_bytes` (the first one `min(first_bucket_bytes,
/// cap_bytes)`), except that a parameter larger than the limit gets a bucket of its own.
/// PyTorch closes a bucket once it reaches the limit, so its buckets may overshoot by one
/// parameter; kiln keeps the cap as a bound. Within a bucket, parameters keep definition
/// order (their places in the flat buffer).
pub(crate) fn assign_buckets(
    params: &[ParamSpec],
    first_bucket_bytes: usize,
    cap_bytes: usize,
) -> Vec<Vec<usize>> {
    struct Open {
        key: (DType, Device),
        members: Vec<usize>,
        bytes: usize,
        /// How many buckets of this key were closed already (picks the limit).
        closed: usize,
    }
    let limit = |closed: usize| {
        if closed == 0 {
            first_bucket_bytes.min(cap_bytes)
        } else {
            cap_bytes
        }
    };
    let mut open: Vec<Open> = Vec::new();
    let mut done: Vec<Vec<usize>> = Vec::new();
    for (i, p) in params.iter().enumerate() {
        let key = (p.dtype, p.device);
        let slot = match open.iter().position(|o| o.key == key) {
            Some(s) => s,
            None => {
                open.push(Open {
                    key,
                    members: Vec::new(),
                    bytes: 0,
                    closed: 0,
                });
                open.len() - 1
            }
        };
        let o = &mut open[slot];
        if !o.members.is_empty() && o.bytes + p.bytes() > limit(o.closed) {
            done.push(std::mem::take(&mut o.members));
            o.bytes = 0;
            o.closed += 1;
        }
        o.members.push(i);
        o.bytes += p.bytes();
    }
    done.extend(
        open.into_iter()
            .map(|o| o.members)
            .filter(|m| !m.is_empty()),
    );
    // Definition order of each bucket's first parameter, then reversed: launch order.
    done.sort_by_key(|b| b[0]);
    done.reverse();
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32s(numels: &[usize]) -> Vec<ParamSpec> {
        numels
            .iter()
            .map(|&numel| ParamSpec {
                numel,
                dtype: DType::F32,
                device: Device::Cpu,
            })
            .collect()
    }

    #[test]
    fn buckets_are_launched_in_reverse_parameter_order() {
        // Four parameters of 100 bytes, a cap of 200: [0, 1] [2, 3], launched last first.
        let b = assign_buckets(&f32s(&[25, 25, 25, 25]), 200, 200);
        assert_eq!(b, vec![vec![2, 3], vec![0, 1]]);
    }

    #[test]
    fn every_bucket_stays_within_the_cap_and_every_parameter_appears_once() {
        let sizes = [10, 300, 7, 64, 64, 1, 129, 33, 250, 2];
        let params = f32s(&sizes);
        let cap = 512;
        let b = assign_buckets(&params, cap, cap);
        let mut seen: Vec<usize> = b.iter().flatten().copied().collect();
        seen.sort();
        assert_eq!(seen, (0..sizes.len()).collect::<Vec<_>>());
        for bucket in &b {
            let bytes: usize = bucket.iter().map(|&i| sizes[i] * 4).sum();
            assert!(
                bytes <= cap || bucket.len() == 1,
                "{bucket:?}: {bytes} bytes"
            );
        }
    }

    #[test]
    fn a_parameter_larger_than_the_cap_gets_its_own_bucket() {
        let b = assign_buckets(&f32s(&[1, 1000, 1]), 64, 64);
        assert_eq!(b, vec![vec![2], vec![1], vec![0]]);
    }

    #[test]
    fn the_first_defined_parameters_get_the_small_first_bucket() {
        // Limits [8 bytes, 400 bytes]: parameter 0 (and only it) fills the first bucket.
        let b = assign_buckets(&f32s(&[2, 2, 2, 2]), 8, 400);
        assert_eq!(b, vec![vec![1, 2, 3], vec![0]]);
    }

    #[test]
    fn dtypes_and_devices_never_share_a_bucket() {
        let mut params = f32s(&[4, 4, 4, 4]);
        params[1].dtype = DType::F64;
        params[3].dtype = DType::F64;
        let b = assign_buckets(&params, 1 << 20, 1 << 20);
        assert_eq!(b, vec![vec![1, 3], vec![0, 2]]);
    }
}
