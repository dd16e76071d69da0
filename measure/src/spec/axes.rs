//! Parameter axes from the command line, swept as a cartesian product (the last axis varies
//! fastest). nvbench's forms, plus `2^` for powers of two:
//!
//! | form | values |
//! | --- | --- |
//! | `n=4096` | 4096 |
//! | `n=[4096,1M,16M]` | 4096, 1048576, 16777216 |
//! | `n=[1:10:3]` | 1, 4, 7, 10 (start, stop, step; the stop is included) |
//! | `n=2^[12:24:4]`, `n[pow2]=[12:24:4]` | 4096, 65536, 1048576, 16777216 |
//! | `n=2^20`, `n[pow2]=20` | 1048576 |
//!
//! Values are integer expressions without names ([`super::expr`]): `1M`, `3*1K`.

use super::expr::Expr;
use super::{shown, SpecError};

/// One axis: a name and its values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Axis {
    /// The name expressions use.
    pub name: String,
    /// Its values, in order.
    pub values: Vec<i64>,
    /// Whether the values were given as powers of two (shown as `2^e`).
    pub pow2: bool,
}

/// The most points a sweep may have.
pub const MAX_POINTS: usize = 100_000;

/// The most axes a sweep may have. Each point of the sweep holds every axis's name and value
/// ([`points`]), and each name an expression uses is looked up among them: 10,000 axes of one
/// value beside one of 100,000 made a billion names to copy.
pub const MAX_AXES: usize = 16;

/// The longest an axis's name may be, in bytes (each of up to [`MAX_POINTS`] points holds a copy).
pub const MAX_NAME_LEN: usize = 64;

impl Axis {
    /// Parses `NAME=VALUES` (see the [module docs](self)).
    pub fn parse(text: &str) -> Result<Axis, SpecError> {
        let bad = |what: &str| SpecError::new(format!("axis {}: {what}", shown(text)));
        let (lhs, rhs) = text.split_once('=').ok_or_else(|| bad("expected NAME=VALUES"))?;
        let lhs = lhs.trim();
        let (name, mut pow2) = match lhs.strip_suffix("[pow2]") {
            Some(n) => (n.trim(), true),
            None => (lhs, false),
        };
        if name.is_empty()
            || !name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
            || name.as_bytes()[0].is_ascii_digit()
        {
            return Err(bad("an axis name is letters, digits and '_', not starting with a digit"));
        }
        if name.len() > MAX_NAME_LEN {
            return Err(bad(&format!("an axis name is at most {MAX_NAME_LEN} bytes")));
        }
        let mut rhs = rhs.trim();
        if let Some(rest) = rhs.strip_prefix("2^") {
            if pow2 {
                return Err(bad("[pow2] and 2^ together"));
            }
            pow2 = true;
            rhs = rest.trim();
        }
        let raw: Vec<i64> = match rhs.strip_prefix('[') {
            Some(inner) => {
                let inner = inner.strip_suffix(']').ok_or_else(|| bad("a list needs a closing ']'"))?;
                if inner.contains(':') {
                    range(inner).map_err(|e| bad(&e.to_string()))?
                } else {
                    inner
                        .split(',')
                        .map(|v| Expr::parse(v.trim()).and_then(|e| e.constant()))
                        .collect::<Result<_, _>>()
                        .map_err(|e| bad(&e.to_string()))?
                }
            }
            None => vec![Expr::parse(rhs).and_then(|e| e.constant()).map_err(|e| bad(&e.to_string()))?],
        };
        if raw.is_empty() {
            return Err(bad("no values"));
        }
        let values = if pow2 {
            raw.iter()
                .map(|&e| {
                    u32::try_from(e)
                        .ok()
                        .filter(|&e| e < 63)
                        .map(|e| 1i64 << e)
                        .ok_or_else(|| bad("exponents are 0..=62"))
                })
                .collect::<Result<_, _>>()?
        } else {
            raw
        };
        Ok(Axis { name: name.to_owned(), values, pow2 })
    }

    /// How a value is shown: `2^e` for a power-of-two axis, else the number.
    pub fn show(&self, value: i64) -> String {
        if self.pow2 && value > 0 && value.count_ones() == 1 {
            format!("2^{}", value.trailing_zeros())
        } else {
            value.to_string()
        }
    }
}

/// `start:stop[:step]`, the stop included.
fn range(inner: &str) -> Result<Vec<i64>, SpecError> {
    let parts: Vec<&str> = inner.split(':').collect();
    if parts.len() < 2 || parts.len() > 3 {
        return Err(SpecError::new("a range is [start:stop] or [start:stop:step]"));
    }
    let num = |s: &str| Expr::parse(s.trim()).and_then(|e| e.constant());
    let (start, stop) = (num(parts[0])?, num(parts[1])?);
    let step = if parts.len() == 3 { num(parts[2])? } else { 1 };
    if step <= 0 {
        return Err(SpecError::new("a range's step must be positive"));
    }
    if stop < start {
        return Err(SpecError::new("a range's stop is below its start"));
    }
    let span = stop.checked_sub(start).ok_or_else(|| SpecError::new("a range too wide"))?;
    let count = span / step + 1;
    if count > MAX_POINTS as i64 {
        return Err(SpecError::new(format!("a range of more than {MAX_POINTS} values")));
    }
    Ok((0..count).map(|i| start + i * step).collect())
}

/// The points of the cartesian product of `axes` (the last varies fastest), each a list of
/// (name, value); one empty point when there is no axis. An error for two axes of one name, more
/// than [`MAX_AXES`] axes or more than [`MAX_POINTS`] points.
pub fn points(axes: &[Axis]) -> Result<Vec<Vec<(String, i64)>>, SpecError> {
    if axes.len() > MAX_AXES {
        return Err(SpecError::new(format!("{} axes: a sweep has at most {MAX_AXES}", axes.len())));
    }
    for (i, a) in axes.iter().enumerate() {
        if axes[..i].iter().any(|b| b.name == a.name) {
            return Err(SpecError::new(format!("axis {:?} given twice", a.name)));
        }
    }
    let mut total: usize = 1;
    for a in axes {
        total = total
            .checked_mul(a.values.len())
            .filter(|&t| t <= MAX_POINTS)
            .ok_or_else(|| SpecError::new(format!("the axes make more than {MAX_POINTS} points")))?;
    }
    let mut out = Vec::with_capacity(total);
    for mut i in 0..total {
        let mut point = vec![(String::new(), 0i64); axes.len()];
        for (slot, a) in point.iter_mut().zip(axes).rev() {
            *slot = (a.name.clone(), a.values[i % a.values.len()]);
            i /= a.values.len();
        }
        out.push(point);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_forms() {
        assert_eq!(Axis::parse("n=4096").unwrap().values, vec![4096]);
        assert_eq!(Axis::parse("n=[4096,1M,16M]").unwrap().values, vec![4096, 1 << 20, 16 << 20]);
        assert_eq!(Axis::parse("n=[1:10:3]").unwrap().values, vec![1, 4, 7, 10]);
        assert_eq!(Axis::parse(" n = [ 2 : 4 ] ").unwrap().values, vec![2, 3, 4]);
        let p = Axis::parse("n=2^[12:24:4]").unwrap();
        assert_eq!(p.values, vec![1 << 12, 1 << 16, 1 << 20, 1 << 24]);
        assert_eq!(p.show(1 << 16), "2^16");
        assert_eq!(Axis::parse("n[pow2]=[12:24:4]").unwrap(), p);
        assert_eq!(Axis::parse("n=2^20").unwrap().values, vec![1 << 20]);
        assert_eq!(Axis::parse("n=[3*1K, 2^4]").unwrap().values, vec![3072, 16]);
    }

    #[test]
    fn bad_axes_are_errors() {
        for bad in [
            "n",
            "=4",
            "1n=4",
            "n-x=4",
            "n=",
            "n=[",
            "n=[]",
            "n=[1:]",
            "n=[5:1]",
            "n=[1:5:0]",
            "n=[1:5:-1]",
            "n=2^[70]",
            "n=2^-1",
            "n[pow2]=2^4",
            "n=[1:2:3:4]",
            "n=[0:10000000]",
            "n=m",
            "n=[1,,2]",
        ] {
            assert!(Axis::parse(bad).is_err(), "{bad:?} should be an error");
        }
    }

    #[test]
    fn the_product_varies_the_last_axis_fastest() {
        let a = [Axis::parse("a=[1,2]").unwrap(), Axis::parse("b=[10,20,30]").unwrap()];
        let p = points(&a).unwrap();
        let flat: Vec<(i64, i64)> = p.iter().map(|pt| (pt[0].1, pt[1].1)).collect();
        assert_eq!(flat, vec![(1, 10), (1, 20), (1, 30), (2, 10), (2, 20), (2, 30)]);
        assert_eq!(points(&[]).unwrap(), vec![Vec::<(String, i64)>::new()]);
        assert!(points(&[a[0].clone(), a[0].clone()]).is_err());
        let big = Axis::parse("x=[1:1000]").unwrap();
        assert!(points(&[big.clone(), big.clone()]).is_err());
    }

    /// Names and axes are bounded: every point holds a copy of each axis's name.
    #[test]
    fn axis_names_and_axes_are_bounded() {
        let longest = "n".repeat(MAX_NAME_LEN);
        assert_eq!(Axis::parse(&format!("{longest}=4")).unwrap().name, longest);
        let e = Axis::parse(&format!("{longest}x=[1:100000]")).unwrap_err().to_string();
        assert!(e.contains(&format!("an axis name is at most {MAX_NAME_LEN} bytes")) && e.len() < 200, "{e}");
        let axes: Vec<Axis> = (0..=MAX_AXES).map(|i| Axis::parse(&format!("a{i}=1")).unwrap()).collect();
        assert_eq!(points(&axes[..MAX_AXES]).unwrap().len(), 1);
        let e = points(&axes).unwrap_err().to_string();
        assert_eq!(e, format!("{} axes: a sweep has at most {MAX_AXES}", MAX_AXES + 1));
    }
}
