//! The command line: defaults, each flag, and the refusals (zero frames, sizes whose bytes
//! overflow, unknown flags) as errors rather than panics.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_ipc_frames::args::{parse, Args, Mode, MAX_SLOTS};

fn args(line: &str) -> Result<Option<Args>, String> {
    parse(line.split_whitespace().map(String::from)).map_err(|e| e.to_string())
}

fn refused(line: &str) -> String {
    args(line).expect_err(line)
}

#[test]
fn no_arguments_run_1_and_16_mib_in_both_modes() {
    let a = args("").unwrap().unwrap();
    assert_eq!(a, Args::default());
    assert_eq!((a.sizes_mib, a.frames, a.slots, a.warmup), (vec![1, 16], 400, 4, 20));
    assert_eq!(a.modes, vec![Mode::Ipc, Mode::Pinned]);
    assert_eq!(a.out, None);
}

#[test]
fn each_flag_sets_its_field() {
    let a = args("--sizes 2,8,64 --frames 50 --warmup 0 --slots 3 --modes pinned --out r.json").unwrap().unwrap();
    assert_eq!((a.sizes_mib, a.frames, a.warmup, a.slots), (vec![2, 8, 64], 50, 0, 3));
    assert_eq!((a.modes, a.out.unwrap().to_str().unwrap()), (vec![Mode::Pinned], "r.json"));
    let a = args("--frame-mib=32 --frames=7 --modes=ipc").unwrap().unwrap();
    assert_eq!((a.sizes_mib, a.frames, a.modes), (vec![32], 7, vec![Mode::Ipc]));
    assert_eq!(Args { frames: 7, ..Args::default() }.max_frames(), 20, "the warm-up is the longer pass");
    assert_eq!(args("--help").unwrap(), None);
}

#[test]
fn zero_counts_and_sizes_are_refused() {
    assert!(refused("--frames 0").contains("--frames: must be at least 1"));
    assert!(refused("--slots 0").contains("--slots"));
    assert!(refused("--sizes 1,0").contains("--sizes"));
    assert!(refused("--frame-mib 0").contains("--frame-mib"));
}

#[test]
fn sizes_whose_bytes_overflow_are_refused() {
    let max = usize::MAX;
    assert!(refused(&format!("--frame-mib {max}")).contains("overflows"));
    assert!(refused(&format!("--sizes 1,{}", max / (1 << 20))).contains("overflows"));
    // A frame that fits, but not `--slots` of them.
    let half = (isize::MAX as usize) / (1 << 20) / 2 + 1;
    assert!(refused(&format!("--frame-mib {half} --slots 2")).contains("overflows"));
    assert!(refused("--sizes 99999999999999999999999").contains("not a whole number"));
    assert!(refused(&format!("--frames {max}")).contains("too large"));
    assert!(refused(&format!("--slots {}", MAX_SLOTS + 1)).contains("at most"));
}

#[test]
fn malformed_lines_are_refused_with_what_is_wrong() {
    assert!(refused("--frames").contains("needs a value"));
    assert!(refused("--frames ten").contains("not a whole number"));
    assert!(refused("--bogus 1").contains("unknown argument"));
    assert!(refused("frames").contains("unknown argument"));
    assert!(refused("--modes ipc,nvlink").contains("not ipc or pinned"));
    assert!(refused("--out=").contains("--out"));
    assert!(refused("--frames -3").contains("not a whole number"));
}
