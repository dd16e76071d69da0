//! The dynamic check's plan and findings, without the GPU: which perturbation each trial gets (a
//! pure function of the seed and the trial's number, so a race seen once can be run again), how
//! the buffers after a trial are compared with the runs without PDL, and what is reported.
//!
//! A trial restores every buffer to its first contents, launches the delayed copy of A
//! ([`super::delay`]) without PDL, then B with PDL, on the engine's stream, with a load kernel
//! running on another stream when the plan says so; then it reads every buffer back. The runs
//! without PDL (A then B, plain launches, three of them) give the reference; a byte that differs
//! between them is not compared (the kernels are not deterministic there: float atomics).

use crate::spec::args::ElemType;

/// How one trial perturbs the pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Perturbation {
    /// Each thread of a delayed block of A spins this long before its first global access.
    pub delay_ns: u64,
    /// A's blocks from this linear index on are delayed.
    pub delay_from_block: u32,
    /// A triggers its dependents first thing (where the module allows).
    pub early_trigger: bool,
    /// Blocks of 256 threads of a spin kernel on another stream, launched just before A (0: none).
    pub load_blocks: u32,
    /// How long the load kernel spins.
    pub load_ns: u64,
}

impl Perturbation {
    /// In words: `delay 5 us in blocks 16.., early trigger, load 132 blocks for 25 us`.
    pub fn describe(&self) -> String {
        let blocks = if self.delay_from_block == 0 {
            "all blocks".to_owned()
        } else {
            format!("blocks {}..", self.delay_from_block)
        };
        let delay =
            if self.delay_ns == 0 { "no delay".to_owned() } else { format!("delay {} ns in {blocks}", self.delay_ns) };
        let trigger = if self.early_trigger { "early trigger" } else { "A's own trigger" };
        let load = if self.load_blocks == 0 {
            "no load".to_owned()
        } else {
            format!("load {} blocks for {} ns", self.load_blocks, self.load_ns)
        };
        format!("{delay}, {trigger}, {load}")
    }
}

/// SplitMix64: the trial's random words.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The delays a trial draws from, in nanoseconds, up to the maximum.
const DELAYS_NS: [u64; 8] = [0, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000];

/// The perturbation of trial `trial` under `seed`, for an A of `a_blocks` blocks on a device of
/// `sms` SMs, delays at most `max_delay_ns`. Three trials in four trigger early; one in three
/// runs a load kernel over one or two blocks a SM.
pub fn plan(seed: u64, trial: u64, a_blocks: u32, sms: u32, max_delay_ns: u64) -> Perturbation {
    let mut s = seed ^ trial.wrapping_mul(0xD1B5_4A32_D192_ED03);
    let mut draw = |n: u64| if n == 0 { 0 } else { splitmix(&mut s) % n };
    let allowed: Vec<u64> = DELAYS_NS.iter().copied().filter(|&d| d <= max_delay_ns).collect();
    let delay_ns = allowed.get(draw(allowed.len() as u64) as usize).copied().unwrap_or(0);
    let delay_from_block = match draw(3) {
        0 => 0,
        1 => a_blocks / 2,
        _ => a_blocks.saturating_sub(1),
    };
    let early_trigger = draw(4) != 0;
    let load_blocks = match draw(3) {
        0 => sms.max(1),
        1 => 2 * sms.max(1),
        _ => 0,
    };
    let load_ns = if load_blocks == 0 { 0 } else { delay_ns + 20_000 };
    Perturbation { delay_ns, delay_from_block, early_trigger, load_blocks, load_ns }
}

/// One byte a buffer that differed between the runs without PDL: not compared.
pub fn unstable(references: &[Vec<u8>]) -> Vec<bool> {
    let Some((first, rest)) = references.split_first() else { return Vec::new() };
    (0..first.len()).map(|i| rest.iter().any(|r| r.get(i) != first.get(i))).collect()
}

/// Where two buffers of `elem`-byte elements differ, the unstable bytes skipped: how many
/// elements differ, and the first (its index, reference and trial bytes).
pub fn difference(reference: &[u8], got: &[u8], skip: &[bool], elem: usize) -> Option<Difference> {
    let elem = elem.max(1);
    let mut count = 0u64;
    let mut first = None;
    for (e, (r, g)) in reference.chunks(elem).zip(got.chunks(elem)).enumerate() {
        let base = e * elem;
        let differs =
            r.iter().zip(g).enumerate().any(|(i, (a, b))| a != b && !skip.get(base + i).copied().unwrap_or(false));
        if differs {
            count += 1;
            if first.is_none() {
                first = Some((e as u64, r.to_vec(), g.to_vec()));
            }
        }
    }
    if reference.len() != got.len() {
        count += 1;
    }
    first.map(|(index, expected, seen)| Difference { elements: count, index, expected, seen })
}

/// How a buffer after a trial differs from the reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// Elements that differ.
    pub elements: u64,
    /// The first that does.
    pub index: u64,
    /// Its bytes without PDL.
    pub expected: Vec<u8>,
    /// Its bytes in the trial.
    pub seen: Vec<u8>,
}

/// An element's bytes as a value of `ty` (hex for the half types).
pub fn show(ty: ElemType, bytes: &[u8]) -> String {
    let word = |n: usize| {
        let mut w = [0u8; 8];
        for (d, s) in w.iter_mut().zip(bytes.iter().take(n)) {
            *d = *s;
        }
        u64::from_le_bytes(w)
    };
    match ty {
        ElemType::F32 => format!("{}", f32::from_bits(word(4) as u32)),
        ElemType::F64 => format!("{}", f64::from_bits(word(8))),
        ElemType::I8 => format!("{}", word(1) as u8 as i8),
        ElemType::I16 => format!("{}", word(2) as u16 as i16),
        ElemType::I32 => format!("{}", word(4) as u32 as i32),
        ElemType::I64 => format!("{}", word(8) as i64),
        ElemType::U8 | ElemType::U16 | ElemType::U32 | ElemType::U64 => format!("{}", word(ty.size())),
        ElemType::F16 | ElemType::Bf16 => format!("0x{:04x}", word(2)),
    }
}

/// A trial whose buffers differed from the runs without PDL.
#[derive(Debug, Clone, PartialEq)]
pub struct ObservedRace {
    /// The trial's number (with the seed, it gives the perturbation again).
    pub trial: u64,
    /// The sweep point (axis values as shown).
    pub point: Vec<(String, String)>,
    /// What the trial did.
    pub perturbation: Perturbation,
    /// A's and B's grids.
    pub grids: [(u32, u32, u32); 2],
    /// The buffer that differed first, as the arguments name it (`B argument 0 (@b)`).
    pub buffer: String,
    /// How it differed.
    pub elements: u64,
    /// The first element that differed.
    pub index: u64,
    /// Its value without PDL.
    pub expected: String,
    /// Its value in the trial.
    pub seen: String,
}

/// What the dynamic check did and saw.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DynamicReport {
    /// The edge: A's and B's names (the forms launched).
    pub edge: (String, String),
    /// Trials a point.
    pub trials: u64,
    /// The seed.
    pub seed: u64,
    /// The points of the sweep run.
    pub points: usize,
    /// Trials in which a buffer differed.
    pub trials_with_race: u64,
    /// The first races seen (at most [`MAX_RACES_SHOWN`]).
    pub races: Vec<ObservedRace>,
    /// Bytes not compared (unstable without PDL).
    pub unstable_bytes: u64,
    /// What the reader should know (no delay possible, no early trigger, ...).
    pub notes: Vec<String>,
}

/// The most races a report lists.
pub const MAX_RACES_SHOWN: usize = 10;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_are_a_function_of_seed_and_trial() {
        let a: Vec<Perturbation> = (0..200).map(|t| plan(7, t, 16, 132, 100_000)).collect();
        let b: Vec<Perturbation> = (0..200).map(|t| plan(7, t, 16, 132, 100_000)).collect();
        assert_eq!(a, b);
        assert_ne!(a, (0..200).map(|t| plan(8, t, 16, 132, 100_000)).collect::<Vec<_>>());
        // Every choice occurs in 200 trials.
        for d in DELAYS_NS {
            assert!(a.iter().any(|p| p.delay_ns == d), "delay {d}");
        }
        for from in [0, 8, 15] {
            assert!(a.iter().any(|p| p.delay_from_block == from), "from {from}");
        }
        assert!(a.iter().any(|p| p.early_trigger) && a.iter().any(|p| !p.early_trigger));
        for blocks in [0, 132, 264] {
            assert!(a.iter().any(|p| p.load_blocks == blocks), "load {blocks}");
        }
        assert!((0..200).all(|t| plan(1, t, 1, 1, 2_000).delay_ns <= 2_000));
    }

    #[test]
    fn compares_skipping_unstable_bytes() {
        let r1 = vec![1u8, 2, 3, 4, 5, 6, 7, 8];
        let mut r2 = r1.clone();
        r2[1] = 9;
        let skip = unstable(&[r1.clone(), r2]);
        assert_eq!(skip, vec![false, true, false, false, false, false, false, false]);
        let mut got = r1.clone();
        got[1] = 0;
        assert_eq!(difference(&r1, &got, &skip, 4), None, "only an unstable byte differs");
        got[6] = 0;
        let d = difference(&r1, &got, &skip, 4).unwrap();
        assert_eq!((d.elements, d.index, d.expected, d.seen), (1, 1, vec![5, 6, 7, 8], vec![5, 6, 0, 8]));
        assert_eq!(show(ElemType::F32, &1.5f32.to_le_bytes()), "1.5");
        assert_eq!(show(ElemType::I32, &(-3i32).to_le_bytes()), "-3");
    }
}
