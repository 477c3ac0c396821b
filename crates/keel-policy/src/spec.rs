//! Spec strings: `name:key=value,key=value`, nested specs in parentheses
//! (`hier:nodes=4,outer=(binlpt:chunks=80),inner=refine`). One grammar for
//! every policy family (`docs/conventions.md#spec-strings`).
//!
//! ```text
//! spec  := name [ ':' param { ',' param } ]
//! param := key '=' value
//! value := '(' spec ')' | token          token: no ',', '(', ')' or '='
//! ```
//!
//! Specs nest at most [`MAX_SPEC_DEPTH`] levels deep: the parser recurses
//! once per level, so a deeper input is refused before it could exhaust
//! the stack.
//!
//! Tokens, a nested spec, and the canonical text back:
//!
//! ```
//! use keel_policy::{Spec, SpecValue};
//! let spec = Spec::parse("hier:nodes=4,outer=(greedy),inner=(refine:tolerance=1.1)").unwrap();
//! assert_eq!(spec.name, "hier");
//! assert_eq!(spec.token("nodes").unwrap(), Some("4"));
//! let Some(SpecValue::Nested(inner)) = spec.get("inner") else { panic!("inner is a spec") };
//! assert_eq!(inner.parsed::<f64>("tolerance", "a number").unwrap(), Some(1.1));
//! assert_eq!(Spec::parse(&spec.to_string()).unwrap(), spec);
//! assert!(Spec::parse("greedy:=3").is_err());
//! ```

use std::fmt;
use std::str::FromStr;

pub use crate::error::SpecError;
use crate::error::{compact, PolicyError};

/// The deepest nesting of `( )` specs the parser accepts. Real compositions
/// (`hier` inside `hier`) use a handful of levels.
pub const MAX_SPEC_DEPTH: usize = 32;

/// The most parameters one spec (one nesting level) may have. Real specs
/// have a handful; the bound keeps the duplicate-key check, which compares
/// each key with the earlier ones, from turning a hostile input quadratic.
pub const MAX_SPEC_PARAMS: usize = 1024;

/// A parsed spec string.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    /// The policy name, kebab-case.
    pub name: String,
    /// Parameters in the order given.
    pub params: Vec<(String, SpecValue)>,
}

/// A parameter value: a plain token or a nested spec.
#[derive(Clone, Debug, PartialEq)]
pub enum SpecValue {
    /// A token such as `80`, `1.05` or `refine`.
    Token(String),
    /// A parenthesised spec.
    Nested(Spec),
}

impl FromStr for Spec {
    type Err = SpecError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let mut parser = Parser {
            input,
            pos: 0,
            depth: 0,
        };
        let spec = parser.spec()?;
        parser.skip_ws();
        if parser.pos < input.len() {
            return Err(parser.error(format!("unexpected `{}`", parser.rest())));
        }
        Ok(spec)
    }
}

impl Spec {
    /// Parses a spec string.
    pub fn parse(input: &str) -> Result<Self, SpecError> {
        input.parse()
    }

    /// A spec with a name and no parameters.
    pub fn named(name: &str) -> Self {
        Spec {
            name: name.to_string(),
            params: Vec::new(),
        }
    }

    /// Fails with a typed error if a parameter is not in `valid`.
    pub fn check_keys(&self, valid: &[&str]) -> Result<(), PolicyError> {
        for (key, _) in &self.params {
            if !valid.contains(&key.as_str()) {
                return Err(PolicyError::UnknownParameter {
                    policy: self.name.clone(),
                    key: key.clone(),
                    valid: valid.iter().map(|s| s.to_string()).collect(),
                });
            }
        }
        Ok(())
    }

    /// The raw value of `key`, if given.
    pub fn get(&self, key: &str) -> Option<&SpecValue> {
        self.params.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// `key` as a token, or an error if it is a nested spec.
    pub fn token(&self, key: &str) -> Result<Option<&str>, PolicyError> {
        match self.get(key) {
            None => Ok(None),
            Some(SpecValue::Token(t)) => Ok(Some(t)),
            Some(SpecValue::Nested(s)) => Err(self.invalid(key, &s.to_string(), "a plain value")),
        }
    }

    /// `key` parsed as `T`, with `expected` naming the valid range in errors.
    pub fn parsed<T: FromStr>(&self, key: &str, expected: &str) -> Result<Option<T>, PolicyError> {
        match self.token(key)? {
            None => Ok(None),
            Some(t) => t
                .parse()
                .map(Some)
                .map_err(|_| self.invalid(key, t, expected)),
        }
    }

    /// A finite number `>= min`.
    pub fn number_at_least(&self, key: &str, min: f64) -> Result<Option<f64>, PolicyError> {
        let expected = format!("a finite number >= {}", compact(min));
        match self.parsed::<f64>(key, &expected)? {
            Some(v) if !(v.is_finite() && v >= min) => {
                Err(self.invalid(key, &compact(v), &expected))
            }
            other => Ok(other),
        }
    }

    /// An integer in `min..=max`; `max` is a limit the caller names so that
    /// a huge value is refused rather than saturated or allocated.
    pub fn count_in(
        &self,
        key: &str,
        min: usize,
        max: usize,
    ) -> Result<Option<usize>, PolicyError> {
        let expected = format!("an integer in {min}..={max}");
        match self.parsed::<usize>(key, &expected)? {
            Some(v) if !(min..=max).contains(&v) => {
                Err(self.invalid(key, &v.to_string(), &expected))
            }
            other => Ok(other),
        }
    }

    /// An integer `>= min`.
    pub fn count_at_least(&self, key: &str, min: usize) -> Result<Option<usize>, PolicyError> {
        let expected = format!("an integer >= {min}");
        match self.parsed::<usize>(key, &expected)? {
            Some(v) if v < min => Err(self.invalid(key, &v.to_string(), &expected)),
            other => Ok(other),
        }
    }

    /// One of a closed set of words.
    pub fn choice<'v>(&self, key: &str, valid: &[&'v str]) -> Result<Option<&'v str>, PolicyError> {
        match self.token(key)? {
            None => Ok(None),
            Some(t) => valid
                .iter()
                .find(|v| **v == t)
                .map(|v| Some(*v))
                .ok_or_else(|| self.invalid(key, t, &format!("one of {}", valid.join(", ")))),
        }
    }

    /// `key` as a spec: a nested `( ... )` or a bare name.
    pub fn nested(&self, key: &str) -> Option<Spec> {
        match self.get(key)? {
            SpecValue::Nested(s) => Some(s.clone()),
            SpecValue::Token(t) => Some(Spec::named(t)),
        }
    }

    /// An [`PolicyError::InvalidParameter`] for this spec.
    pub fn invalid(&self, key: &str, value: &str, expected: &str) -> PolicyError {
        PolicyError::InvalidParameter {
            policy: self.name.clone(),
            key: key.to_string(),
            value: value.to_string(),
            expected: expected.to_string(),
        }
    }
}

impl fmt::Display for Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        for (i, (key, value)) in self.params.iter().enumerate() {
            f.write_str(if i == 0 { ":" } else { "," })?;
            match value {
                SpecValue::Token(t) => write!(f, "{key}={t}")?,
                SpecValue::Nested(s) => write!(f, "{key}=({s})")?,
            }
        }
        Ok(())
    }
}

struct Parser<'s> {
    input: &'s str,
    pos: usize,
    /// How many `(` the parser is inside.
    depth: usize,
}

impl Parser<'_> {
    fn rest(&self) -> &str {
        &self.input[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn skip_ws(&mut self) {
        while let Some(c) = self.peek().filter(|c| c.is_whitespace()) {
            self.pos += c.len_utf8();
        }
    }

    fn error(&self, problem: String) -> SpecError {
        SpecError {
            input: self.input.to_string(),
            position: self.pos,
            problem,
        }
    }

    fn eat(&mut self, c: char) -> bool {
        self.skip_ws();
        if self.peek() == Some(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn ident(&mut self, what: &str) -> Result<String, SpecError> {
        self.skip_ws();
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        {
            self.pos += 1;
        }
        if start == self.pos {
            return Err(match self.peek() {
                None => self.error(format!("expected a {what}, found the end")),
                Some(c) => self.error(format!("expected a {what}, found `{c}`")),
            });
        }
        Ok(self.input[start..self.pos].to_ascii_lowercase())
    }

    fn spec(&mut self) -> Result<Spec, SpecError> {
        let name = self.ident("policy name")?;
        let mut params: Vec<(String, SpecValue)> = Vec::new();
        if self.eat(':') {
            loop {
                let key_pos = self.pos;
                if params.len() == MAX_SPEC_PARAMS {
                    self.skip_ws();
                    return Err(self.error(format!(
                        "a spec takes at most {MAX_SPEC_PARAMS} parameters (MAX_SPEC_PARAMS)"
                    )));
                }
                let key = self.ident("parameter name")?;
                if params.iter().any(|(k, _)| *k == key) {
                    self.pos = key_pos;
                    return Err(self.error(format!("parameter `{key}` given twice")));
                }
                if !self.eat('=') {
                    return Err(self.error(format!("expected `=` after `{key}`")));
                }
                let value = self.value(&key)?;
                params.push((key, value));
                if !self.eat(',') {
                    break;
                }
            }
        }
        Ok(Spec { name, params })
    }

    fn value(&mut self, key: &str) -> Result<SpecValue, SpecError> {
        if self.eat('(') {
            if self.depth >= MAX_SPEC_DEPTH {
                self.pos -= 1;
                return Err(self.error(format!(
                    "specs nest at most {MAX_SPEC_DEPTH} levels deep (MAX_SPEC_DEPTH); \
                     this `(` opens level {}",
                    self.depth + 1
                )));
            }
            self.depth += 1;
            let nested = self.spec();
            self.depth -= 1;
            let nested = nested?;
            if !self.eat(')') {
                return Err(self.error(format!("expected `)` to close the value of `{key}`")));
            }
            return Ok(SpecValue::Nested(nested));
        }
        self.skip_ws();
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|c| !matches!(c, ',' | '(' | ')' | '=' | ':'))
        {
            self.pos += self.peek().map_or(1, char::len_utf8);
        }
        let token = self.input[start..self.pos].trim();
        if token.is_empty() {
            return Err(self.error(format!("missing value for `{key}`")));
        }
        Ok(SpecValue::Token(token.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_conventions_examples() {
        let s: Spec = "greedy".parse().unwrap();
        assert_eq!(s, Spec::named("greedy"));

        let s: Spec = "binlpt:chunks=80".parse().unwrap();
        assert_eq!(s.name, "binlpt");
        assert_eq!(s.count_at_least("chunks", 1).unwrap(), Some(80));

        let s: Spec = "refine:tolerance=1.05".parse().unwrap();
        assert_eq!(s.number_at_least("tolerance", 1.0).unwrap(), Some(1.05));

        let s: Spec = "hier:nodes=4,outer=(binlpt:chunks=80),inner=refine"
            .parse()
            .unwrap();
        assert_eq!(s.count_at_least("nodes", 1).unwrap(), Some(4));
        assert_eq!(s.nested("outer").unwrap().to_string(), "binlpt:chunks=80");
        assert_eq!(s.nested("inner").unwrap(), Spec::named("refine"));
    }

    #[test]
    fn display_round_trips() {
        for text in [
            "greedy",
            "binlpt:chunks=80,cut=improved",
            "hier:nodes=4,outer=(hier:nodes=2,outer=(greedy),inner=refine),inner=(refine:tolerance=1.1)",
        ] {
            let spec: Spec = text.parse().unwrap();
            assert_eq!(spec.to_string().parse::<Spec>().unwrap(), spec);
        }
    }

    #[test]
    fn non_ascii_whitespace_is_skipped_not_split() {
        let s: Spec = "\u{a0}greedy".parse().unwrap();
        assert_eq!(s.name, "greedy");
        assert!("greedy:\u{3000}".parse::<Spec>().is_err());
    }

    #[test]
    fn tolerates_whitespace_and_case() {
        let s: Spec = " Refine : tolerance = 1.1 ".parse().unwrap();
        assert_eq!(s.name, "refine");
        assert_eq!(s.number_at_least("tolerance", 1.0).unwrap(), Some(1.1));
    }

    #[test]
    fn malformed_specs_are_typed_errors() {
        for bad in [
            "",
            ":",
            "greedy:",
            "greedy:chunks",
            "greedy:chunks=",
            "hier:outer=(greedy",
            "hier:outer=greedy)",
            "a:b=1,b=2",
            "a:b=1,",
            "a b",
        ] {
            let err = bad.parse::<Spec>().unwrap_err();
            assert_eq!(err.input, bad);
            assert!(err.to_string().contains("malformed spec"), "{err}");
        }
    }

    fn nested(levels: usize) -> String {
        let mut text = String::from("hier");
        for _ in 0..levels {
            text = format!("hier:inner=({text})");
        }
        text
    }

    #[test]
    fn nesting_is_bounded_without_deep_recursion() {
        // The parse runs on a small stack: refusing 20,000 levels must not
        // recurse 20,000 times.
        let deep = nested(20_000);
        let err = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || deep.parse::<Spec>().map(|_| ()))
            .unwrap()
            .join()
            .expect("the parser did not overflow its stack")
            .unwrap_err();
        assert!(
            err.problem
                .contains("at most 32 levels deep (MAX_SPEC_DEPTH)"),
            "{err}"
        );
        assert!(err.to_string().len() < 400, "the message is bounded: {err}");
        // The `(` that opens level 33.
        assert_eq!(
            err.position,
            "hier:inner=(".len() * (MAX_SPEC_DEPTH + 1) - 1
        );

        let at_limit = nested(MAX_SPEC_DEPTH);
        assert!(at_limit.parse::<Spec>().is_ok());
        assert!(nested(MAX_SPEC_DEPTH + 1).parse::<Spec>().is_err());
    }

    #[test]
    fn the_parameter_count_is_bounded() {
        let params = |n: usize| {
            let keys: Vec<String> = (0..n).map(|i| format!("k{i}=1")).collect();
            format!("a:{}", keys.join(","))
        };
        assert_eq!(
            params(MAX_SPEC_PARAMS)
                .parse::<Spec>()
                .unwrap()
                .params
                .len(),
            MAX_SPEC_PARAMS
        );
        let err = params(100_000).parse::<Spec>().unwrap_err();
        assert!(
            err.problem
                .contains("at most 1024 parameters (MAX_SPEC_PARAMS)"),
            "{err}"
        );
        assert_eq!(err.position, params(MAX_SPEC_PARAMS).len() + 1);
    }

    #[test]
    fn long_inputs_are_quoted_around_the_problem() {
        let input = format!("{}:x=1,x=2", "a".repeat(1000));
        let err = input.parse::<Spec>().unwrap_err();
        let text = err.to_string();
        assert!(text.contains("...") && text.contains("x=1,x=2"), "{text}");
        assert!(text.len() < 300, "{text}");
        assert_eq!(err.input, input, "the error keeps the whole input");
    }

    #[test]
    fn huge_numbers_in_messages_are_compact() {
        let s: Spec = "a:t=-1e300,k=18446744073709551615".parse().unwrap();
        let err = s.number_at_least("t", 1.0).unwrap_err().to_string();
        assert!(err.contains("`-1e300`"), "{err}");
        let err = s.count_in("k", 1, 1000).unwrap_err().to_string();
        assert!(
            err.contains("`18446744073709551615`") && err.contains("1..=1000"),
            "{err}"
        );
    }

    #[test]
    fn typed_parameter_errors_name_the_key_and_the_valid_range() {
        let s: Spec = "binlpt:chunks=0,cut=weird,tolerance=nan".parse().unwrap();
        let err = s.count_at_least("chunks", 1).unwrap_err().to_string();
        assert!(err.contains("chunks") && err.contains(">= 1"), "{err}");
        let err = s
            .choice("cut", &["faithful", "improved"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("faithful, improved"), "{err}");
        assert!(s.number_at_least("tolerance", 1.0).is_err());
        let err = s.check_keys(&["chunks"]).unwrap_err().to_string();
        assert!(err.contains("`cut`") && err.contains("chunks"), "{err}");
    }
}
