//! What a rank is about to run, exchanged before every collective so that ranks that
//! disagree (another op, shape or dtype, or a rank that never arrives) fail with an error
//! on every rank instead of corrupting memory or hanging: PyTorch's `CollectiveFingerPrint`
//! (its `TORCH_DISTRIBUTED_DEBUG=DETAIL` check), always on here.

use crate::engine::{Job, Op};
use kiln_core::{DType, Device, Tensor};

/// Words in a fingerprint: sequence number, op, dtype, reduction, root, device, rank
/// count, element count, dims (up to `MAX_DIMS`).
pub(crate) const LEN: usize = 16;
const MAX_DIMS: usize = 8;
/// Marks a shape that may differ across ranks (all_to_all_single's input).
const ANY: i64 = -2;

pub(crate) type Fingerprint = [i64; LEN];

const OPS: [&str; 8] = [
    "ALLREDUCE",
    "BROADCAST",
    "REDUCE",
    "ALLGATHER",
    "_ALLGATHER_BASE",
    "_REDUCE_SCATTER_BASE",
    "ALLTOALL_BASE",
    "BARRIER",
];

fn op_code(op: &Op) -> i64 {
    match op {
        Op::AllReduce { .. } => 0,
        Op::Broadcast { .. } => 1,
        Op::Reduce { .. } => 2,
        Op::AllGather { .. } => 3,
        Op::AllGatherIntoTensor { .. } => 4,
        Op::ReduceScatterTensor { .. } => 5,
        Op::AllToAllSingle { .. } => 6,
        Op::Barrier | Op::Send { .. } | Op::Recv { .. } => 7,
    }
}

/// PyTorch's `ScalarType` names, as its mismatch report prints them.
fn dtype_name(code: i64) -> &'static str {
    [
        "Bool", "Byte", "Char", "Short", "Int", "Long", "Half", "BFloat16", "Float", "Double",
    ]
    .get(code as usize)
    .copied()
    .unwrap_or("None")
}

/// The fingerprint of `job` on this rank.
pub(crate) fn of(job: &Job) -> Fingerprint {
    let mut f = [0i64; LEN];
    f[0] = job.seq as i64;
    f[1] = op_code(&job.op);
    let (tensor, reduce, root, shape_any): (Option<&Tensor>, i64, i64, bool) = match &job.op {
        Op::AllReduce { tensor, op } => (Some(tensor), op.code(), -1, false),
        Op::Broadcast { tensor, src } => (Some(tensor), -1, *src as i64, false),
        Op::Reduce { tensor, dst, op } => (Some(tensor), op.code(), *dst as i64, false),
        Op::AllGather { input, .. } | Op::AllGatherIntoTensor { input, .. } => {
            (Some(input), -1, -1, false)
        }
        Op::ReduceScatterTensor { input, op, .. } => (Some(input), op.code(), -1, false),
        Op::AllToAllSingle { input, .. } => (Some(input), -1, -1, true),
        Op::Barrier | Op::Send { .. } | Op::Recv { .. } => (None, -1, -1, false),
    };
    f[3] = reduce;
    f[4] = root;
    f[6] = job.size as i64;
    match tensor {
        Some(t) => {
            f[2] = DType::ALL
                .iter()
                .position(|&d| d == t.dtype())
                .unwrap_or(99) as i64;
            f[5] = match t.device() {
                Device::Cpu => 0,
                _ => 1,
            };
            if shape_any {
                f[7] = ANY;
                f[8..].fill(ANY);
            } else {
                f[7] = t.numel() as i64;
                let dims = t.shape();
                for (i, slot) in f[8..].iter_mut().enumerate() {
                    *slot = match dims.get(i) {
                        Some(&d) if i < MAX_DIMS => d as i64,
                        _ => -1,
                    };
                }
                // More dims than fit: their product is in the element count, which is
                // compared too.
            }
        }
        None => {
            f[2] = -1;
            f[5] = -1;
            f[7] = -1;
            f[8..].fill(-1);
        }
    }
    f
}

/// PyTorch's rendering: `CollectiveFingerPrint(SequenceNumber=3, OpType=ALLREDUCE,
/// TensorShape=[4], TensorDtypes=Float, TensorDeviceTypes=[cpu])`.
pub(crate) fn describe(f: &Fingerprint) -> String {
    let op = OPS.get(f[1] as usize).copied().unwrap_or("UNKNOWN");
    let mut s = format!("CollectiveFingerPrint(SequenceNumber={}, OpType={op}", f[0]);
    if f[2] >= 0 {
        let shape: Vec<String> = f[8..]
            .iter()
            .take_while(|&&d| d >= 0)
            .map(|d| d.to_string())
            .collect();
        let device = if f[5] == 0 { "cpu" } else { "cuda" };
        s += &format!(
            ", TensorShape=[{}], TensorDtypes={}, TensorDeviceTypes=[{device}]",
            shape.join(", "),
            dtype_name(f[2])
        );
    }
    if f[3] >= 0 {
        let names = ["SUM", "AVG", "PRODUCT", "MIN", "MAX"];
        s += &format!(", ReduceOp={}", names.get(f[3] as usize).unwrap_or(&"?"));
    }
    if f[4] >= 0 {
        s += &format!(", Root={}", f[4]);
    }
    s + ")"
}

/// PyTorch's report when rank `other`'s fingerprint differs from this rank's, or `None`
/// when every rank agrees.
pub(crate) fn mismatch(rank: usize, all: &[i64]) -> Option<String> {
    let mine: &[i64] = &all[rank * LEN..(rank + 1) * LEN];
    all.chunks(LEN).enumerate().find_map(|(other, theirs)| {
        (theirs != mine).then(|| {
            let (a, b): (Fingerprint, Fingerprint) = (
                mine.try_into().expect("LEN words"),
                theirs.try_into().expect("LEN words"),
            );
            format!(
                "Detected mismatch between collectives on ranks. Rank {rank} is running collective: {}, but Rank {other} is running collective: {}. Collectives differ in the following aspects: {}",
                describe(&a),
                describe(&b),
                differences(&a, &b)
            )
        })
    })
}

fn differences(a: &Fingerprint, b: &Fingerprint) -> String {
    let mut d = Vec::new();
    if a[0] != b[0] {
        d.push("Sequence number");
    }
    if a[1] != b[1] {
        d.push("Op type");
    }
    if a[2] != b[2] {
        d.push("Tensor dtypes");
    }
    if a[5] != b[5] {
        d.push("Tensor device types");
    }
    if a[7..] != b[7..] {
        d.push("Tensor shapes");
    }
    if a[3] != b[3] {
        d.push("Reduce op");
    }
    if a[4] != b[4] {
        d.push("Root rank");
    }
    if a[6] != b[6] {
        d.push("Group size");
    }
    d.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shape_mismatch_is_described_as_pytorch_does() {
        let mut a = [0i64; LEN];
        a[1] = 0;
        a[2] = 8;
        a[3] = 0;
        a[4] = -1;
        a[6] = 2;
        a[7] = 4;
        a[8..].fill(-1);
        a[8] = 4;
        let mut b = a;
        b[7] = 5;
        b[8] = 5;
        let all: Vec<i64> = a.iter().chain(b.iter()).copied().collect();
        let m = mismatch(0, &all).expect("differ");
        assert!(m.starts_with("Detected mismatch between collectives on ranks. Rank 0 is running collective: CollectiveFingerPrint(SequenceNumber=0, OpType=ALLREDUCE, TensorShape=[4], TensorDtypes=Float, TensorDeviceTypes=[cpu], ReduceOp=SUM), but Rank 1 is running collective: CollectiveFingerPrint(SequenceNumber=0, OpType=ALLREDUCE, TensorShape=[5]"), "{m}");
        assert!(
            m.ends_with("differ in the following aspects: Tensor shapes"),
            "{m}"
        );
        assert_eq!(mismatch(1, &[a, a].concat()), None);
    }
}
