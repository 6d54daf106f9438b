//! The recursive-descent parser of the schema language (see the grammar in [`super`]).

use super::{Alias, Argument, FunctionSchema, Return, SchemaError, Type};
use std::str::FromStr;

impl FunctionSchema {
    /// Parses a schema string such as
    /// `add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor`.
    pub fn parse(s: &str) -> Result<Self, SchemaError> {
        Parser::new(s).schema()
    }
}

impl FromStr for FunctionSchema {
    type Err = SchemaError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
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
}

impl FromStr for Type {
    type Err = SchemaError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

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
