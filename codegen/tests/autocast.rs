//! native_functions.yaml's `autocast:` keys against PyTorch's own autocast policy, for every
//! op on both device types (no GPU needed): the table `tests/data/autocast_pytorch.tsv` is
//! written by `scripts/amp/autocast_table.py` from PyTorch (CUDA on fake tensors). The
//! OpInfo runner checks the dtypes the ops return inside a region (`autocast/<op>/cpu`).

use kiln_codegen::model::CastPolicy;
use std::collections::BTreeMap;
use std::path::Path;

/// `(op, device) -> policy` from PyTorch's table.
fn pytorch() -> BTreeMap<(String, String), String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let text = std::fs::read_to_string(root.join("tests/data/autocast_pytorch.tsv")).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            ((f[0].to_string(), f[1].to_string()), f[2].to_string())
        })
        .collect()
}

/// The dtype class PyTorch's table can tell apart: `fp32_set_opt_dtype` returns float32 as
/// `fp32` does.
fn class(p: CastPolicy) -> &'static str {
    match p {
        CastPolicy::Fp32SetOptDtype => "fp32",
        p => p.name(),
    }
}

#[test]
fn every_autocast_key_is_pytorchs_policy() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let model = kiln_codegen::load(&root).unwrap();
    let mut table = pytorch();
    assert!(table.len() > 80, "the table lists PyTorch's autocast ops");
    let mut wrong = Vec::new();
    for op in &model.ops {
        for (dev, declared) in [("cpu", op.autocast.cpu), ("cuda", op.autocast.cuda)] {
            let theirs = table.remove(&(op.full_name(), dev.to_string()));
            let ours = declared.map(class);
            // `none:<class>`: PyTorch registers nothing there and runs the op as it is; kiln
            // may leave it so, or declare the policy that gives the same dtypes (a composite
            // whose inner ops cast, as `cross_entropy_loss` on CUDA). The OpInfo runner
            // checks the dtypes either way.
            let agrees = match theirs.as_deref().and_then(|t| t.strip_prefix("none:")) {
                Some(like) => ours.is_none() || ours == Some(like),
                None => ours == theirs.as_deref(),
            };
            if !agrees {
                wrong.push(format!(
                    "{} on {dev} (native_functions.yaml:{}): ours {ours:?}, PyTorch's {theirs:?}",
                    op.full_name(),
                    op.line
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "autocast policies differ:\n{}",
        wrong.join("\n")
    );
    assert!(
        table.is_empty(),
        "ops in PyTorch's table kiln lacks: {table:?}"
    );
}

#[test]
fn set_opt_dtype_is_used_where_pytorch_sets_the_dtype() {
    // PyTorch's CUDA `fp32_set_opt_dtype` list, as far as kiln has the ops: they return
    // float32 by setting `dtype`, so they accumulate in float32 without a cast copy.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let model = kiln_codegen::load(&root).unwrap();
    for name in [
        "sum",
        "sum.dim_IntList",
        "cumsum",
        "cumprod",
        "prod",
        "prod.dim_int",
        "softmax.int",
        "log_softmax.int",
        "linalg_vector_norm",
    ] {
        let op = model.ops.iter().find(|o| o.full_name() == name).unwrap();
        assert_eq!(
            op.autocast.cuda,
            Some(CastPolicy::Fp32SetOptDtype),
            "{name}"
        );
    }
}

/// The README's table of which ops are in which list, as the YAML says.
fn lists_table(model: &kiln_codegen::model::Model) -> String {
    let mut out = String::from(
        "| policy | on the CPU (bf16 region) | on CUDA (f16 region) |\n| --- | --- | --- |\n",
    );
    for p in CastPolicy::ALL {
        let names = |cuda: bool| {
            let v: Vec<String> = model
                .ops
                .iter()
                .filter(|o| {
                    (if cuda {
                        o.autocast.cuda
                    } else {
                        o.autocast.cpu
                    }) == Some(p)
                })
                .map(|o| format!("`{}`", o.full_name()))
                .collect();
            if v.is_empty() {
                "—".to_string()
            } else {
                v.join(", ")
            }
        };
        out.push_str(&format!(
            "| `{}` | {} | {} |\n",
            p.name(),
            names(false),
            names(true)
        ));
    }
    out
}

#[test]
fn the_readme_lists_each_ops_policy() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let model = kiln_codegen::load(&root).unwrap();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let (start, end) = (
        "<!-- autocast lists: begin -->\n",
        "<!-- autocast lists: end -->",
    );
    let from = readme.find(start).expect("README has the autocast lists") + start.len();
    let to = readme[from..].find(end).expect("the lists end") + from;
    let want = lists_table(&model);
    assert!(
        readme[from..to] == want,
        "README.md's autocast lists are not native_functions.yaml's; replace them with:\n{want}"
    );
}
