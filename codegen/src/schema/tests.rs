use super::*;

/// Schemas copied verbatim from PyTorch's
/// `aten/src/ATen/native/native_functions.yaml`.
const REAL_SCHEMAS: &[&str] = &[
    "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
    "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
    "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
    "add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor",
    "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
    "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
    "cat(Tensor[] tensors, int dim=0) -> Tensor",
    "view(Tensor(a) self, SymInt[] size) -> Tensor(a)",
    "split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]",
    "unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]",
    "linspace(Scalar start, Scalar end, int steps, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
    "embedding_bag(Tensor weight, Tensor indices, Tensor offsets, bool scale_grad_by_freq=False, int mode=0, bool sparse=False, Tensor? per_sample_weights=None, bool include_last_offset=False) -> (Tensor, Tensor, Tensor, Tensor)",
    "nll_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt ignore_index=-100) -> Tensor",
    "nll_loss.out(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt ignore_index=-100, *, Tensor(a!) out) -> Tensor(a!)",
    "nll_loss_forward(Tensor self, Tensor target, Tensor? weight, int reduction, SymInt ignore_index) -> (Tensor output, Tensor total_weight)",
    "nll_loss_forward.output(Tensor self, Tensor target, Tensor? weight, int reduction, SymInt ignore_index, *, Tensor(a!) output, Tensor(b!) total_weight) -> (Tensor(a!), Tensor(b!))",
    "index.Tensor(Tensor self, Tensor?[] indices) -> Tensor",
    "index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor",
    "_index_put_impl_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False, bool unsafe=False) -> Tensor(a!)",
    "_foreach_add.List(Tensor[] self, Tensor[] other, *, Scalar alpha=1) -> Tensor[]",
    "_foreach_add.List_out(Tensor[] self, Tensor[] other, *, Scalar alpha=1, Tensor(a!)[] out) -> ()",
    "where.self(Tensor condition, Tensor self, Tensor other) -> Tensor",
    "clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor",
    "native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)",
    "native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] normalized_shape, Tensor mean, Tensor rstd, Tensor? weight, Tensor? bias, bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
    "layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, bool cudnn_enable=True) -> Tensor",
    "convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor",
    "_backward(Tensor self, Tensor[] inputs, Tensor? gradient=None, bool? retain_graph=None, bool create_graph=False) -> ()",
    "set_data(Tensor(a!) self, Tensor new_data) -> ()",
    "is_leaf(Tensor self) -> bool",
    "_unpack_dual(Tensor(a) dual, int level) -> (Tensor(a) primal, Tensor tangent)",
    "rename_(Tensor(a!) self, Dimname[]? names) -> Tensor(a!)",
    "align_to.ellipsis_idx(Tensor(a) self, Dimname[] order, int ellipsis_idx) -> Tensor(a)",
    "_make_dep_token(*, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor",
    "_use_cudnn_rnn_flatten_weight() -> bool",
    "_cudnn_rnn_backward(Tensor input, Tensor[] weight, int weight_stride0, Tensor weight_buf, Tensor hx, Tensor? cx, Tensor output, Tensor? grad_output, Tensor? grad_hy, Tensor? grad_cy, int mode, SymInt hidden_size, SymInt proj_size, int num_layers, bool batch_first, float dropout, bool train, bool bidirectional, SymInt[] batch_sizes, Tensor? dropout_state, Tensor reserve, bool[4] output_mask) -> (Tensor, Tensor, Tensor, Tensor[])",
    "_cudnn_init_dropout_state(float dropout, bool train, int dropout_seed, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=False) -> Tensor",
    "_fused_dropout(Tensor self, float p, Generator? generator=None) -> (Tensor, Tensor)",
    "contiguous(Tensor(a) self, *, MemoryFormat memory_format=contiguous_format) -> Tensor(a)",
    "avg_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=0, bool ceil_mode=False, bool count_include_pad=True) -> Tensor",
    "avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor",
    "adaptive_max_pool2d.out(Tensor self, int[2] output_size, *, Tensor(a!) out, Tensor(b!) indices) -> (Tensor(a!), Tensor(b!))",
    "max_unpool2d(Tensor self, Tensor indices, SymInt[2] output_size) -> Tensor",
    "allclose(Tensor self, Tensor other, float rtol=1e-05, float atol=1e-08, bool equal_nan=False) -> bool",
    "kthvalue.values(Tensor self, SymInt k, int dim=-1, bool keepdim=False, *, Tensor(a!) values, Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)",
    "_sparse_semi_structured_tile(Tensor input, str algorithm=\"\", bool use_cutlass=True) -> (Tensor, Tensor, Tensor, Tensor, Tensor)",
    "fbgemm_linear_quantize_weight(Tensor input) -> (Tensor, Tensor, float, int)",
    "_cslt_sparse_mm(Tensor compressed_A, Tensor dense_B, Tensor? bias=None, Tensor? alpha=None, ScalarType? out_dtype=None, bool transpose_result=False, int alg_id=0, int split_k=1, int split_k_mode=-1) -> Tensor",
    "smooth_l1_loss(Tensor self, Tensor target, int reduction=Mean, float beta=1.0) -> Tensor",
    "hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor",
    "searchsorted.Tensor(Tensor sorted_sequence, Tensor self, *, bool out_int32=False, bool right=False, str? side=None, Tensor? sorter=None) -> Tensor",
    "gelu(Tensor self, *, str approximate='none') -> Tensor",
    "scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True) -> Tensor",
    "linalg_matrix_norm.str_ord(Tensor self, str ord='fro', int[] dim=[-2,-1], bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
    "all.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor",
    "isin.Tensor_Tensor_out(Tensor elements, Tensor test_elements, *, bool assume_unique=False, bool invert=False, Tensor(a!) out) -> Tensor(a!)",
    "_assert_async.msg(Tensor self, str assert_msg) -> ()",
    "arange.start_step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
    "sym_constrain_range(Scalar size, *, int? min=None, int? max=None) -> ()",
    "rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, float? eps=None) -> Tensor",
    "nan_to_num.out(Tensor self, float? nan=None, float? posinf=None, float? neginf=None, *, Tensor(a!) out) -> Tensor(a!)",
    "set_.source_Storage(Tensor(a!) self, Storage source) -> Tensor(a!)",
    "record_stream(Tensor(a!) self, Stream s) -> ()",
];

/// The real schema that starts with `prefix`.
fn real(prefix: &str) -> &'static str {
    match REAL_SCHEMAS.iter().find(|s| s.starts_with(prefix)) {
        Some(s) => s,
        None => panic!("no real schema starts with {prefix:?}"),
    }
}

fn parse(s: &str) -> FunctionSchema {
    match FunctionSchema::parse(s) {
        Ok(schema) => schema,
        Err(e) => panic!("failed to parse {s:?}: {e}"),
    }
}

fn parse_err(s: &str) -> SchemaError {
    match FunctionSchema::parse(s) {
        Ok(schema) => panic!("expected {s:?} to fail, got {schema:?}"),
        Err(e) => e,
    }
}

fn assert_err(s: &str, message: &str, column: usize) {
    let e = parse_err(s);
    assert_eq!(
        (e.message.as_str(), e.column),
        (message, column),
        "wrong error for {s:?}"
    );
}

fn tensor() -> Type {
    Type::Tensor { alias: None }
}

fn alias(set: &str, is_write: bool) -> Alias {
    Alias {
        set: set.to_string(),
        is_write,
        after: None,
    }
}

#[test]
fn round_trips_real_schemas() {
    assert!(REAL_SCHEMAS.len() >= 35);
    for s in REAL_SCHEMAS {
        assert_eq!(parse(s).to_string(), *s);
    }
}

#[test]
fn round_trips_synthetic_schemas() {
    for s in [
        "foo(Tensor self, str sep=\", \", int[] dims=[0,1], str q='a,b)') -> Tensor",
        "foo(Tensor self, str s=\"say \\\"hi\\\", ok\") -> Tensor",
        "foo(Tensor(a|b!) self) -> Tensor(a|b!)",
        "foo(Tensor(a!)? self, SymBool flag, DeviceIndex? idx=None) -> QScheme",
        "foo(Tensor self) -> Tensor out",
        "__and__.Tensor(Tensor self, Tensor other) -> Tensor",
    ] {
        assert_eq!(parse(s).to_string(), s);
    }
}

#[test]
fn add_tensor_fields() {
    let s = parse("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
    assert_eq!(s.name, "add");
    assert_eq!(s.overload.as_deref(), Some("Tensor"));
    assert_eq!(s.full_name(), "add.Tensor");
    assert_eq!(
        s.arguments,
        vec![
            Argument {
                ty: tensor(),
                name: "self".into(),
                default: None,
                kwarg_only: false
            },
            Argument {
                ty: tensor(),
                name: "other".into(),
                default: None,
                kwarg_only: false
            },
            Argument {
                ty: Type::Scalar,
                name: "alpha".into(),
                default: Some("1".into()),
                kwarg_only: true
            },
        ]
    );
    assert_eq!(
        s.returns,
        vec![Return {
            ty: tensor(),
            name: None
        }]
    );
    assert!(!s.tuple_returns);
    assert!(!s.is_inplace());
    assert!(!s.is_out());
}

#[test]
fn inplace_and_out_flags() {
    let inplace = parse(real("add_.Tensor("));
    assert_eq!(inplace.name, "add_");
    assert!(inplace.is_inplace());
    assert!(!inplace.is_out());
    assert_eq!(
        inplace.arguments[0].ty,
        Type::Tensor {
            alias: Some(alias("a", true))
        }
    );
    assert_eq!(
        inplace.returns[0].ty,
        Type::Tensor {
            alias: Some(alias("a", true))
        }
    );

    let out = parse(real("add.out("));
    assert!(out.is_out());
    assert!(!out.is_inplace());
    let outs: Vec<_> = out.out_arguments().map(|a| a.name.as_str()).collect();
    assert_eq!(outs, ["out"]);

    let foreach_out = parse(
        "_foreach_add.List_out(Tensor[] self, Tensor[] other, *, Scalar alpha=1, Tensor(a!)[] out) -> ()",
    );
    assert!(foreach_out.is_out());
    assert!(foreach_out.tuple_returns);
    assert!(foreach_out.returns.is_empty());

    assert!(!parse("__and__.Tensor(Tensor self, Tensor other) -> Tensor").is_inplace());
    let iand = parse("__iand__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
    assert!(iand.is_inplace());
    assert!(iand.arguments[0].is_write());
}

#[test]
fn sum_dim_int_list_types() {
    let s = parse(real("sum.dim_IntList("));
    assert_eq!(
        s.arguments[1].ty,
        Type::Optional(Box::new(Type::List {
            elem: Box::new(Type::Int),
            size: Some(1)
        }))
    );
    assert_eq!(s.arguments[2].default.as_deref(), Some("False"));
    assert!(!s.arguments[2].kwarg_only);
    assert_eq!(
        s.arguments[3].ty,
        Type::Optional(Box::new(Type::ScalarType))
    );
    assert_eq!(s.arguments[3].default.as_deref(), Some("None"));
    assert!(s.arguments[3].kwarg_only);
}

#[test]
fn tuple_returns_with_names() {
    let s = parse(
        "kthvalue.values(Tensor self, SymInt k, int dim=-1, bool keepdim=False, *, Tensor(a!) values, Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)",
    );
    assert!(s.tuple_returns);
    assert_eq!(
        s.returns,
        vec![
            Return {
                ty: Type::Tensor {
                    alias: Some(alias("a", true))
                },
                name: Some("values".into())
            },
            Return {
                ty: Type::Tensor {
                    alias: Some(alias("b", true))
                },
                name: Some("indices".into())
            },
        ]
    );
    assert_eq!(s.arguments[2].default.as_deref(), Some("-1"));
    assert!(s.is_out());

    let max = parse(real("max.dim("));
    assert!(max.tuple_returns);
    assert_eq!(max.returns[1].name.as_deref(), Some("indices"));
}

#[test]
fn alias_after_and_lists() {
    let s = parse(real("split.Tensor("));
    assert_eq!(
        s.arguments[0].ty,
        Type::Tensor {
            alias: Some(Alias {
                set: "a".into(),
                is_write: false,
                after: Some("*".into())
            })
        }
    );
    assert_eq!(
        s.returns[0].ty,
        Type::List {
            elem: Box::new(Type::Tensor {
                alias: Some(alias("a", false))
            }),
            size: None
        }
    );
    let index = parse("index.Tensor(Tensor self, Tensor?[] indices) -> Tensor");
    assert_eq!(
        index.arguments[1].ty,
        Type::List {
            elem: Box::new(Type::Optional(Box::new(tensor()))),
            size: None
        }
    );
}

#[test]
fn raw_defaults() {
    let s = parse(
        "linalg_matrix_norm.str_ord(Tensor self, str ord='fro', int[] dim=[-2,-1], bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
    );
    let defaults: Vec<_> = s.arguments.iter().map(|a| a.default.as_deref()).collect();
    assert_eq!(
        defaults,
        [
            None,
            Some("'fro'"),
            Some("[-2,-1]"),
            Some("False"),
            Some("None")
        ]
    );

    let s = parse(
        "foo(str a=\"x, y\", int[] b=[0,1], float c=1e-05, MemoryFormat d=contiguous_format) -> ()",
    );
    let defaults: Vec<_> = s.arguments.iter().map(|a| a.default.as_deref()).collect();
    assert_eq!(
        defaults,
        [
            Some("\"x, y\""),
            Some("[0,1]"),
            Some("1e-05"),
            Some("contiguous_format")
        ]
    );
}

#[test]
fn kwarg_only_marker_first_and_empty_args() {
    let s = parse(real("_make_dep_token("));
    assert!(s.arguments.iter().all(|a| a.kwarg_only));
    let s = parse("_use_cudnn_rnn_flatten_weight() -> bool");
    assert!(s.arguments.is_empty());
    assert_eq!(
        s.returns,
        vec![Return {
            ty: Type::Bool,
            name: None
        }]
    );
}

#[test]
fn lenient_whitespace_prints_canonically() {
    let s = parse("add.Tensor( Tensor  self ,Tensor other,  * , Scalar alpha=1 )->Tensor  ");
    assert_eq!(s.to_string(), real("add.Tensor("));
}

#[test]
fn tensor_like() {
    for (ty, expected) in [
        ("Tensor", true),
        ("Tensor?", true),
        ("Tensor[]", true),
        ("Tensor(a!)", true),
        ("Tensor?[]", true),
        ("int", false),
        ("int[]", false),
        ("Scalar?", false),
    ] {
        let parsed = Type::parse(ty).expect(ty);
        assert_eq!(parsed.is_tensor_like(), expected, "{ty}");
        assert_eq!(parsed.to_string(), ty);
    }
}

#[test]
fn type_parse_errors() {
    let e = Type::parse("int[2] x").unwrap_err();
    assert_eq!(
        (e.message.as_str(), e.column),
        ("unexpected text 'x' after type", 8)
    );
    assert_eq!(
        "int?".parse::<Type>(),
        Ok(Type::Optional(Box::new(Type::Int)))
    );
}

#[test]
fn error_expected_paren_after_name() {
    assert_err(
        "add.Tensor Tensor self",
        "expected '(' after operator name",
        11,
    );
    assert_err("add", "expected '(' after operator name", 4);
}

#[test]
fn error_unknown_type() {
    assert_err("add(Tensr self) -> Tensor", "unknown type 'Tensr'", 5);
    assert_err("add(Tensor self) -> Tensr", "unknown type 'Tensr'", 21);
}

#[test]
fn error_missing_argument_name() {
    assert_err(
        "foo(Tensor self, int) -> Tensor",
        "missing argument name after type 'int'",
        21,
    );
    assert_err(
        "foo(int[1]? =1) -> Tensor",
        "missing argument name after type 'int[1]?'",
        13,
    );
}

#[test]
fn error_unbalanced_bracket() {
    assert_err("foo(int[] x=[0,1) -> Tensor", "unbalanced '['", 13);
    assert_err("foo(int[2 x) -> Tensor", "unbalanced '['", 8);
    assert_err("foo(int x=1]) -> Tensor", "unbalanced ']'", 12);
}

#[test]
fn error_expected_arrow() {
    assert_err(
        "foo(Tensor self) Tensor",
        "expected '->' after arguments",
        18,
    );
    assert_err("foo(Tensor self)", "expected '->' after arguments", 17);
}

#[test]
fn error_duplicate_argument() {
    assert_err(
        "foo(Tensor self, Tensor self) -> Tensor",
        "duplicate argument name 'self'",
        25,
    );
}

#[test]
fn error_kwarg_marker_twice() {
    assert_err(
        "foo(Tensor a, *, int b, *, int c) -> Tensor",
        "keyword-only marker '*' given twice",
        25,
    );
    assert_err(
        "foo(Tensor a, *) -> Tensor",
        "keyword-only marker '*' must be followed by an argument",
        15,
    );
}

#[test]
fn error_unbalanced_paren() {
    assert_err("foo(Tensor self", "unbalanced '('", 4);
    assert_err("foo(Tensor self) -> (Tensor, Tensor", "unbalanced '('", 21);
    assert_err(
        "foo(Tensor(a! self) -> Tensor",
        "invalid alias set 'a! self'",
        12,
    );
    assert_err(
        "foo(Tensor(a self",
        "unbalanced '(' in alias annotation",
        11,
    );
}

#[test]
fn error_strings_and_defaults() {
    assert_err(
        "foo(str s=\"abc) -> Tensor",
        "unterminated string literal",
        11,
    );
    assert_err(
        "foo(int x=) -> Tensor",
        "missing default value after '=' for argument 'x'",
        11,
    );
}

#[test]
fn error_types() {
    assert_err(
        "foo(int(a) x) -> Tensor",
        "alias annotation is only allowed on Tensor, not 'int'",
        8,
    );
    assert_err(
        "foo(int?? x) -> Tensor",
        "type 'int?' is already optional",
        9,
    );
    assert_err("foo(int[x] y) -> Tensor", "invalid list size 'x'", 9);
    assert_err("foo(int[02] y) -> Tensor", "invalid list size '02'", 9);
    assert_err("foo(Tensor() x) -> Tensor", "empty alias annotation", 12);
    assert_err("foo(Tensor(A) x) -> Tensor", "invalid alias set 'A'", 12);
}

#[test]
fn error_misc() {
    assert_err("", "expected operator name, found end of input", 1);
    assert_err(".foo() -> ()", "expected operator name, found '.'", 1);
    assert_err(
        "foo.(Tensor self) -> Tensor",
        "expected overload name after '.'",
        5,
    );
    assert_err(
        "foo(Tensor self,) -> Tensor",
        "expected argument after ',', found ')'",
        17,
    );
    assert_err(
        "foo(Tensor self x) -> Tensor",
        "expected ',' or ')' after argument 'self', found 'x'",
        17,
    );
    assert_err(
        "foo(Tensor self) -> ",
        "expected return type after '->'",
        21,
    );
    assert_err(
        "foo(Tensor self) -> Tensor out extra",
        "unexpected text 'extra' after returns",
        32,
    );
    assert_err(
        "foo(Tensor self) -> (Tensor a, Tensor a)",
        "duplicate return name 'a'",
        39,
    );
    assert_err(
        "foo(Tensor self) -> (Tensor a b)",
        "expected ',' or ')' in returns, found 'b'",
        31,
    );
    assert_err(
        "foo(Tensor(a)self) -> Tensor",
        "unexpected character 's' after type 'Tensor(a)'",
        14,
    );
}

#[test]
fn error_display() {
    let e = parse_err("add(Tensr self) -> Tensor");
    assert_eq!(e.to_string(), "column 5: unknown type 'Tensr'");
    let boxed: Box<dyn std::error::Error> = Box::new(e);
    assert!(boxed.to_string().contains("Tensr"));
}

#[test]
fn truncated_and_mutated_inputs_never_panic() {
    for s in REAL_SCHEMAS {
        let chars: Vec<char> = s.chars().collect();
        for end in 0..=chars.len() {
            let prefix: String = chars[..end].iter().collect();
            let result = FunctionSchema::parse(&prefix);
            if end < chars.len() {
                // Only complete schemas (or prefixes that are themselves complete) parse.
                if let Ok(schema) = result {
                    assert_eq!(schema.to_string(), prefix.trim_end());
                }
            } else {
                assert!(result.is_ok());
            }
        }
        for skip in 0..chars.len() {
            let mutated: String = chars
                .iter()
                .enumerate()
                .filter(|&(i, _)| i != skip)
                .map(|(_, c)| c)
                .collect();
            let _ = FunctionSchema::parse(&mutated);
        }
    }
    for weird in [
        "é(ü) -> ()",
        "f(Tensor x=\"é\\",
        "f(Tensor(",
        "f(int[",
        "f(int x=[(\"",
        "f(*",
    ] {
        assert!(FunctionSchema::parse(weird).is_err(), "{weird}");
    }
}
