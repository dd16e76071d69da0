//! Kernel arguments from the command line, one `--arg` each, in the kernel's parameter order:
//!
//! | form | the parameter gets |
//! | --- | --- |
//! | `i32=n`, `u64=1M`, `f32=0.5` | a scalar of that type (an integer expression, or a decimal number for floats) |
//! | `f32[n]` | a device buffer of `n` elements, zeroed |
//! | `f32[n]=1.5`, `u8[4K]=7` | the same, every element set to the value |
//! | `f32[n]=rand` | the same, filled with pseudo-random values (floats in [0, 1), integers any bits; the same every run; past 16 MiB the first 16 MiB repeat) |
//! | `x:f32[n]=1` | a buffer named `x`... |
//! | `@x` | ...passed again here (the same memory; a second kernel's arguments may name the first's buffers) |
//! | `stamps` | where the kernel writes its own `%globaltimer` stamps (see below) |
//! | `launch` | an `i32`: the launch's index in a sequence of launches |
//!
//! Types: `i8 u8 i16 u16 i32 u32 i64 u64 f16 bf16 f32 f64`. Sizes are element counts, integer
//! expressions of the axes ([`super::expr`]: `/` rounds up); their bytes are computed and checked
//! in [`super::buffers`]. A value that does not fit its type is an error (`u8=300`, `u32=-1`,
//! `i32=1.5`).
//!
//! A kernel that takes `stamps` writes, in each block, three `unsigned long long`s at
//! `stamps[3 * block + 0/1/2]` (the block's linear index): `%globaltimer` at its entry, after its
//! `griddepcontrol.wait` (or again at entry if it has none), and at its end after a
//! `__syncthreads()`. Each launch gets its own `stamps` pointer.

use super::expr::Expr;
use super::{shown, SpecError};

/// An element or scalar type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElemType {
    /// `i8`
    I8,
    /// `u8`
    U8,
    /// `i16`
    I16,
    /// `u16`
    U16,
    /// `i32`
    I32,
    /// `u32`
    U32,
    /// `i64`
    I64,
    /// `u64`
    U64,
    /// `f16` (IEEE half)
    F16,
    /// `bf16`
    Bf16,
    /// `f32`
    F32,
    /// `f64`
    F64,
}

impl ElemType {
    /// The type named `s`.
    pub fn parse(s: &str) -> Option<ElemType> {
        Some(match s {
            "i8" => ElemType::I8,
            "u8" => ElemType::U8,
            "i16" => ElemType::I16,
            "u16" => ElemType::U16,
            "i32" => ElemType::I32,
            "u32" => ElemType::U32,
            "i64" => ElemType::I64,
            "u64" => ElemType::U64,
            "f16" => ElemType::F16,
            "bf16" => ElemType::Bf16,
            "f32" => ElemType::F32,
            "f64" => ElemType::F64,
            _ => return None,
        })
    }

    /// Its name as written: `f32`.
    pub fn name(self) -> &'static str {
        match self {
            ElemType::I8 => "i8",
            ElemType::U8 => "u8",
            ElemType::I16 => "i16",
            ElemType::U16 => "u16",
            ElemType::I32 => "i32",
            ElemType::U32 => "u32",
            ElemType::I64 => "i64",
            ElemType::U64 => "u64",
            ElemType::F16 => "f16",
            ElemType::Bf16 => "bf16",
            ElemType::F32 => "f32",
            ElemType::F64 => "f64",
        }
    }

    /// Bytes an element.
    pub fn size(self) -> usize {
        match self {
            ElemType::I8 | ElemType::U8 => 1,
            ElemType::I16 | ElemType::U16 | ElemType::F16 | ElemType::Bf16 => 2,
            ElemType::I32 | ElemType::U32 | ElemType::F32 => 4,
            ElemType::I64 | ElemType::U64 | ElemType::F64 => 8,
        }
    }

    fn is_float(self) -> bool {
        matches!(self, ElemType::F16 | ElemType::Bf16 | ElemType::F32 | ElemType::F64)
    }

    /// The bits of `v` as this type (little-endian in the low bytes of the word); an error if it
    /// does not fit.
    pub fn encode(self, v: Value) -> Result<u64, SpecError> {
        if self.is_float() {
            let x = match v {
                Value::Int(i) => i as f64,
                Value::Float(f) => f,
            };
            return Ok(match self {
                ElemType::F16 => u64::from(f32_to_f16_bits(x as f32)),
                ElemType::Bf16 => u64::from(f32_to_bf16_bits(x as f32)),
                ElemType::F32 => u64::from((x as f32).to_bits()),
                _ => x.to_bits(),
            });
        }
        let i: i128 = match v {
            Value::Int(i) => i128::from(i),
            Value::Float(f) if f.fract() == 0.0 && f.is_finite() && f.abs() < 1.8e19 => f as i128,
            Value::Float(f) => return Err(SpecError::new(format!("{f} is not an integer"))),
        };
        let (lo, hi): (i128, i128) = match self {
            ElemType::I8 => (i8::MIN.into(), i8::MAX.into()),
            ElemType::U8 => (0, u8::MAX.into()),
            ElemType::I16 => (i16::MIN.into(), i16::MAX.into()),
            ElemType::U16 => (0, u16::MAX.into()),
            ElemType::I32 => (i32::MIN.into(), i32::MAX.into()),
            ElemType::U32 => (0, u32::MAX.into()),
            ElemType::I64 => (i64::MIN.into(), i64::MAX.into()),
            _ => (0, u64::MAX.into()),
        };
        if i < lo || i > hi {
            return Err(SpecError::new(format!("{i} does not fit in {self:?}")));
        }
        let bits = self.size() * 8;
        let mask: u128 = if bits == 64 { u64::MAX.into() } else { (1u128 << bits) - 1 };
        Ok(((i as u128) & mask) as u64)
    }
}

/// A scalar's value as written.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    /// An integer.
    Int(i64),
    /// A decimal number.
    Float(f64),
}

/// A value to be computed at a point of the sweep.
#[derive(Debug, Clone, PartialEq)]
pub enum Number {
    /// An integer expression of the axes.
    Int(Expr),
    /// A decimal number.
    Float(f64),
}

impl Number {
    fn parse(s: &str) -> Result<Number, SpecError> {
        let s = s.trim();
        let looks_decimal =
            s.contains(['.', 'e', 'E']) || s.eq_ignore_ascii_case("inf") || s.eq_ignore_ascii_case("nan");
        if looks_decimal && !s.contains(['x', 'X']) {
            if let Ok(f) = s.parse::<f64>() {
                return Ok(Number::Float(f));
            }
        }
        Ok(Number::Int(Expr::parse(s)?))
    }

    /// The value at a point (axis values from `var`).
    pub fn eval(&self, var: &dyn Fn(&str) -> Option<i64>) -> Result<Value, SpecError> {
        match self {
            Number::Int(e) => Ok(Value::Int(e.eval(var)?)),
            Number::Float(f) => Ok(Value::Float(*f)),
        }
    }
}

/// How a buffer is filled.
#[derive(Debug, Clone, PartialEq)]
pub enum Fill {
    /// Every element this value.
    Value(Number),
    /// Pseudo-random elements.
    Rand,
}

/// One `--arg`.
#[derive(Debug, Clone, PartialEq)]
pub enum ArgSpec {
    /// A scalar.
    Scalar {
        /// Its type.
        ty: ElemType,
        /// Its value.
        value: Number,
    },
    /// A device buffer.
    Buffer {
        /// The name `@name` refers to, if given.
        name: Option<String>,
        /// Element type.
        ty: ElemType,
        /// Element count.
        len: Expr,
        /// Contents.
        fill: Fill,
    },
    /// A buffer named earlier.
    Ref(String),
    /// The stamp pointer.
    Stamps,
    /// The launch index (`i32`).
    Launch,
}

fn is_name(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_') && !s.as_bytes()[0].is_ascii_digit()
}

impl ArgSpec {
    /// Parses one argument (see the [module docs](self)).
    pub fn parse(text: &str) -> Result<ArgSpec, SpecError> {
        let bad = |what: String| SpecError::new(format!("argument {}: {what}", shown(text)));
        let t = text.trim();
        if t == "stamps" {
            return Ok(ArgSpec::Stamps);
        }
        if t == "launch" {
            return Ok(ArgSpec::Launch);
        }
        if let Some(name) = t.strip_prefix('@') {
            if !is_name(name) {
                return Err(bad("@ must be followed by a buffer's name".into()));
            }
            return Ok(ArgSpec::Ref(name.to_owned()));
        }
        let (name, body) = match t.split_once(':') {
            Some((n, b)) => {
                let n = n.trim();
                if !is_name(n) {
                    return Err(bad(format!("{} is not a name (letters, digits, '_')", shown(n))));
                }
                (Some(n.to_owned()), b.trim())
            }
            None => (None, t),
        };
        let type_end = body.find(|c: char| !(c.is_ascii_alphanumeric())).unwrap_or(body.len());
        let ty = ElemType::parse(&body[..type_end]).ok_or_else(|| {
            bad(format!(
                "{} is not a type (i8 u8 i16 u16 i32 u32 i64 u64 f16 bf16 f32 f64), stamps, launch or @name",
                shown(&body[..type_end])
            ))
        })?;
        let rest = body[type_end..].trim_start();
        if let Some(inner) = rest.strip_prefix('[') {
            let close = inner.find(']').ok_or_else(|| bad("a buffer needs its size in [ ]".into()))?;
            let len = Expr::parse(&inner[..close]).map_err(|e| bad(e.to_string()))?;
            let after = inner[close + 1..].trim();
            let fill = match after.strip_prefix('=') {
                None if after.is_empty() => Fill::Value(Number::Int(Expr::Num(0))),
                None => return Err(bad(format!("unexpected {} after the size", shown(after)))),
                Some(f) if f.trim() == "rand" => Fill::Rand,
                Some(f) => Fill::Value(Number::parse(f).map_err(|e| bad(e.to_string()))?),
            };
            return Ok(ArgSpec::Buffer { name, ty, len, fill });
        }
        if name.is_some() {
            return Err(bad("only buffers are named".into()));
        }
        let value = rest.strip_prefix('=').ok_or_else(|| bad("a scalar is TYPE=VALUE, a buffer TYPE[SIZE]".into()))?;
        Ok(ArgSpec::Scalar { ty, value: Number::parse(value).map_err(|e| bad(e.to_string()))? })
    }

    /// The axis names the argument uses.
    pub fn vars(&self) -> Vec<&str> {
        match self {
            ArgSpec::Scalar { value: Number::Int(e), .. } => e.vars(),
            ArgSpec::Buffer { len, fill, .. } => {
                let mut v = len.vars();
                if let Fill::Value(Number::Int(e)) = fill {
                    v.extend(e.vars());
                }
                v
            }
            _ => Vec::new(),
        }
    }
}

/// IEEE half bits of `f`, rounded to nearest even.
pub fn f32_to_f16_bits(f: f32) -> u16 {
    let x = f.to_bits();
    let sign = ((x >> 16) & 0x8000) as u16;
    let exp = ((x >> 23) & 0xff) as i32;
    let mant = x & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if mant != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = mant | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let rem = m & ((1u32 << shift) - 1);
        let mut r = m >> shift;
        if rem > half || (rem == half && r & 1 == 1) {
            r += 1;
        }
        return sign | r as u16;
    }
    let mut r = ((e as u32) << 10) | (mant >> 13);
    let rem = mant & 0x1fff;
    if rem > 0x1000 || (rem == 0x1000 && r & 1 == 1) {
        r += 1;
    }
    sign | r as u16
}

/// bfloat16 bits of `f`, rounded to nearest even.
pub fn f32_to_bf16_bits(f: f32) -> u16 {
    let x = f.to_bits();
    if f.is_nan() {
        return ((x >> 16) as u16) | 0x40;
    }
    let lsb = (x >> 16) & 1;
    (x.wrapping_add(0x7fff + lsb) >> 16) as u16
}

/// `len` elements of `ty` filled as `fill` says (at a point whose axis values `var` gives), as
/// bytes for a host-to-device copy. `seed` varies the pseudo-random contents between buffers.
pub fn fill_bytes(
    ty: ElemType,
    len: usize,
    fill: &Fill,
    var: &dyn Fn(&str) -> Option<i64>,
    seed: u64,
) -> Result<Vec<u8>, SpecError> {
    let size = ty.size();
    let bytes = len.checked_mul(size).ok_or_else(|| SpecError::new("a buffer too large"))?;
    let mut out = Vec::new();
    out.try_reserve_exact(bytes).map_err(|_| SpecError::new("a buffer too large for host memory"))?;
    match fill {
        Fill::Value(n) => {
            let bits = ty.encode(n.eval(var)?)?.to_le_bytes();
            for _ in 0..len {
                out.extend_from_slice(&bits[..size]);
            }
        }
        Fill::Rand => {
            // xorshift64*: cheap, deterministic, good enough to keep data from being all one value.
            let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            for _ in 0..len {
                state ^= state >> 12;
                state ^= state << 25;
                state ^= state >> 27;
                let r = state.wrapping_mul(0x2545_F491_4F6C_DD1D);
                let bits =
                    if ty.is_float() { ty.encode(Value::Float((r >> 11) as f64 / (1u64 << 53) as f64))? } else { r };
                out.extend_from_slice(&bits.to_le_bytes()[..size]);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_forms() {
        assert_eq!(ArgSpec::parse("stamps").unwrap(), ArgSpec::Stamps);
        assert_eq!(ArgSpec::parse(" launch ").unwrap(), ArgSpec::Launch);
        assert_eq!(ArgSpec::parse("@x").unwrap(), ArgSpec::Ref("x".into()));
        assert_eq!(
            ArgSpec::parse("i32=n").unwrap(),
            ArgSpec::Scalar { ty: ElemType::I32, value: Number::Int(Expr::Var("n".into())) }
        );
        assert_eq!(
            ArgSpec::parse("f32=0.5").unwrap(),
            ArgSpec::Scalar { ty: ElemType::F32, value: Number::Float(0.5) }
        );
        assert_eq!(
            ArgSpec::parse("f64=1e-3").unwrap(),
            ArgSpec::Scalar { ty: ElemType::F64, value: Number::Float(1e-3) }
        );
        assert_eq!(
            ArgSpec::parse("u64=0x10").unwrap(),
            ArgSpec::Scalar { ty: ElemType::U64, value: Number::Int(Expr::Num(16)) }
        );
        let b = ArgSpec::parse("x:f32[n/2]=rand").unwrap();
        assert!(
            matches!(b, ArgSpec::Buffer { name: Some(ref n), ty: ElemType::F32, fill: Fill::Rand, .. } if n == "x")
        );
        assert_eq!(b.vars(), vec!["n"]);
        assert!(matches!(
            ArgSpec::parse("u8[4K]").unwrap(),
            ArgSpec::Buffer { name: None, ty: ElemType::U8, fill: Fill::Value(Number::Int(Expr::Num(0))), .. }
        ));
    }

    #[test]
    fn bad_arguments_are_errors() {
        for bad in [
            "",
            "f31=1",
            "f32",
            "f32[",
            "f32[n",
            "f32[n]x",
            "f32[]",
            "x:i32=1",
            "1x:f32[4]",
            "@",
            "@1x",
            "i32=",
            "i32=1.5.5",
            "f32[n]=",
            "stamp",
            "i32:=1",
        ] {
            assert!(ArgSpec::parse(bad).is_err(), "{bad:?} should be an error");
        }
    }

    #[test]
    fn values_are_encoded_or_refused() {
        assert_eq!(ElemType::U8.encode(Value::Int(255)).unwrap(), 255);
        assert!(ElemType::U8.encode(Value::Int(256)).is_err());
        assert!(ElemType::U32.encode(Value::Int(-1)).is_err());
        assert!(ElemType::I32.encode(Value::Float(1.5)).is_err());
        assert_eq!(ElemType::I32.encode(Value::Float(3.0)).unwrap(), 3);
        assert_eq!(ElemType::I16.encode(Value::Int(-1)).unwrap(), 0xffff);
        assert_eq!(ElemType::I64.encode(Value::Int(-1)).unwrap(), u64::MAX);
        assert_eq!(ElemType::F32.encode(Value::Int(2)).unwrap(), u64::from(2.0f32.to_bits()));
        assert_eq!(ElemType::F64.encode(Value::Float(0.5)).unwrap(), 0.5f64.to_bits());
        assert!(ElemType::U64.encode(Value::Float(f64::NAN)).is_err());
    }

    #[test]
    fn half_and_bfloat_round_to_nearest_even() {
        assert_eq!(f32_to_f16_bits(1.0), 0x3c00);
        assert_eq!(f32_to_f16_bits(-2.0), 0xc000);
        assert_eq!(f32_to_f16_bits(65504.0), 0x7bff);
        assert_eq!(f32_to_f16_bits(65520.0), 0x7c00, "rounds up to infinity");
        assert_eq!(f32_to_f16_bits(f32::INFINITY), 0x7c00);
        assert_eq!(f32_to_f16_bits(f32::NAN) & 0x7e00, 0x7e00);
        assert_eq!(f32_to_f16_bits(5.960_464_5e-8), 0x0001, "smallest subnormal");
        assert_eq!(f32_to_f16_bits(2.980_232_2e-8), 0x0000, "half of it ties to even zero");
        assert_eq!(f32_to_f16_bits(1.0 + 1.0 / 2048.0), 0x3c00, "tie to even");
        assert_eq!(f32_to_f16_bits(1.0 + 3.0 / 2048.0), 0x3c02, "tie to even, upward");
        assert_eq!(f32_to_bf16_bits(1.0), 0x3f80);
        assert_eq!(f32_to_bf16_bits(f32::from_bits(0x3f80_8000)), 0x3f80, "tie to even");
        assert_eq!(f32_to_bf16_bits(f32::from_bits(0x3f81_8000)), 0x3f82, "tie to even, upward");
        assert_eq!(f32_to_bf16_bits(f32::NAN) & 0x7fc0, 0x7fc0);
    }

    #[test]
    fn fills() {
        let none = |_: &str| None;
        assert_eq!(
            fill_bytes(ElemType::U16, 3, &Fill::Value(Number::Int(Expr::Num(0x102))), &none, 0).unwrap(),
            [2, 1, 2, 1, 2, 1]
        );
        let r = fill_bytes(ElemType::F32, 1000, &Fill::Rand, &none, 7).unwrap();
        let floats: Vec<f32> = r.chunks(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        assert!(floats.iter().all(|f| (0.0..1.0).contains(f)));
        assert!(floats.iter().any(|&f| f != floats[0]), "not all one value");
        assert_eq!(r, fill_bytes(ElemType::F32, 1000, &Fill::Rand, &none, 7).unwrap(), "the same every run");
        assert_ne!(r, fill_bytes(ElemType::F32, 1000, &Fill::Rand, &none, 8).unwrap());
        assert!(fill_bytes(ElemType::U8, 1, &Fill::Value(Number::Int(Expr::Num(300))), &none, 0).is_err());
    }
}
