//! Parser and printer for PyTorch's function-schema language.
//!
//! Every operator in kiln's `native_functions.yaml` is declared with a
//! schema string in the same language PyTorch uses, for example
//!
//! ```text
//! add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
//! ```
//!
//! [`FunctionSchema::parse`] turns such a string into a typed model and the
//! [`Display`](std::fmt::Display) implementations print the model back in
//! canonical form, so that for every valid schema written canonically
//! `FunctionSchema::parse(s)?.to_string() == s`.
//!
//! The grammar, informally:
//!
//! ```text
//! schema    := name ['.' overload] '(' [args] ')' ' -> ' returns
//! args      := arg (', ' arg)*          -- one bare '*' may appear in place of an arg
//! arg       := type ' ' ident ['=' default]
//! returns   := ret | '(' [ret (', ' ret)*] ')'
//! ret       := type [' ' ident]
//! type      := base ['(' alias ')'] ('[' [size] ']' | '?')*
//! alias     := set ['!'] [' -> ' set]   -- set: 'a', 'a|b' or '*'
//! ```
//!
//! Defaults are kept as the raw text that follows `=` (`None`, `1e-05`,
//! `[0,1]`, `"mean"`, `'none'`, `contiguous_format`, ...); brackets and
//! quoted strings inside a default are honoured when looking for the `,` or
//! `)` that ends it. The parser accepts extra whitespace between tokens but
//! prints the canonical spacing shown above. It never panics: every input
//! either parses or yields a [`SchemaError`] naming what is wrong and where.

use std::fmt;
use std::str::FromStr;

/// A parsed operator schema such as
/// `max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionSchema {
    /// The operator name without overload, e.g. `add` or `add_` (a trailing
    /// underscore marks the in-place variant).
    pub name: String,
    /// The overload name, e.g. `Tensor` in `add.Tensor`; `None` when absent.
    pub overload: Option<String>,
    /// The arguments in declaration order. Those written after the bare `*`
    /// have [`Argument::kwarg_only`] set.
    pub arguments: Vec<Argument>,
    /// The returned values, in order (empty for `-> ()`).
    pub returns: Vec<Return>,
    /// Whether the returns were written in parentheses, as in
    /// `-> (Tensor values, Tensor indices)` or `-> ()`.
    pub tuple_returns: bool,
}

/// One argument of a [`FunctionSchema`], e.g. `int[1]? dim` or `bool keepdim=False`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Argument {
    /// The argument's type.
    pub ty: Type,
    /// The argument's name.
    pub name: String,
    /// The default value exactly as written after `=`, e.g. `None`, `-1`,
    /// `[0,1]` or `"mean"` (quotes included); `None` when there is no default.
    pub default: Option<String>,
    /// Whether the argument follows the bare `*` and so is keyword-only.
    pub kwarg_only: bool,
}

/// One returned value of a [`FunctionSchema`], e.g. `Tensor(a!) values`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Return {
    /// The returned value's type.
    pub ty: Type,
    /// The returned value's name, when one is given.
    pub name: Option<String>,
}

/// A type in the schema language.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Type {
    /// `Tensor`, optionally with an alias annotation: `Tensor(a)`, `Tensor(a!)`, `Tensor(a -> *)`.
    Tensor {
        /// The alias annotation in parentheses, if any.
        alias: Option<Alias>,
    },
    /// `Scalar`: a number of any dtype.
    Scalar,
    /// `int`: a 64-bit integer.
    Int,
    /// `SymInt`: a possibly symbolic integer.
    SymInt,
    /// `float`: a double-precision float.
    Float,
    /// `bool`.
    Bool,
    /// `str`.
    Str,
    /// `ScalarType`: a dtype.
    ScalarType,
    /// `Layout`: a tensor layout (strided, sparse, ...).
    Layout,
    /// `Device`.
    Device,
    /// `Generator`: a random-number generator.
    Generator,
    /// `MemoryFormat`: e.g. `contiguous_format`.
    MemoryFormat,
    /// `Dimname`: a named dimension.
    Dimname,
    /// `Storage`: a tensor's storage (e.g. `set_.source_Storage`).
    Storage,
    /// `Stream`: a device stream (e.g. `record_stream`).
    Stream,
    /// `QScheme`: a quantization scheme.
    QScheme,
    /// `DeviceIndex`: the index of a device.
    DeviceIndex,
    /// `SymBool`: a possibly symbolic boolean.
    SymBool,
    /// A list: `int[]`, `int[2]`, `Tensor[]`, `Tensor(a)[]`, `Tensor?[]`.
    List {
        /// The element type.
        elem: Box<Type>,
        /// The fixed size written in the brackets, e.g. `2` in `int[2]`.
        size: Option<usize>,
    },
    /// An optional value: `int?`, `Tensor?`, `int[1]?`, `ScalarType?`.
    Optional(Box<Type>),
}

/// An alias annotation on a `Tensor` type, the part in parentheses of
/// `Tensor(a)`, `Tensor(a!)` or `Tensor(a -> *)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alias {
    /// The alias set, e.g. `a`; several sets are joined with `|` (`a|b`).
    pub set: String,
    /// Whether the value is written to (the `!`).
    pub is_write: bool,
    /// The alias set after the call, e.g. `*` in `Tensor(a -> *)`; `None` when absent.
    pub after: Option<String>,
}

/// Why a schema string could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    /// What is wrong, e.g. `unknown type 'Tensr'`.
    pub message: String,
    /// The 1-based column (counted in characters) where the problem starts.
    pub column: usize,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "column {}: {}", self.column, self.message)
    }
}

impl std::error::Error for SchemaError {}

impl FunctionSchema {
    /// Parses a schema string such as
    /// `add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor`.
    pub fn parse(s: &str) -> Result<Self, SchemaError> {
        Parser::new(s).schema()
    }

    /// Whether this is an in-place operator, i.e. its name ends with `_`
    /// (as in `add_`). Dunder names follow Python instead: the augmented
    /// assignments such as `__iand__` are in-place, `__and__` is not.
    pub fn is_inplace(&self) -> bool {
        match self
            .name
            .strip_prefix("__")
            .and_then(|n| n.strip_suffix("__"))
        {
            Some(dunder) => dunder
                .strip_prefix('i')
                .is_some_and(|op| AUGMENTED_ASSIGNMENT_OPS.contains(&op)),
            None => self.name.ends_with('_'),
        }
    }

    /// Whether this is an out= variant: it has a keyword-only argument whose
    /// Tensor alias annotation is a write (`*, Tensor(a!) out`).
    pub fn is_out(&self) -> bool {
        self.out_arguments().next().is_some()
    }

    /// The out= arguments: keyword-only arguments whose type is written to.
    pub fn out_arguments(&self) -> impl Iterator<Item = &Argument> {
        self.arguments
            .iter()
            .filter(|a| a.kwarg_only && a.is_write())
    }

    /// The full name, `name.overload` or just `name` when there is no overload.
    pub fn full_name(&self) -> String {
        match &self.overload {
            Some(overload) => format!("{}.{}", self.name, overload),
            None => self.name.clone(),
        }
    }
}

impl FromStr for FunctionSchema {
    type Err = SchemaError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl Argument {
    /// Whether the argument's Tensor alias annotation is a write (`Tensor(a!)`,
    /// also through lists and optionals such as `Tensor(a!)[]`).
    pub fn is_write(&self) -> bool {
        self.ty.alias().is_some_and(|a| a.is_write)
    }
}

impl Type {
    /// Parses a lone type such as `int[1]?` or `Tensor(a!)`.
    pub fn parse(s: &str) -> Result<Self, SchemaError> {
        let mut p = Parser::new(s);
        let ty = p.ty()?;
        p.expect_end("type")?;
        Ok(ty)
    }

    /// Whether this is a Tensor or holds Tensors: `Tensor`, `Tensor?`,
    /// `Tensor[]`, `Tensor?[]` and so on.
    pub fn is_tensor_like(&self) -> bool {
        match self {
            Type::Tensor { .. } => true,
            Type::List { elem, .. } => elem.is_tensor_like(),
            Type::Optional(inner) => inner.is_tensor_like(),
            _ => false,
        }
    }

    /// The Tensor alias annotation, looking through lists and optionals.
    pub fn alias(&self) -> Option<&Alias> {
        match self {
            Type::Tensor { alias } => alias.as_ref(),
            Type::List { elem, .. } => elem.alias(),
            Type::Optional(inner) => inner.alias(),
            _ => None,
        }
    }

    /// Whether this is an optional type (`T?`).
    pub fn is_optional(&self) -> bool {
        matches!(self, Type::Optional(_))
    }

    /// The type named by a base-type keyword such as `int` or `Tensor`.
    fn from_base_name(name: &str) -> Option<Type> {
        Some(match name {
            "Tensor" => Type::Tensor { alias: None },
            "Scalar" => Type::Scalar,
            "int" => Type::Int,
            "SymInt" => Type::SymInt,
            "float" => Type::Float,
            "bool" => Type::Bool,
            "str" => Type::Str,
            "ScalarType" => Type::ScalarType,
            "Layout" => Type::Layout,
            "Device" => Type::Device,
            "Generator" => Type::Generator,
            "MemoryFormat" => Type::MemoryFormat,
            "Dimname" => Type::Dimname,
            "Storage" => Type::Storage,
            "Stream" => Type::Stream,
            "QScheme" => Type::QScheme,
            "DeviceIndex" => Type::DeviceIndex,
            "SymBool" => Type::SymBool,
            _ => return None,
        })
    }
}

impl FromStr for Type {
    type Err = SchemaError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for FunctionSchema {
    /// Prints the canonical form. Returns are parenthesised when
    /// `tuple_returns` is set or when there is not exactly one return.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if let Some(overload) = &self.overload {
            write!(f, ".{overload}")?;
        }
        f.write_str("(")?;
        let mut kwarg_marker_written = false;
        for (i, arg) in self.arguments.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            if arg.kwarg_only && !kwarg_marker_written {
                f.write_str("*, ")?;
                kwarg_marker_written = true;
            }
            write!(f, "{arg}")?;
        }
        f.write_str(") -> ")?;
        if self.tuple_returns || self.returns.len() != 1 {
            f.write_str("(")?;
            for (i, ret) in self.returns.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{ret}")?;
            }
            f.write_str(")")
        } else {
            self.returns.iter().try_for_each(|ret| write!(f, "{ret}"))
        }
    }
}

impl fmt::Display for Argument {
    /// Prints `type name` or `type name=default` (the `*` marker belongs to
    /// the schema, not the argument).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.ty, self.name)?;
        if let Some(default) = &self.default {
            write!(f, "={default}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Return {
    /// Prints `type` or `type name`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.ty)?;
        if let Some(name) = &self.name {
            write!(f, " {name}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Type {
    /// Prints the type as written in schemas, e.g. `Tensor(a!)`, `int[1]?`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Tensor { alias: None } => f.write_str("Tensor"),
            Type::Tensor { alias: Some(alias) } => write!(f, "Tensor({alias})"),
            Type::Scalar => f.write_str("Scalar"),
            Type::Int => f.write_str("int"),
            Type::SymInt => f.write_str("SymInt"),
            Type::Float => f.write_str("float"),
            Type::Bool => f.write_str("bool"),
            Type::Str => f.write_str("str"),
            Type::ScalarType => f.write_str("ScalarType"),
            Type::Layout => f.write_str("Layout"),
            Type::Device => f.write_str("Device"),
            Type::Generator => f.write_str("Generator"),
            Type::MemoryFormat => f.write_str("MemoryFormat"),
            Type::Dimname => f.write_str("Dimname"),
            Type::Storage => f.write_str("Storage"),
            Type::Stream => f.write_str("Stream"),
            Type::QScheme => f.write_str("QScheme"),
            Type::DeviceIndex => f.write_str("DeviceIndex"),
            Type::SymBool => f.write_str("SymBool"),
            Type::List { elem, size: None } => write!(f, "{elem}[]"),
            Type::List {
                elem,
                size: Some(n),
            } => write!(f, "{elem}[{n}]"),
            Type::Optional(inner) => write!(f, "{inner}?"),
        }
    }
}

impl fmt::Display for Alias {
    /// Prints the annotation without parentheses: `a`, `a!`, `a -> *`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.set)?;
        if self.is_write {
            f.write_str("!")?;
        }
        if let Some(after) = &self.after {
            write!(f, " -> {after}")?;
        }
        Ok(())
    }
}

/// The operators whose dunder methods have an in-place `__i<op>__` form.
const AUGMENTED_ASSIGNMENT_OPS: &[&str] = &[
    "add", "sub", "mul", "div", "mod", "pow", "lshift", "rshift", "and", "xor", "or",
];

/// A recursive-descent parser over the characters of one schema string.
/// Positions are character indices; errors report them 1-based.
struct Parser {
    chars: Vec<char>,
    pos: usize,
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_ident_continue(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Describes the character at a position for error messages.
fn describe(c: Option<char>) -> String {
    match c {
        Some(c) => format!("'{c}'"),
        None => "end of input".to_string(),
    }
}

impl Parser {
    fn new(s: &str) -> Self {
        Parser {
            chars: s.chars().collect(),
            pos: 0,
        }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, pos: usize) -> Option<char> {
        self.chars.get(pos).copied()
    }

    fn bump(&mut self) {
        if self.pos < self.chars.len() {
            self.pos += 1;
        }
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn starts_with(&self, s: &str) -> bool {
        s.chars()
            .enumerate()
            .all(|(i, c)| self.peek_at(self.pos + i) == Some(c))
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += 1;
        }
    }

    fn text(&self, start: usize, end: usize) -> String {
        let end = end.min(self.chars.len());
        let start = start.min(end);
        self.chars[start..end].iter().collect()
    }

    fn err<T>(&self, message: impl Into<String>, pos: usize) -> Result<T, SchemaError> {
        Err(SchemaError {
            message: message.into(),
            column: pos + 1,
        })
    }

    /// Reads an identifier (`[A-Za-z_][A-Za-z0-9_]*`), if one starts here.
    fn ident(&mut self) -> Option<String> {
        if !self.peek().is_some_and(is_ident_start) {
            return None;
        }
        let start = self.pos;
        while self.peek().is_some_and(is_ident_continue) {
            self.pos += 1;
        }
        Some(self.text(start, self.pos))
    }

    /// Fails unless only whitespace is left.
    fn expect_end(&mut self, what: &str) -> Result<(), SchemaError> {
        self.skip_ws();
        if self.pos < self.chars.len() {
            let rest = self.text(self.pos, self.chars.len());
            return self.err(format!("unexpected text '{rest}' after {what}"), self.pos);
        }
        Ok(())
    }

    fn schema(&mut self) -> Result<FunctionSchema, SchemaError> {
        let Some(name) = self.ident() else {
            return self.err(
                format!("expected operator name, found {}", describe(self.peek())),
                self.pos,
            );
        };
        let mut overload = None;
        if self.eat('.') {
            let start = self.pos;
            while self.peek().is_some_and(is_ident_continue) {
                self.pos += 1;
            }
            if start == self.pos {
                return self.err("expected overload name after '.'", self.pos);
            }
            overload = Some(self.text(start, self.pos));
        }
        if self.peek() != Some('(') {
            return self.err("expected '(' after operator name", self.pos);
        }
        let arguments = self.arguments()?;
        self.skip_ws();
        if !self.starts_with("->") {
            return self.err("expected '->' after arguments", self.pos);
        }
        self.pos += 2;
        self.skip_ws();
        let (returns, tuple_returns) = self.returns()?;
        self.expect_end("returns")?;
        Ok(FunctionSchema {
            name,
            overload,
            arguments,
            returns,
            tuple_returns,
        })
    }

    /// Parses `(args)`, starting at the `(`.
    fn arguments(&mut self) -> Result<Vec<Argument>, SchemaError> {
        let open = self.pos;
        self.bump();
        let mut args: Vec<Argument> = Vec::new();
        let mut kwarg_only = false;
        self.skip_ws();
        if self.eat(')') {
            return Ok(args);
        }
        let mut after_comma = false;
        loop {
            self.skip_ws();
            let start = self.pos;
            match self.peek() {
                None => return self.err("unbalanced '('", open),
                Some(c @ (',' | ')')) if after_comma => {
                    return self.err(format!("expected argument after ',', found '{c}'"), start)
                }
                Some('*') => {
                    if kwarg_only {
                        return self.err("keyword-only marker '*' given twice", start);
                    }
                    kwarg_only = true;
                    self.bump();
                    self.skip_ws();
                    match self.peek() {
                        Some(',') => {
                            self.bump();
                            after_comma = true;
                            continue;
                        }
                        Some(')') => {
                            return self.err(
                                "keyword-only marker '*' must be followed by an argument",
                                start,
                            )
                        }
                        None => return self.err("unbalanced '('", open),
                        Some(c) => {
                            return self.err(
                                format!("expected ',' after keyword-only marker '*', found '{c}'"),
                                self.pos,
                            )
                        }
                    }
                }
                _ => {}
            }
            let (arg, name_pos) = self.argument(kwarg_only, open)?;
            if args.iter().any(|a| a.name == arg.name) {
                return self.err(format!("duplicate argument name '{}'", arg.name), name_pos);
            }
            self.skip_ws();
            match self.peek() {
                Some(',') => {
                    self.bump();
                    after_comma = true;
                    args.push(arg);
                }
                Some(')') => {
                    self.bump();
                    args.push(arg);
                    return Ok(args);
                }
                None => return self.err("unbalanced '('", open),
                Some(c) => {
                    return self.err(
                        format!(
                            "expected ',' or ')' after argument '{}', found '{c}'",
                            arg.name
                        ),
                        self.pos,
                    )
                }
            }
        }
    }

    /// Parses `type name[=default]`; returns the argument and the position of its name.
    fn argument(
        &mut self,
        kwarg_only: bool,
        open: usize,
    ) -> Result<(Argument, usize), SchemaError> {
        let ty = self.ty()?;
        match self.peek() {
            Some(c) if c.is_whitespace() => self.skip_ws(),
            None | Some(',' | ')' | '=') => {}
            Some(c) => {
                return self.err(
                    format!("unexpected character '{c}' after type '{ty}'"),
                    self.pos,
                )
            }
        }
        let name_pos = self.pos;
        let Some(name) = self.ident() else {
            return match self.peek() {
                None | Some(',' | ')' | '=') => {
                    self.err(format!("missing argument name after type '{ty}'"), name_pos)
                }
                Some(c) => self.err(
                    format!("invalid argument name starting with '{c}'"),
                    name_pos,
                ),
            };
        };
        let mut default = None;
        if self.eat('=') {
            let value_pos = self.pos;
            let value = self.default_value(open)?;
            if value.is_empty() {
                return self.err(
                    format!("missing default value after '=' for argument '{name}'"),
                    value_pos,
                );
            }
            default = Some(value);
        }
        Ok((
            Argument {
                ty,
                name,
                default,
                kwarg_only,
            },
            name_pos,
        ))
    }

    /// Reads a raw default value up to the `,` or `)` that ends it, honouring
    /// brackets, parentheses and quoted strings. Surrounding whitespace is trimmed.
    fn default_value(&mut self, open: usize) -> Result<String, SchemaError> {
        self.skip_ws();
        let start = self.pos;
        let mut stack: Vec<(char, usize)> = Vec::new();
        loop {
            match self.peek() {
                None => {
                    return match stack.last() {
                        Some(&(c, p)) => self.err(format!("unbalanced '{c}'"), p),
                        None => self.err("unbalanced '('", open),
                    };
                }
                Some(q @ ('"' | '\'')) => {
                    let quote_pos = self.pos;
                    self.bump();
                    loop {
                        match self.peek() {
                            None => return self.err("unterminated string literal", quote_pos),
                            Some('\\') => {
                                self.bump();
                                self.bump();
                            }
                            Some(c) if c == q => {
                                self.bump();
                                break;
                            }
                            Some(_) => self.bump(),
                        }
                    }
                }
                Some(c @ ('[' | '(')) => {
                    stack.push((c, self.pos));
                    self.bump();
                }
                Some(c @ (']' | ')')) => match stack.pop() {
                    Some((o, p)) => {
                        if (o, c) != ('[', ']') && (o, c) != ('(', ')') {
                            return self.err(format!("unbalanced '{o}'"), p);
                        }
                        self.bump();
                    }
                    None if c == ')' => break,
                    None => return self.err("unbalanced ']'", self.pos),
                },
                Some(',') if stack.is_empty() => break,
                Some(_) => self.bump(),
            }
        }
        Ok(self.text(start, self.pos).trim_end().to_string())
    }

    /// Parses the returns after `->`: one return or a parenthesised list.
    fn returns(&mut self) -> Result<(Vec<Return>, bool), SchemaError> {
        if self.peek() != Some('(') {
            if self.peek().is_none() {
                return self.err("expected return type after '->'", self.pos);
            }
            return Ok((vec![self.ret()?.0], false));
        }
        let open = self.pos;
        self.bump();
        self.skip_ws();
        let mut rets: Vec<Return> = Vec::new();
        if self.eat(')') {
            return Ok((rets, true));
        }
        loop {
            self.skip_ws();
            if self.peek().is_none() {
                return self.err("unbalanced '('", open);
            }
            let (ret, name_pos) = self.ret()?;
            if let Some(name) = &ret.name {
                if rets.iter().any(|r| r.name.as_ref() == Some(name)) {
                    return self.err(format!("duplicate return name '{name}'"), name_pos);
                }
            }
            rets.push(ret);
            self.skip_ws();
            match self.peek() {
                Some(',') => self.bump(),
                Some(')') => {
                    self.bump();
                    return Ok((rets, true));
                }
                None => return self.err("unbalanced '('", open),
                Some(c) => {
                    return self.err(
                        format!("expected ',' or ')' in returns, found '{c}'"),
                        self.pos,
                    )
                }
            }
        }
    }

    /// Parses `type [name]`; returns the return and the position of its name.
    fn ret(&mut self) -> Result<(Return, usize), SchemaError> {
        let ty = self.ty()?;
        let before_ws = self.pos;
        self.skip_ws();
        let name_pos = self.pos;
        if name_pos > before_ws {
            if let Some(name) = self.ident() {
                return Ok((
                    Return {
                        ty,
                        name: Some(name),
                    },
                    name_pos,
                ));
            }
        }
        // No name: leave any whitespace for the caller.
        self.pos = before_ws;
        Ok((Return { ty, name: None }, name_pos))
    }

    /// Parses a type: base name, optional alias annotation, then `[..]` and `?` suffixes.
    fn ty(&mut self) -> Result<Type, SchemaError> {
        let start = self.pos;
        let Some(base_name) = self.ident() else {
            return self.err(
                format!("expected type, found {}", describe(self.peek())),
                start,
            );
        };
        let Some(mut ty) = Type::from_base_name(&base_name) else {
            return self.err(format!("unknown type '{base_name}'"), start);
        };
        if self.peek() == Some('(') {
            if !matches!(ty, Type::Tensor { .. }) {
                return self.err(
                    format!("alias annotation is only allowed on Tensor, not '{base_name}'"),
                    self.pos,
                );
            }
            ty = Type::Tensor {
                alias: Some(self.alias()?),
            };
        }
        loop {
            match self.peek() {
                Some('[') => {
                    let open = self.pos;
                    self.bump();
                    let size_start = self.pos;
                    while self.peek().is_some_and(is_ident_continue) {
                        self.bump();
                    }
                    if self.peek() != Some(']') {
                        return self.err("unbalanced '['", open);
                    }
                    let token = self.text(size_start, self.pos);
                    self.bump();
                    let size = if token.is_empty() {
                        None
                    } else {
                        match token.parse::<usize>() {
                            Ok(n) if n.to_string() == token => Some(n),
                            _ => {
                                return self.err(format!("invalid list size '{token}'"), size_start)
                            }
                        }
                    };
                    ty = Type::List {
                        elem: Box::new(ty),
                        size,
                    };
                }
                Some('?') => {
                    if ty.is_optional() {
                        return self.err(format!("type '{ty}' is already optional"), self.pos);
                    }
                    self.bump();
                    ty = Type::Optional(Box::new(ty));
                }
                _ => return Ok(ty),
            }
        }
    }

    /// Parses `(set[!][ -> set])`, starting at the `(`.
    fn alias(&mut self) -> Result<Alias, SchemaError> {
        let open = self.pos;
        self.bump();
        let content_start = self.pos;
        while self.peek().is_some_and(|c| c != ')') {
            self.bump();
        }
        if self.peek().is_none() {
            return self.err("unbalanced '(' in alias annotation", open);
        }
        let content = self.text(content_start, self.pos);
        self.bump();
        let (before, after) = match content.split_once("->") {
            Some((before, after)) => (before.trim(), Some(after.trim())),
            None => (content.trim(), None),
        };
        let (set, is_write) = match before.strip_suffix('!') {
            Some(set) => (set, true),
            None => (before, false),
        };
        if set.is_empty() {
            return self.err("empty alias annotation", content_start);
        }
        if !is_alias_set(set) {
            return self.err(format!("invalid alias set '{set}'"), content_start);
        }
        if let Some(after) = after {
            if !is_alias_set(after) {
                return self.err(
                    format!("invalid alias set '{after}' after '->'"),
                    content_start,
                );
            }
        }
        Ok(Alias {
            set: set.to_string(),
            is_write,
            after: after.map(str::to_string),
        })
    }
}

/// Whether `s` is an alias set: `*` or lowercase names joined by `|` (`a`, `a|b`).
fn is_alias_set(s: &str) -> bool {
    s.split('|').all(|part| {
        part == "*"
            || (part.starts_with(|c: char| c.is_ascii_lowercase())
                && part
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
    })
}

#[cfg(test)]
mod tests {
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

        let s = parse("foo(str a=\"x, y\", int[] b=[0,1], float c=1e-05, MemoryFormat d=contiguous_format) -> ()");
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
}
