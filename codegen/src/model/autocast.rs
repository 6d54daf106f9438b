//! An op's `autocast:` key: the cast PyTorch's autocast applies at its entry inside an
//! autocast region, per device type (`autocast_mode.cpp`'s lists, declared here per op).

use super::error::{did_you_mean, nerr, ModelError};
use crate::schema::FunctionSchema;
use crate::types::ArgKind;
use crate::yaml::RawAutocast;

/// PyTorch's `CastPolicy`, by the YAML's word for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CastPolicy {
    /// `lower`: floating inputs cast to the region's dtype (f16/bf16): matmuls, convolutions.
    Lower,
    /// `fp32`: floating inputs cast to float32: losses, norms, reductions and pointwise
    /// functions whose range or accuracy a half type loses.
    Fp32,
    /// `fp32_set_opt_dtype`: nothing cast; an unset `dtype` argument becomes float32 when the
    /// first input is eligible, so the op accumulates and returns float32 (`sum`, `softmax`).
    Fp32SetOptDtype,
    /// `promote`: every floating input cast to the widest floating dtype among them
    /// (`cat`, `stack`, `addcmul`).
    Promote,
    /// `banned`: the op refuses to run in a region (`binary_cross_entropy` on CUDA).
    Banned,
}

impl CastPolicy {
    pub const ALL: [CastPolicy; 5] = [
        CastPolicy::Lower,
        CastPolicy::Fp32,
        CastPolicy::Fp32SetOptDtype,
        CastPolicy::Promote,
        CastPolicy::Banned,
    ];

    pub fn name(self) -> &'static str {
        match self {
            CastPolicy::Lower => "lower",
            CastPolicy::Fp32 => "fp32",
            CastPolicy::Fp32SetOptDtype => "fp32_set_opt_dtype",
            CastPolicy::Promote => "promote",
            CastPolicy::Banned => "banned",
        }
    }

    /// The runtime's variant (`crate::amp::CastPolicy::<variant>`).
    pub fn variant(self) -> &'static str {
        match self {
            CastPolicy::Lower => "Lower",
            CastPolicy::Fp32 => "Fp32",
            CastPolicy::Fp32SetOptDtype => "Fp32SetOptDtype",
            CastPolicy::Promote => "Promote",
            CastPolicy::Banned => "Banned",
        }
    }

    fn parse(s: &str) -> Option<CastPolicy> {
        CastPolicy::ALL.into_iter().find(|p| p.name() == s)
    }
}

/// The policy on each device type; `None` runs the op as it is there.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Autocast {
    pub cpu: Option<CastPolicy>,
    pub cuda: Option<CastPolicy>,
}

impl Autocast {
    pub fn is_empty(&self) -> bool {
        self.cpu.is_none() && self.cuda.is_none()
    }

    /// `cpu: lower, cuda: lower`, as `show` prints it.
    pub fn describe(&self) -> String {
        let one = |p: Option<CastPolicy>| p.map_or("none (runs as it is)", CastPolicy::name);
        format!("CPU: {}, CUDA: {}", one(self.cpu), one(self.cuda))
    }
}

/// Reads and checks an entry's `autocast:`: one policy for both device types, or a map
/// `{CPU: .., CUDA: ..}`; only ops called with tensors, not in-place or `out=` schemas, and
/// `fp32_set_opt_dtype` only where there is a `ScalarType? dtype` to set.
pub(super) fn autocast(
    raw: Option<&RawAutocast>,
    func: &str,
    line: usize,
    schema: &FunctionSchema,
) -> Result<Autocast, ModelError> {
    let Some(raw) = raw else {
        return Ok(Autocast::default());
    };
    let err = |m: String| nerr(line, format!("{func}: {m}")).at_key("autocast");
    let policy = |s: &str| {
        CastPolicy::parse(s).ok_or_else(|| {
            let names: Vec<String> = CastPolicy::ALL
                .iter()
                .map(|p| p.name().to_string())
                .collect();
            err(format!(
                "unknown autocast policy '{s}'{}; the policies are {}",
                did_you_mean(s, names.iter()),
                names.join(", ")
            ))
        })
    };
    let ac = match raw {
        RawAutocast::Shared(s) => {
            let p = policy(s)?;
            Autocast {
                cpu: Some(p),
                cuda: Some(p),
            }
        }
        RawAutocast::PerDevice(map) => {
            let mut ac = Autocast::default();
            for (k, v) in map {
                let p = if v == "none" { None } else { Some(policy(v)?) };
                match k.as_str() {
                    "CPU" => ac.cpu = p,
                    "CUDA" => ac.cuda = p,
                    other => {
                        return Err(err(format!(
                            "autocast: unknown device type '{other}' (CPU or CUDA)"
                        )))
                    }
                }
            }
            ac
        }
    };
    if schema.arguments.iter().any(|a| a.is_write()) {
        return Err(err(
            "autocast: is for functional ops; an in-place or out= schema runs as it is (as in PyTorch)"
                .into(),
        ));
    }
    let kinds: Vec<(String, ArgKind)> = schema
        .arguments
        .iter()
        .filter_map(|a| ArgKind::of(&a.ty).ok().map(|k| (a.name.clone(), k)))
        .collect();
    if !kinds.iter().any(|(_, k)| k.is_tensor()) {
        return Err(err("autocast: the op takes no tensor to cast".into()));
    }
    let set_opt = [ac.cpu, ac.cuda].contains(&Some(CastPolicy::Fp32SetOptDtype));
    if set_opt
        && !kinds
            .iter()
            .any(|(n, k)| n == "dtype" && *k == ArgKind::OptScalarType)
    {
        return Err(err(
            "autocast: fp32_set_opt_dtype needs a `ScalarType? dtype` argument to set; use fp32"
                .into(),
        ));
    }
    if set_opt && !matches!(kinds.first(), Some((_, ArgKind::Tensor))) {
        return Err(err(
            "autocast: fp32_set_opt_dtype looks at the first argument, which must be a Tensor"
                .into(),
        ));
    }
    Ok(ac)
}
