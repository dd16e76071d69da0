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
//! never a panic or a wrapped value.

use super::SpecError;

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

impl Expr {
    /// Parses `text`; an error says where and what.
    pub fn parse(text: &str) -> Result<Expr, SpecError> {
        let mut p = Parser { s: text.as_bytes(), pos: 0, text };
        let e = p.expr(0)?;
        p.skip_ws();
        if p.pos != p.s.len() {
            return Err(p.error("unexpected text"));
        }
        Ok(e)
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
}

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
        SpecError::new(format!("{what} at column {} of {:?}", self.pos + 1, self.text))
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

    /// Precedence climbing; `min` is the lowest binding power accepted.
    fn expr(&mut self, min: u8) -> Result<Expr, SpecError> {
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
            lhs = Expr::Bin(op, Box::new(lhs), Box::new(rhs));
        }
    }

    fn atom(&mut self) -> Result<Expr, SpecError> {
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
                Ok(Expr::Neg(Box::new(self.expr(5)?)))
            }
            Some(b'+') => {
                self.pos += 1;
                self.atom()
            }
            Some(c) if c.is_ascii_digit() => self.number(),
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                let start = self.pos;
                while self.pos < self.s.len() && (self.s[self.pos].is_ascii_alphanumeric() || self.s[self.pos] == b'_')
                {
                    self.pos += 1;
                }
                Ok(Expr::Var(self.text[start..self.pos].to_owned()))
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
}
