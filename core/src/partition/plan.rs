//! The arithmetic of partitions made from one split: which groups (and whether the SMs left over)
//! each partition takes. Every group goes to at most one partition, so no two partitions share an
//! SM. Checked before any green context is made.

use crate::error::{Error, Result};
use alloc::vec::Vec;
use core::ops::Range;

/// Where the SMs that a split leaves over (fewer than one group) go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Remainder {
    /// Nowhere: no partition runs on them.
    Unused,
    /// To the last partition, beside its groups (it may then take no group at all).
    ToLast,
    /// To a partition of their own, after the others. The split must have left some.
    Own,
}

/// One partition of a plan: consecutive groups of the split, and whether it takes the SMs left
/// over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Part {
    pub(crate) groups: Range<usize>,
    pub(crate) remainder: bool,
}

const CALL: &str = "SmSplit::into_partitions";

/// The partitions of a split of `group_count` groups (and some SMs left over when
/// `has_remainder`): partition `i` takes `groups[i]` consecutive groups, then `remainder` says
/// where the rest goes. A partition must get some SMs; the groups asked for must exist.
pub(crate) fn plan(
    group_count: usize,
    has_remainder: bool,
    groups: &[usize],
    remainder: Remainder,
) -> Result<Vec<Part>> {
    if groups.is_empty() && remainder != Remainder::Own {
        return Err(Error::invalid(CALL, "no partition asked for"));
    }
    if remainder == Remainder::Own && !has_remainder {
        return Err(Error::invalid(CALL, "the split left no SMs over for a partition of their own"));
    }
    let mut parts = Vec::with_capacity(groups.len() + 1);
    let mut next = 0usize;
    for (i, &n) in groups.iter().enumerate() {
        let end = next.checked_add(n).ok_or(Error::invalid(CALL, "group counts overflow"))?;
        if end > group_count {
            return Err(Error::invalid(CALL, "more groups asked for than the split made (SmSplit::group_count)"));
        }
        let last = i + 1 == groups.len();
        let takes_rest = last && remainder == Remainder::ToLast && has_remainder;
        if n == 0 && !takes_rest {
            return Err(Error::invalid(
                CALL,
                "a partition of no group (only the last may, when it takes the SMs left over)",
            ));
        }
        parts.push(Part { groups: next..end, remainder: takes_rest });
        next = end;
    }
    if remainder == Remainder::Own {
        parts.push(Part { groups: next..next, remainder: true });
    }
    Ok(parts)
}

/// `min_sms` is at least one and at most the device's SMs.
pub(crate) fn check_min_sms(min_sms: u32, device_sms: u32) -> Result<()> {
    if min_sms == 0 {
        return Err(Error::invalid("SmSplit::new", "zero SMs a group"));
    }
    if min_sms > device_sms {
        return Err(Error::invalid("SmSplit::new", "more SMs a group than the device has"));
    }
    Ok(())
}

/// The group counts of "one group, and the rest": `[1, group_count - 1]`, the rest taking the SMs
/// left over too; an error when nothing is left for the rest.
pub(crate) fn one_and_rest(group_count: usize, has_remainder: bool) -> Result<[usize; 2]> {
    let rest = group_count.checked_sub(1).ok_or(Error::invalid("SmSplit::one_and_rest", "the split made no group"))?;
    if rest == 0 && !has_remainder {
        return Err(Error::invalid("SmSplit::one_and_rest", "one group takes every SM: nothing is left for the rest"));
    }
    Ok([1, rest])
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    fn ranges(parts: &[Part]) -> Vec<(Range<usize>, bool)> {
        parts.iter().map(|p| (p.groups.clone(), p.remainder)).collect()
    }

    /// 132 SMs of an H200 split by 16: 8 groups and 4 SMs over.
    #[test]
    fn partitions_take_disjoint_consecutive_groups() {
        let p = plan(8, true, &[1, 7], Remainder::ToLast).unwrap();
        assert_eq!(ranges(&p), [(0..1, false), (1..8, true)]);
        let p = plan(8, true, &[2, 2, 2], Remainder::Own).unwrap();
        assert_eq!(ranges(&p), [(0..2, false), (2..4, false), (4..6, false), (6..6, true)]);
        let p = plan(8, true, &[3], Remainder::Unused).unwrap();
        assert_eq!(ranges(&p), [(0..3, false)]);
        let p = plan(8, false, &[4, 4], Remainder::ToLast).unwrap();
        assert_eq!(ranges(&p), [(0..4, false), (4..8, false)], "no SMs over: nothing to add");
        let p = plan(1, true, &[1, 0], Remainder::ToLast).unwrap();
        assert_eq!(ranges(&p), [(0..1, false), (1..1, true)], "the last may be the remainder alone");
        let p = plan(8, true, &[], Remainder::Own).unwrap();
        assert_eq!(ranges(&p), [(0..0, true)]);
        // No group is in two partitions.
        let p = plan(8, true, &[1, 2, 5], Remainder::ToLast).unwrap();
        let mut seen = [false; 8];
        for part in &p {
            for g in part.groups.clone() {
                assert!(!seen[g], "group {g} twice");
                seen[g] = true;
            }
        }
        assert_eq!(p.iter().filter(|p| p.remainder).count(), 1);
    }

    #[test]
    fn impossible_plans_are_usage_errors() {
        let bad = |groups: &[usize], rem, has| plan(8, has, groups, rem).unwrap_err().to_string();
        assert!(bad(&[5, 4], Remainder::ToLast, true).contains("more groups"), "9 of 8");
        assert!(bad(&[1, usize::MAX], Remainder::Unused, true).contains("overflow"));
        assert!(bad(&[0, 1], Remainder::ToLast, true).contains("no group"), "only the last may be empty");
        assert!(bad(&[1, 0], Remainder::ToLast, false).contains("no group"), "empty without a remainder");
        assert!(bad(&[1, 0], Remainder::Unused, true).contains("no group"));
        assert!(bad(&[], Remainder::ToLast, true).contains("no partition"));
        assert!(bad(&[1], Remainder::Own, false).contains("no SMs over"));
    }

    #[test]
    fn group_sizes_are_checked_against_the_device() {
        assert!(check_min_sms(16, 132).is_ok());
        assert!(check_min_sms(132, 132).is_ok());
        assert!(check_min_sms(0, 132).unwrap_err().to_string().contains("zero"));
        assert!(check_min_sms(133, 132).unwrap_err().to_string().contains("more SMs"));
    }

    #[test]
    fn one_group_and_the_rest() {
        assert_eq!(one_and_rest(8, true).unwrap(), [1, 7]);
        assert_eq!(one_and_rest(1, true).unwrap(), [1, 0]);
        assert!(one_and_rest(1, false).is_err());
        assert!(one_and_rest(0, true).is_err());
    }
}
