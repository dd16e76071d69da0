//! What the command line says to measure: integer expressions of the axes ([`expr`]), the axes
//! themselves ([`axes`]), kernel arguments ([`args`]), the buffers a point allocates and whether
//! they fit in a device ([`buffers`]), and the launch shape and arguments of one kernel
//! ([`KernelSpec`]). Parsing is total: any text gives a value or a [`SpecError`] saying what is
//! wrong, never a panic nor a stack overflow (nesting is bounded: [`expr::MAX_DEPTH`]).

pub mod args;
pub mod axes;
pub mod buffers;
pub mod expr;

use args::{ArgSpec, Fill, Number};
use expr::Expr;

/// The most evaluations the check of a sweep may make: its points times its kernels' terms
/// ([`KernelSpec::terms`]), 100,000 points of 1,000 terms. The command checks every expression at
/// every point before it measures anything; with no bound, a few thousand `--arg`s over 100,000
/// points (a few hundred kilobytes of command line) kept it busy for minutes. A debug build checks
/// 4 million in a quarter of a second (about 50 ns a term): this many take seconds there, and
/// less in a release build.
pub const MAX_SWEEP_TERMS: usize = 100_000_000;

/// Something wrong in what the command line says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError(String);

impl SpecError {
    /// An error saying `what`.
    pub fn new(what: impl Into<String>) -> SpecError {
        SpecError(what.into())
    }
}

impl core::fmt::Display for SpecError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SpecError {}

/// `text` quoted for a message, shortened when long (an argument may be 100 KB): its first 48
/// characters, then how long it is.
pub fn shown(text: &str) -> String {
    const KEEP: usize = 48;
    match text.char_indices().nth(KEEP + 16) {
        None => format!("{text:?}"),
        Some(_) => {
            let end = text.char_indices().nth(KEEP).map_or(text.len(), |(i, _)| i);
            format!("{:?}... ({} bytes)", &text[..end], text.len())
        }
    }
}

/// Grid or block dimensions as expressions: `X[,Y[,Z]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dims(pub [Expr; 3]);

impl Dims {
    /// `x, 1, 1`.
    pub fn x(x: i64) -> Dims {
        Dims([Expr::Num(x), Expr::Num(1), Expr::Num(1)])
    }

    /// Parses `X[,Y[,Z]]`.
    pub fn parse(text: &str) -> Result<Dims, SpecError> {
        let parts: Vec<&str> = text.split(',').collect();
        if parts.is_empty() || parts.len() > 3 {
            return Err(SpecError::new(format!("{}: dimensions are X[,Y[,Z]]", shown(text))));
        }
        let mut d = [Expr::Num(1), Expr::Num(1), Expr::Num(1)];
        for (slot, p) in d.iter_mut().zip(&parts) {
            *slot = Expr::parse(p.trim())?;
        }
        Ok(Dims(d))
    }

    /// The dimensions at a point; an error unless each is 1..=u32::MAX.
    pub fn eval(&self, var: &dyn Fn(&str) -> Option<i64>) -> Result<(u32, u32, u32), SpecError> {
        let one = |e: &Expr| -> Result<u32, SpecError> {
            let v = e.eval(var)?;
            u32::try_from(v)
                .ok()
                .filter(|&v| v > 0)
                .ok_or_else(|| SpecError::new(format!("dimension {v} is not 1..=2^32-1")))
        };
        Ok((one(&self.0[0])?, one(&self.0[1])?, one(&self.0[2])?))
    }

    fn vars(&self) -> Vec<&str> {
        self.0.iter().flat_map(Expr::vars).collect()
    }
}

/// One kernel as the command line names it: its name, its PDL form, its launch shape, its
/// arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelSpec {
    /// The kernel's name in the module (`extern "C"` or mangled).
    pub name: String,
    /// The name of its PDL form (ordo's two forms: this one waits, `name` does not).
    pub pdl_form: Option<String>,
    /// The user says the kernel itself contains `griddepcontrol.wait` (found by reading PTX and
    /// CUDA C; a cubin cannot be read so).
    pub pdl: bool,
    /// Grid dimensions.
    pub grid: Dims,
    /// Block dimensions.
    pub block: Dims,
    /// Dynamic shared memory, bytes.
    pub smem: Expr,
    /// Arguments in parameter order.
    pub args: Vec<ArgSpec>,
}

impl KernelSpec {
    /// A kernel named `name` on one block of one thread with no arguments.
    pub fn new(name: impl Into<String>) -> KernelSpec {
        KernelSpec {
            name: name.into(),
            pdl_form: None,
            pdl: false,
            grid: Dims::x(1),
            block: Dims::x(1),
            smem: Expr::Num(0),
            args: Vec::new(),
        }
    }

    /// Every axis name it uses.
    pub fn vars(&self) -> Vec<&str> {
        let mut v = self.grid.vars();
        v.extend(self.block.vars());
        v.extend(self.smem.vars());
        for a in &self.args {
            v.extend(a.vars());
        }
        v
    }

    /// The buffer names it defines, in order.
    pub fn buffer_names(&self) -> Vec<&str> {
        self.args
            .iter()
            .filter_map(|a| match a {
                ArgSpec::Buffer { name: Some(n), .. } => Some(n.as_str()),
                _ => None,
            })
            .collect()
    }

    /// Checks the kernel against the axes and the buffer names defined before it (`known`): every
    /// name used is an axis, every `@name` defined, no buffer name twice, `stamps` at most once.
    pub fn check(&self, axes: &[&str], known: &[&str]) -> Result<(), SpecError> {
        let k = &self.name;
        if let Some(v) = self.vars().into_iter().find(|v| !axes.contains(v)) {
            return Err(SpecError::new(format!("kernel {k}: {v:?} is not an axis (give it with -a {v}=...)")));
        }
        let mut names: Vec<&str> = known.to_vec();
        for a in &self.args {
            match a {
                ArgSpec::Buffer { name: Some(n), .. } => {
                    if names.contains(&n.as_str()) {
                        return Err(SpecError::new(format!("kernel {k}: buffer name {n:?} given twice")));
                    }
                    names.push(n);
                }
                ArgSpec::Ref(n) if !names.contains(&n.as_str()) => {
                    return Err(SpecError::new(format!("kernel {k}: @{n} names no buffer defined before it")));
                }
                _ => {}
            }
        }
        if self.args.iter().filter(|a| **a == ArgSpec::Stamps).count() > 1 {
            return Err(SpecError::new(format!("kernel {k}: stamps given twice")));
        }
        Ok(())
    }

    /// Computes, at the point whose axis values `var` gives, everything the kernel's launch takes:
    /// its shape, its shared memory, its scalars, its buffers' sizes and fill values. The first
    /// error names the kernel and what is wrong, so that a sweep is checked whole before anything
    /// runs (a point that overflows is found before the first is measured).
    pub fn evaluate_at(&self, var: &dyn Fn(&str) -> Option<i64>) -> Result<(), SpecError> {
        let k = &self.name;
        let err = |what: &str, e: SpecError| SpecError::new(format!("kernel {k}: {what}: {e}"));
        self.grid.eval(var).map_err(|e| err("grid", e))?;
        self.block.eval(var).map_err(|e| err("block", e))?;
        let smem = self.smem.eval(var).map_err(|e| err("shared memory", e))?;
        if u32::try_from(smem).is_err() {
            return Err(err("shared memory", SpecError::new(format!("{smem} bytes is not 0..=2^32-1"))));
        }
        for (i, a) in self.args.iter().enumerate() {
            let value = match a {
                ArgSpec::Scalar { ty, value } => Some((ty, value)),
                ArgSpec::Buffer { ty, fill: Fill::Value(value), .. } => Some((ty, value)),
                _ => None,
            };
            if let Some((ty, value)) = value {
                // The message is written only for an error: this runs at every point of a sweep.
                let at = |e| err(&format!("argument {i}"), e);
                ty.encode(value.eval(var).map_err(at)?).map_err(at)?;
            }
        }
        buffers::check_at(core::slice::from_ref(self), var)
    }

    /// How many terms (numbers, names, signs, operators) the expressions of its launch hold: what
    /// [`evaluate_at`](Self::evaluate_at) evaluates at each point.
    pub fn terms(&self) -> usize {
        let number = |n: &Number| match n {
            Number::Int(e) => e.terms(),
            Number::Float(_) => 1,
        };
        let dims = |d: &Dims| d.0.iter().map(Expr::terms).sum::<usize>();
        let args: usize = self
            .args
            .iter()
            .map(|a| match a {
                ArgSpec::Scalar { value, .. } => number(value),
                ArgSpec::Buffer { len, fill: Fill::Value(value), .. } => len.terms() + number(value),
                ArgSpec::Buffer { len, .. } => len.terms(),
                // Nothing evaluated, but each argument is looked at.
                _ => 1,
            })
            .sum();
        dims(&self.grid) + dims(&self.block) + self.smem.terms() + args
    }

    /// Whether the kernel writes its own stamps.
    pub fn self_stamped(&self) -> bool {
        self.args.contains(&ArgSpec::Stamps)
    }
}
