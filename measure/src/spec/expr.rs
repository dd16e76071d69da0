//! Integer expressions over axis names, for launch shapes, buffer sizes and scalar arguments:
//! `n/256`, `2*n+1`, `(n+255)/256`, `1M`, `2^20`.
//!
//! - numbers in decimal, or `0x` hexadecimal, with an optional binary suffix: `K` (1024), `M`
//!   (1024²), `G` (1024³);
//! - names of axes, replaced by the value of the point being measured;
//! - `+ - * / %` and `^` (power, binds tightest, right to left), parentheses, unary minus;
//! - **`/` rounds up** (`n/256` is the number of 256-thread blocks that cover `n` elements);
//!   `%` is the remainder of the division rounded toward zero.
//!
//! Every operation is checked: overflow, division by zero and a negative exponent are errors,
//! never a panic or a wrapped value. Nesting is bounded ([`MAX_DEPTH`]): the parser, the
//! evaluation and the drop of an expression recurse over its tree, so a text nested 60,000 deep
//! (a 120 KB argument is legal on Linux) is refused rather than overflowing the stack. So is
//! length ([`MAX_LEN`]): the command evaluates each expression at every point of its sweep (up to
//! 100,000), so a balanced tree of 20,000 terms, shallow enough to pass the depth limit, took
//! minutes to check.

use super::{shown, SpecError};

/// The longest an expression's text may be, in bytes (spaces included). Written expressions are
/// a few dozen bytes; this bounds an expression to about 2,000 terms, and the check of a sweep
/// (every expression at every point) to a fraction of a second.
pub const MAX_LEN: usize = 4096;

/// The deepest an expression may nest: parentheses, signs and operators, each operand of an
/// operator one level below it (`1+1+...+1` of 300 terms nests 300 deep). Written expressions
/// nest a few levels; this bounds the recursion of parsing, evaluating and dropping one to a few
/// hundred kilobytes of stack at most.
pub const MAX_DEPTH: usize = 256;

/// A parsed expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expr {
    /// A number.
    Num(i64),
    /// An axis name.
    Var(String),
    /// Negation.
    Neg(Box<Expr>),
    /// A binary operation.
    Bin(Op, Box<Expr>, Box<Expr>),
}

/// A binary operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`, rounding up.
    Div,
    /// `%`
    Rem,
    /// `^`
    Pow,
}

impl Op {
    fn symbol(self) -> char {
        match self {
            Op::Add => '+',
            Op::Sub => '-',
            Op::Mul => '*',
            Op::Div => '/',
            Op::Rem => '%',
            Op::Pow => '^',
        }
    }
}

/// Written back as it parses, with the parentheses precedence needs: `n/256`, `(n+1)*2`, `-(2^2)`
/// is `-2^2`. (For messages that name a buffer's size or a launch shape.)
impl core::fmt::Display for Expr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.write(f, 0)
    }
}

impl Expr {
    /// How tightly the expression holds together when written: an operator's left binding power
    /// ([`binding`]), 5 for a sign (it takes `^` under it), 7 for a number or a name.
    fn tightness(&self) -> u8 {
        match self {
            Expr::Num(n) if *n < 0 => 5,
            Expr::Num(_) | Expr::Var(_) => 7,
            Expr::Neg(_) => 5,
            Expr::Bin(op, _, _) => binding(*op).0,
        }
    }

    /// Writes the expression, in parentheses when it holds together less tightly than `min`.
    fn write(&self, f: &mut core::fmt::Formatter<'_>, min: u8) -> core::fmt::Result {
        let paren = self.tightness() < min;
        if paren {
            f.write_str("(")?;
        }
        match self {
            Expr::Num(n) => write!(f, "{n}")?,
            Expr::Var(v) => f.write_str(v)?,
            Expr::Neg(e) => {
                f.write_str("-")?;
                e.write(f, 6)?;
            }
            Expr::Bin(op, a, b) => {
                let (left, right) = binding(*op);
                // Left-associative operators take their own kind on the left only, `^` on the right only.
                a.write(f, if left < right { left } else { left + 1 })?;
                write!(f, "{}", op.symbol())?;
                b.write(f, if left < right { left + 1 } else { right + 1 })?;
            }
        }
        if paren {
            f.write_str(")")?;
        }
        Ok(())
    }

    /// Parses `text`; an error says where and what, and refuses an expression longer than
    /// [`MAX_LEN`] bytes (before reading it) or nested deeper than [`MAX_DEPTH`].
    pub fn parse(text: &str) -> Result<Expr, SpecError> {
        if text.len() > MAX_LEN {
            return Err(SpecError::new(format!("expression longer than {MAX_LEN} bytes: {}", shown(text))));
        }
        let mut p = Parser { s: text.as_bytes(), pos: 0, text, depth: 0 };
        let (e, _) = p.expr(0)?;
        p.skip_ws();
        if p.pos != p.s.len() {
            return Err(p.error("unexpected text"));
        }
        Ok(e)
    }

    /// How many numbers, names, signs and operators the expression holds: what one evaluation
    /// costs.
    pub fn terms(&self) -> usize {
        match self {
            Expr::Num(_) | Expr::Var(_) => 1,
            Expr::Neg(e) => 1 + e.terms(),
            Expr::Bin(_, a, b) => 1 + a.terms() + b.terms(),
        }
    }

    /// The axis names the expression uses.
    pub fn vars(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.collect(&mut out);
        out
    }

    fn collect<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Expr::Num(_) => {}
            Expr::Var(v) => out.push(v),
            Expr::Neg(e) => e.collect(out),
            Expr::Bin(_, a, b) => {
                a.collect(out);
                b.collect(out);
            }
        }
    }

    /// The value with axis values from `var`; an error for an unknown name, an overflow, a
    /// division by zero or a negative exponent.
    pub fn eval(&self, var: &dyn Fn(&str) -> Option<i64>) -> Result<i64, SpecError> {
        let overflow = || SpecError::new("integer overflow in an expression");
        match self {
            Expr::Num(n) => Ok(*n),
            Expr::Var(v) => var(v).ok_or_else(|| SpecError::new(format!("unknown name {v:?} (not an axis)"))),
            Expr::Neg(e) => e.eval(var)?.checked_neg().ok_or_else(overflow),
            Expr::Bin(op, a, b) => {
                let (a, b) = (a.eval(var)?, b.eval(var)?);
                match op {
                    Op::Add => a.checked_add(b).ok_or_else(overflow),
                    Op::Sub => a.checked_sub(b).ok_or_else(overflow),
                    Op::Mul => a.checked_mul(b).ok_or_else(overflow),
                    Op::Div => div_ceil(a, b),
                    Op::Rem => {
                        if b == 0 {
                            return Err(SpecError::new("division by zero in an expression"));
                        }
                        a.checked_rem(b).ok_or_else(overflow)
                    }
                    Op::Pow => {
                        let e = u32::try_from(b)
                            .map_err(|_| SpecError::new("a negative or huge exponent in an expression"))?;
                        a.checked_pow(e).ok_or_else(overflow)
                    }
                }
            }
        }
    }

    /// The value of an expression that names no axis.
    pub fn constant(&self) -> Result<i64, SpecError> {
        self.eval(&|_| None)
    }
}

/// `a / b` rounded up (toward positive infinity), checked.
fn div_ceil(a: i64, b: i64) -> Result<i64, SpecError> {
    if b == 0 {
        return Err(SpecError::new("division by zero in an expression"));
    }
    let q = a.checked_div(b).ok_or_else(|| SpecError::new("integer overflow in an expression"))?;
    let r = a % b;
    Ok(if r != 0 && ((r > 0) == (b > 0)) { q + 1 } else { q })
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
    text: &'a str,
    /// How deep `expr` recurses now.
    depth: usize,
}

/// An expression and the height of its tree (a number or a name is 1).
type Parsed = (Expr, usize);

/// Binding power of each operator: `+ -` < `* / %` < `^` (right-associative).
fn binding(op: Op) -> (u8, u8) {
    match op {
        Op::Add | Op::Sub => (1, 2),
        Op::Mul | Op::Div | Op::Rem => (3, 4),
        Op::Pow => (6, 5),
    }
}

impl Parser<'_> {
    fn error(&self, what: &str) -> SpecError {
        SpecError::new(format!("{what} at column {} of {}", self.pos + 1, shown(self.text)))
    }

    fn too_deep(&self) -> SpecError {
        self.error(&format!("expression nested deeper than {MAX_DEPTH}"))
    }

    /// `Expr::Bin` of `lhs` and `rhs`, refused when it would nest deeper than [`MAX_DEPTH`].
    fn bin(&self, op: Op, (lhs, l): Parsed, (rhs, r): Parsed) -> Result<Parsed, SpecError> {
        let height = l.max(r) + 1;
        if height > MAX_DEPTH {
            return Err(self.too_deep());
        }
        Ok((Expr::Bin(op, Box::new(lhs), Box::new(rhs)), height))
    }

    fn skip_ws(&mut self) {
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.pos).copied()
    }

    /// Precedence climbing; `min` is the lowest binding power accepted. Every recursion of the
    /// parser passes here (operands, parentheses, signs), so counting here bounds it.
    fn expr(&mut self, min: u8) -> Result<Parsed, SpecError> {
        if self.depth >= MAX_DEPTH {
            return Err(self.too_deep());
        }
        self.depth += 1;
        let parsed = self.climb(min);
        self.depth -= 1;
        parsed
    }

    fn climb(&mut self, min: u8) -> Result<Parsed, SpecError> {
        let mut lhs = self.atom()?;
        loop {
            let op = match self.peek() {
                Some(b'+') => Op::Add,
                Some(b'-') => Op::Sub,
                Some(b'*') => Op::Mul,
                Some(b'/') => Op::Div,
                Some(b'%') => Op::Rem,
                Some(b'^') => Op::Pow,
                _ => return Ok(lhs),
            };
            let (left, right) = binding(op);
            if left < min {
                return Ok(lhs);
            }
            self.pos += 1;
            let rhs = self.expr(right)?;
            lhs = self.bin(op, lhs, rhs)?;
        }
    }

    fn atom(&mut self) -> Result<Parsed, SpecError> {
        // Unary plus changes nothing: skipped here rather than recursed over.
        while self.peek() == Some(b'+') {
            self.pos += 1;
        }
        match self.peek() {
            None => Err(self.error("expected a number, a name or '('")),
            Some(b'(') => {
                self.pos += 1;
                let e = self.expr(0)?;
                if self.peek() != Some(b')') {
                    return Err(self.error("expected ')'"));
                }
                self.pos += 1;
                Ok(e)
            }
            Some(b'-') => {
                self.pos += 1;
                // Unary minus binds looser than `^`: -2^2 is -(2^2).
                let (e, height) = self.expr(5)?;
                if height >= MAX_DEPTH {
                    return Err(self.too_deep());
                }
                Ok((Expr::Neg(Box::new(e)), height + 1))
            }
            Some(c) if c.is_ascii_digit() => Ok((self.number()?, 1)),
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                let start = self.pos;
                while self.pos < self.s.len() && (self.s[self.pos].is_ascii_alphanumeric() || self.s[self.pos] == b'_')
                {
                    self.pos += 1;
                }
                Ok((Expr::Var(self.text[start..self.pos].to_owned()), 1))
            }
            Some(_) => Err(self.error("expected a number, a name or '('")),
        }
    }

    fn number(&mut self) -> Result<Expr, SpecError> {
        let start = self.pos;
        let hex = self.s[self.pos..].starts_with(b"0x") || self.s[self.pos..].starts_with(b"0X");
        if hex {
            self.pos += 2;
        }
        let digits = self.pos;
        while self.pos < self.s.len()
            && (self.s[self.pos].is_ascii_hexdigit() && (hex || self.s[self.pos].is_ascii_digit()))
        {
            self.pos += 1;
        }
        let body = &self.text[digits..self.pos];
        let value = if hex { i64::from_str_radix(body, 16) } else { body.parse::<i64>() };
        let mut value = value.map_err(|_| {
            self.pos = start;
            self.error("a number out of range")
        })?;
        if let Some(&c) = self.s.get(self.pos) {
            let scale: Option<i64> = match c {
                b'K' | b'k' => Some(1 << 10),
                b'M' => Some(1 << 20),
                b'G' => Some(1 << 30),
                _ => None,
            };
            if let Some(scale) = scale {
                self.pos += 1;
                value = value.checked_mul(scale).ok_or_else(|| self.error("a number out of range"))?;
            }
        }
        if let Some(&c) = self.s.get(self.pos) {
            if c.is_ascii_alphanumeric() || c == b'_' || c == b'.' {
                return Err(self.error("unexpected character in a number"));
            }
        }
        Ok(Expr::Num(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(s: &str, n: i64) -> Result<i64, SpecError> {
        Expr::parse(s)?.eval(&|v| (v == "n").then_some(n))
    }

    #[test]
    fn arithmetic_with_axes_and_suffixes() {
        assert_eq!(eval("n/256", 4096).unwrap(), 16);
        assert_eq!(eval("n/256", 4097).unwrap(), 17);
        assert_eq!(eval("-7/2", 0).unwrap(), -3);
        assert_eq!(eval("7/-2", 0).unwrap(), -3);
        assert_eq!(eval("-7/-2", 0).unwrap(), 4);
        assert_eq!(eval("(n + 255) % 256", 1).unwrap(), 0);
        assert_eq!(eval("2 * n + 1", 5).unwrap(), 11);
        assert_eq!(eval("1M + 16K + 0x10", 0).unwrap(), (1 << 20) + (16 << 10) + 16);
        assert_eq!(eval("2^10", 0).unwrap(), 1024);
        assert_eq!(eval("2^3^2", 0).unwrap(), 512, "right to left");
        assert_eq!(eval("-2^2", 0).unwrap(), -4);
        assert_eq!(eval("3G", 0).unwrap(), 3 << 30);
        assert_eq!(Expr::parse("n * m + n").unwrap().vars(), vec!["n", "m", "n"]);
    }

    #[test]
    fn bad_expressions_are_errors_not_panics() {
        for bad in [
            "",
            "n/",
            "(n",
            "n)",
            "1.5",
            "2^-1",
            "1/0",
            "1%0",
            "n 2",
            "9223372036854775807 + 1",
            "2^63",
            "8G*8G*8G",
            "99999999999999999999",
            "0x",
            "abc$",
            "--",
            "*",
            "16Q",
            "-9223372036854775807 - 2",
        ] {
            assert!(eval(bad, 1).is_err(), "{bad:?} should be an error");
        }
        assert!(eval("m", 1).unwrap_err().to_string().contains("\"m\""));
    }

    /// 60,000 levels: a 120 KB argument, which Linux passes (an argument may be 128 KiB). Each
    /// shape recursed once per level when parsed, evaluated or dropped, and overflowed the stack.
    fn deep_texts(levels: usize) -> Vec<String> {
        vec![
            format!("{}1{}", "(".repeat(levels), ")".repeat(levels)),
            format!("{}1", "-".repeat(levels)),
            format!("{}1", "+-".repeat(levels / 2)),
            format!("{}1{}", "(1+".repeat(levels / 3), ")".repeat(levels / 3)),
            vec!["1"; levels / 2].join("^"),
            vec!["1"; levels / 2].join("+"),
            vec!["n"; levels / 2].join("*"),
        ]
    }

    #[test]
    fn nesting_past_the_limit_is_an_error_not_a_stack_overflow() {
        // 2,000 levels: within the length limit, far past the depth limit.
        for text in deep_texts(2_000) {
            assert!(text.len() <= MAX_LEN, "{}", text.len());
            let e = Expr::parse(&text).unwrap_err().to_string();
            assert!(e.contains(&format!("expression nested deeper than {MAX_DEPTH}")), "{}: {e}", &text[..20]);
            assert!(e.len() < 200, "the message quotes an excerpt: {} bytes", e.len());
        }
        // 60,000 levels: refused by their length before they are read.
        for text in deep_texts(60_000) {
            let e = Expr::parse(&text).unwrap_err().to_string();
            assert!(e.contains(&format!("expression longer than {MAX_LEN} bytes")), "{}: {e}", &text[..20]);
            assert!(e.len() < 200, "the message quotes an excerpt, not 120 KB: {} bytes", e.len());
        }
        // A run of plus signs nests nothing.
        assert_eq!(eval(&format!("{}7", "+".repeat(MAX_LEN - 1)), 0).unwrap(), 7);
    }

    /// A balanced sum of `leaves` names: as shallow as a tree can be, as long as it has terms.
    fn balanced(leaves: usize) -> String {
        if leaves == 1 {
            return "n".into();
        }
        format!("({}+{})", balanced(leaves / 2), balanced(leaves - leaves / 2))
    }

    /// An expression within the depth limit but longer than [`MAX_LEN`] (80 KB: 20,000 terms 16
    /// deep, which made a sweep's check take minutes) is refused, at once; one of the longest
    /// accepted parses and evaluates, and counts its terms.
    #[test]
    fn expressions_longer_than_the_limit_are_refused() {
        let long = balanced(20_000);
        assert!(long.len() > 79_000, "{}", long.len());
        let started = std::time::Instant::now();
        let e = Expr::parse(&long).unwrap_err().to_string();
        assert!(started.elapsed().as_secs_f64() < 0.5, "{:?}", started.elapsed());
        assert!(e.starts_with(&format!("expression longer than {MAX_LEN} bytes: \"((((")), "{e}");
        assert!(e.contains(&format!("({} bytes)", long.len())) && e.len() < 200, "{e}");
        let fits = balanced(1_000);
        assert!(fits.len() <= MAX_LEN, "{}", fits.len());
        let parsed = Expr::parse(&fits).unwrap();
        assert_eq!(parsed.terms(), 1_999);
        assert_eq!(parsed.eval(&|v| (v == "n").then_some(3)).unwrap(), 3_000);
        let exactly = format!("{}n", " ".repeat(MAX_LEN - 1));
        assert!(Expr::parse(&exactly).is_ok(), "{MAX_LEN} bytes are accepted");
        assert!(Expr::parse(&format!(" {exactly}")).is_err(), "one more is not");
        assert_eq!(Expr::parse("-(n+1)*2").unwrap().terms(), 6);
    }

    #[test]
    fn nesting_up_to_the_limit_parses_and_evaluates() {
        let k = MAX_DEPTH - 1;
        assert_eq!(eval(&format!("{}n{}", "(".repeat(k), ")".repeat(k)), 3).unwrap(), 3);
        assert!(Expr::parse(&format!("{}n{}", "(".repeat(k + 1), ")".repeat(k + 1))).is_err());
        assert_eq!(eval(&vec!["1"; MAX_DEPTH].join("+"), 0).unwrap(), MAX_DEPTH as i64);
        assert!(Expr::parse(&vec!["1"; MAX_DEPTH + 1].join("+")).is_err());
        assert_eq!(eval(&vec!["1"; MAX_DEPTH].join("^"), 0).unwrap(), 1);
        assert!(Expr::parse(&vec!["1"; MAX_DEPTH + 1].join("^")).is_err());
        assert_eq!(eval(&format!("{}5", "-".repeat(MAX_DEPTH - 1)), 0).unwrap(), -5);
        assert!(Expr::parse(&format!("{}5", "-".repeat(MAX_DEPTH))).is_err());
    }

    #[test]
    fn expressions_are_written_back_as_they_parse() {
        for (text, written) in [
            ("n/256", "n/256"),
            ("(n + 255) / 256", "(n+255)/256"),
            ("2*n+1", "2*n+1"),
            ("a-(b-c)", "a-(b-c)"),
            ("(a-b)-c", "a-b-c"),
            ("2^3^2", "2^3^2"),
            ("(2^3)^2", "(2^3)^2"),
            ("-2^2", "-2^2"),
            ("(-2)^2", "(-2)^2"),
            ("-(a*b)", "-(a*b)"),
            ("--n", "-(-n)"),
            ("1M", "1048576"),
            ("n % (m * 2)", "n%(m*2)"),
        ] {
            let e = Expr::parse(text).unwrap();
            assert_eq!(e.to_string(), written, "{text}");
            assert_eq!(Expr::parse(written).unwrap(), e, "{written} parses back to {text}");
        }
    }
}
