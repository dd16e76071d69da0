//! The pipeline's model, plans, chunk ranges, stencil windows and enqueue order, and the checks of
//! a run made before CUDA.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[test]
fn pipeline_model_matches_the_sources_measurements() {
    use ordo_cuda_core::pipeline::{
        check_run, choose_plan, chunk_range, predict_ms, Machine, Plan, Schedule, StageTimes,
    };
    // The source's program on an H200: 256 MiB in, the 64-step kernel, 256 MiB out.
    let times = StageTimes { copy_in_ms: 4.89, compute_ms: 0.32, copy_out_ms: 4.86 };
    let h200 = Machine {
        copy_engines: 3,
        duplex: 1.83,
        chunk_overhead_ms: 0.004,
        stage_timing_overhead_ms: 0.010,
        stage_timing: false,
    };
    let rr = |chunks, streams| Plan { chunks, schedule: Schedule::RoundRobin { streams } };
    let serial = predict_ms(times, rr(1, 1), &h200);
    assert!((serial - 10.074).abs() < 0.01, "{serial}");
    // Measured with plain C++: 8 chunks on 4 streams 5.98 ms; 32 chunks on 8 streams 5.64 ms; bound 5.28 ms.
    let p8 = predict_ms(times, rr(8, 4), &h200);
    let p32 = predict_ms(times, rr(32, 8), &h200);
    assert!((p8 - 5.98).abs() / 5.98 < 0.02, "{p8}");
    assert!((p32 - 5.64).abs() / 5.64 < 0.02, "{p32}");
    assert!(p32 > 5.28);
    // Two streams keep at most two chunks in flight: no better than (a + b + c) / 2.
    assert!(predict_ms(times, rr(32, 2), &h200) >= 10.07 / 2.0);
    // With several copy engines the planner stages the pipeline; the chunk count balances fill
    // against per-chunk cost.
    let best = choose_plan(times, &h200, 256);
    assert_eq!(best.schedule, Schedule::Staged);
    assert!(best.chunks >= 16 && best.chunks <= 64, "{best:?}");
    assert_eq!(best.streams(), 3);
    let staged = predict_ms(times, best, &h200);
    assert!(staged <= p32 + 1e-9 && staged > 5.28, "{staged}");
    // Stage timing adds its cost a chunk, and moves the planner to fewer chunks.
    let timed = Machine { stage_timing: true, ..h200 };
    let p32t = predict_ms(times, rr(32, 8), &timed);
    assert!((p32t - p32 - 32.0 * 0.010).abs() < 1e-9, "{p32t} {p32}");
    assert!(choose_plan(times, &timed, 256).chunks <= best.chunks);
    // One copy engine: copies in and out take turns, and the planner uses round robin.
    let one = Machine { copy_engines: 1, ..h200 };
    assert!(predict_ms(times, rr(32, 4), &one) > 9.75);
    assert!(matches!(choose_plan(times, &one, 64).schedule, Schedule::RoundRobin { .. }));
    // Compute-bound work: the compute dominates.
    let compute = StageTimes { copy_in_ms: 1.0, compute_ms: 10.0, copy_out_ms: 1.0 };
    let pc = predict_ms(compute, Plan { chunks: 16, schedule: Schedule::Staged }, &h200);
    assert!((pc - (10.0 + 2.0 / 16.0 + 0.064)).abs() < 1e-9, "{pc}");
    // Chunks cover every element once, sizes within one of each other.
    for (n, k) in [(10usize, 3usize), (1000, 7), (7, 7), (1 << 26, 32), (5, 1)] {
        let ranges: Vec<_> = (0..k).map(|i| chunk_range(n, k, i)).collect();
        assert_eq!(ranges[0].start, 0);
        assert_eq!(ranges[k - 1].end, n);
        assert!(ranges.windows(2).all(|w| w[0].end == w[1].start));
        let (min, max) = (ranges.iter().map(|r| r.len()).min().unwrap(), ranges.iter().map(|r| r.len()).max().unwrap());
        assert!(max - min <= 1 && min >= 1);
    }
    assert!(check_run([10; 4], 3).is_ok());
    assert!(check_run([10; 4], 0).unwrap_err().to_string().contains("zero chunks"));
    assert!(check_run([10; 4], 11).unwrap_err().to_string().contains("more chunks than elements"));
    assert!(check_run([10, 10, 9, 10], 2).unwrap_err().to_string().contains("same length"));
    assert!(h200.engines_note().contains("overlap each other"));
}

/// A chunk range asked of zero chunks is empty, never a division by zero.
#[test]
fn chunk_range_of_no_chunk_is_empty_not_a_division_by_zero() {
    use ordo_cuda_core::pipeline::chunk_range;
    assert_eq!(chunk_range(10, 0, 0), 10..10);
    assert_eq!(chunk_range(10, 0, 3), 10..10);
    assert_eq!(chunk_range(0, 0, 0), 0..0);
    // Past the last chunk: empty at the end, never beyond n.
    assert_eq!(chunk_range(10, 3, 3), 10..10);
    assert_eq!(chunk_range(10, 3, usize::MAX), 10..10);
    // Extreme sizes stay exact.
    assert_eq!(chunk_range(usize::MAX, usize::MAX, usize::MAX - 1), usize::MAX - 1..usize::MAX);
    assert_eq!(chunk_range(usize::MAX, 2, 1).end, usize::MAX);
}

#[test]
fn runs_in_records_are_checked_against_whole_elements() {
    use ordo_cuda_core::pipeline::{check_run, check_run_records};
    assert!(check_run_records([24; 4], 12, 2).is_ok());
    assert!(check_run_records([24; 4], 0, 1).is_err(), "zero values an element");
    assert!(check_run_records([25; 4], 12, 1).is_err(), "not a whole number of elements");
    assert!(check_run_records([24; 4], 12, 3).is_err(), "more chunks than elements");
    assert!(check_run_records([24, 24, 12, 24], 12, 1).is_err(), "lengths differ");
    assert!(check_run_records([usize::MAX; 4], usize::MAX, 1).is_ok(), "one element of every value");
    assert_eq!(check_run([24; 4], 3).is_ok(), check_run_records([24; 4], 1, 3).is_ok());
}

#[test]
fn chunk_of_finds_the_chunk_holding_each_record() {
    use ordo_cuda_core::pipeline::{chunk_of, chunk_range};
    for n in 1..40usize {
        for k in 1..=n + 2 {
            for r in 0..n {
                let brute = (0..k).find(|&i| chunk_range(n, k, i).contains(&r)).unwrap();
                assert_eq!(chunk_of(n, k, r), brute, "n {n} k {k} r {r}");
            }
            assert_eq!(chunk_of(n, k, n), k, "no chunk holds n");
        }
    }
    assert_eq!(chunk_of(10, 0, 3), 0);
    assert_eq!(chunk_of(usize::MAX, usize::MAX, usize::MAX - 1), usize::MAX - 1);
    assert_eq!(chunk_of(usize::MAX, 2, usize::MAX - 1), 1);
}

/// The window of each chunk of a stencil run, against brute force: the records it writes, the
/// records its compute reads (the halo clamped at the frame's edges), and the chunks whose
/// copy-ins that compute needs.
#[test]
fn stencil_windows_widen_each_chunk_by_the_halo_clamped_at_the_edges() {
    use ordo_cuda_core::pipeline::{chunk_range, stencil_window, StencilWindow};
    for records in 1..30usize {
        for chunks in 1..=records {
            for halo in [0, 1, 2, 3, 5, 31, usize::MAX] {
                for i in 0..chunks {
                    let w = stencil_window(records, chunks, halo, i);
                    let rows = chunk_range(records, chunks, i);
                    let reads = rows.start.saturating_sub(halo)..rows.end.saturating_add(halo).min(records);
                    let first = (0..chunks).find(|&j| chunk_range(records, chunks, j).contains(&reads.start)).unwrap();
                    let last = (0..chunks).rev().find(|&j| chunk_range(records, chunks, j).contains(&(reads.end - 1)));
                    let what = format!("records {records} chunks {chunks} halo {halo} chunk {i}");
                    assert_eq!(w, StencilWindow { rows, reads, needs: first..last.unwrap() + 1 }, "{what}");
                    assert!(w.needs.contains(&i), "{what}");
                }
            }
        }
    }
    // Examples: 10 rows in 3 chunks (3, 3, 4 rows), halo 2.
    let w = stencil_window(10, 3, 2, 0);
    assert_eq!((w.rows, w.reads, w.needs), (0..3, 0..5, 0..2));
    let w = stencil_window(10, 3, 2, 1);
    assert_eq!((w.rows, w.reads, w.needs), (3..6, 1..8, 0..3));
    // A halo larger than a chunk (2-row chunks, halo 5) reaches chunks beyond the neighbours.
    let w = stencil_window(14, 7, 5, 3);
    assert_eq!((w.rows, w.reads, w.needs), (6..8, 1..13, 0..7));
    // A halo as large as usize reads the whole frame, with no overflow.
    let w = stencil_window(usize::MAX, 3, usize::MAX, 1);
    assert_eq!((w.reads, w.needs), (0..usize::MAX, 0..3));
    // No chunk: empty ranges, never a division by zero.
    assert_eq!(stencil_window(10, 0, 1, 0), StencilWindow { rows: 10..10, reads: 10..10, needs: 0..0 });
    assert_eq!(stencil_window(10, 3, 1, 3), StencilWindow { rows: 10..10, reads: 10..10, needs: 3..3 });
    assert_eq!(stencil_window(0, 1, 1, 0), StencilWindow { rows: 0..0, reads: 0..0, needs: 0..0 });
}

#[test]
fn stencil_runs_are_checked_before_cuda() {
    use ordo_cuda_core::pipeline::{check_stencil, MAX_CHUNKS};
    let err = |lens, i, o, chunks| check_stencil(lens, i, o, chunks).unwrap_err().to_string();
    // 8 rows of 6 inputs and 3 outputs.
    assert_eq!(check_stencil([48, 48, 24, 24], 6, 3, 3), Ok(8));
    assert_eq!(check_stencil([48, 48, 96, 96], 6, 12, 8), Ok(8), "more outputs than inputs a row");
    assert!(err([48, 48, 24, 24], 0, 3, 1).contains("zero values a record"));
    assert!(err([48, 48, 24, 24], 6, 0, 1).contains("zero values a record"));
    assert!(err([48, 48, 24, 24], 6, 3, 0).contains("zero chunks"));
    assert!(err([48, 48, 24, 24], 6, 3, MAX_CHUNKS + 1).contains("MAX_CHUNKS"));
    assert!(err([48, 42, 24, 24], 6, 3, 1).contains("input and its device buffer"));
    assert!(err([48, 48, 21, 24], 6, 3, 1).contains("output and its device buffer"));
    assert!(err([50, 50, 24, 24], 6, 3, 1).contains("whole number of records"));
    assert!(err([48, 48, 27, 27], 6, 3, 1).contains("out_record_len values for each input record"));
    assert!(err([48, 48, 24, 24], 6, 3, 9).contains("more chunks than records"));
    // records * out_record_len overflows: refused, not wrapped.
    let big = usize::MAX - usize::MAX % 2;
    assert!(err([big, big, 4, 4], 2, usize::MAX, 1).contains("overflows"));
    assert!(err([0, 0, 0, 0], 6, 3, 1).contains("more chunks than records"));
}

/// The order a run enqueues its steps in, simulated on streams and events as CUDA orders them:
/// each compute starts after the copy-in of every chunk whose records it reads, every wait names
/// an event recorded by an earlier step (so no wait can close a cycle), every recorded event is
/// waited for, each chunk is copied in and computed once; and with a halo of 0 the order is the
/// one `Pipeline::run` always had (copy-in, a wait where the stages' streams differ, compute).
#[test]
fn enqueue_steps_order_every_compute_after_the_copy_ins_it_reads() {
    use ordo_cuda_core::pipeline::{enqueue_steps, stencil_window, Plan, Schedule, Step};
    let schedules = [
        Schedule::Staged,
        Schedule::RoundRobin { streams: 1 },
        Schedule::RoundRobin { streams: 2 },
        Schedule::RoundRobin { streams: 3 },
        Schedule::RoundRobin { streams: 4 },
        Schedule::RoundRobin { streams: 8 },
    ];
    for records in [1usize, 2, 5, 14, 31, 100] {
        for chunks in (1..=records.min(16)).chain([records]) {
            for schedule in schedules {
                for halo in [0usize, 1, 2, 5, 40, usize::MAX] {
                    let plan = Plan { chunks, schedule };
                    let what = format!("records {records} {plan:?} halo {halo}");
                    let streams = plan.workers();
                    // The copy-ins each stream has passed (stream order), and each event's record.
                    let mut known = vec![vec![false; chunks]; 3.max(streams)];
                    let mut recorded: Vec<Option<Vec<bool>>> = vec![None; chunks];
                    let mut waited = vec![false; chunks];
                    let (mut copied, mut computed) = (vec![0; chunks], vec![0; chunks]);
                    let steps: Vec<Step> = enqueue_steps(plan, records, halo).collect();
                    for &step in &steps {
                        match step {
                            Step::CopyIn { chunk, record } => {
                                let s = plan.stage_streams(chunk)[0];
                                copied[chunk] += 1;
                                known[s][chunk] = true;
                                if record {
                                    recorded[chunk] = Some(known[s].clone());
                                }
                            }
                            Step::Wait { chunk, on } => {
                                let s = plan.stage_streams(chunk)[1];
                                assert_ne!(s, plan.stage_streams(on)[0], "{what}: a wait on its own stream");
                                let event = recorded[on].as_ref().unwrap_or_else(|| panic!("{what}: {on} unrecorded"));
                                for (k, &done) in event.iter().enumerate() {
                                    known[s][k] |= done;
                                }
                                waited[on] = true;
                            }
                            Step::Compute { chunk } => {
                                let s = plan.stage_streams(chunk)[1];
                                computed[chunk] += 1;
                                for j in stencil_window(records, chunks, halo, chunk).needs {
                                    assert!(known[s][j], "{what}: compute {chunk} before copy-in {j}");
                                }
                            }
                        }
                    }
                    assert!(copied.iter().chain(&computed).all(|&n| n == 1), "{what}: {steps:?}");
                    for (j, event) in recorded.iter().enumerate() {
                        assert_eq!(event.is_some(), waited[j], "{what}: chunk {j}'s event recorded but not waited");
                    }
                    if matches!(schedule, Schedule::Staged) {
                        let waits = steps.iter().filter(|s| matches!(s, Step::Wait { .. })).count();
                        assert_eq!(waits, chunks, "{what}: one wait a compute");
                    }
                    if halo == 0 {
                        let staged = matches!(schedule, Schedule::Staged);
                        let before: Vec<Step> = (0..chunks)
                            .flat_map(|i| {
                                let copy = Step::CopyIn { chunk: i, record: staged };
                                let wait = staged.then_some(Step::Wait { chunk: i, on: i });
                                [Some(copy), wait, Some(Step::Compute { chunk: i })].into_iter().flatten()
                            })
                            .collect();
                        assert_eq!(steps, before, "{what}");
                    }
                }
            }
        }
    }
    // Round robin over 2 streams, 4 chunks of 2 rows, halo 1: each chunk's copy-in is out before
    // the compute of the chunk before it, and each compute waits for its neighbours' events.
    let plan = Plan { chunks: 4, schedule: Schedule::RoundRobin { streams: 2 } };
    let steps: Vec<Step> = enqueue_steps(plan, 8, 1).collect();
    let copy = |chunk| Step::CopyIn { chunk, record: true };
    let wait = |chunk, on| Step::Wait { chunk, on };
    let compute = |chunk| Step::Compute { chunk };
    let expect = [
        copy(0),
        copy(1),
        wait(0, 1),
        compute(0),
        copy(2),
        wait(1, 0),
        wait(1, 2),
        compute(1),
        copy(3),
        wait(2, 1),
        wait(2, 3),
        compute(2),
        wait(3, 2),
        compute(3),
    ];
    assert_eq!(steps, expect);
}

/// `choose_plan` given a huge chunk limit ends, with a plan within `MAX_CHUNKS`.
#[test]
fn choose_plan_with_a_huge_chunk_limit_terminates_within_max_chunks() {
    use ordo_cuda_core::pipeline::{choose_plan, Machine, StageTimes, MAX_CHUNKS};
    let times = StageTimes { copy_in_ms: 4.89, compute_ms: 0.32, copy_out_ms: 4.86 };
    // No per-chunk cost: more chunks always look better, so the planner goes to its limit.
    for copy_engines in [0, 1, 3] {
        let free = Machine {
            copy_engines,
            duplex: 1.83,
            chunk_overhead_ms: 0.0,
            stage_timing_overhead_ms: 0.0,
            stage_timing: false,
        };
        for max in [usize::MAX, usize::MAX / 2 + 1, 1 << 40, MAX_CHUNKS + 1] {
            let plan = choose_plan(times, &free, max);
            assert!(
                plan.chunks >= 1 && plan.chunks <= MAX_CHUNKS && plan.chunks.is_power_of_two(),
                "{copy_engines} {max}: {plan:?}"
            );
        }
        assert_eq!(choose_plan(times, &free, 0).chunks, 1);
    }
    let free = Machine {
        copy_engines: 3,
        duplex: 1.83,
        chunk_overhead_ms: 0.0,
        stage_timing_overhead_ms: 0.0,
        stage_timing: false,
    };
    assert_eq!(choose_plan(times, &free, usize::MAX).chunks, MAX_CHUNKS);
    assert_eq!(choose_plan(times, &free, 100).chunks, 64);
}

/// NaN, negative and infinite inputs give NaN or infinity from `predict_ms` and a plan from
/// `choose_plan`, never a panic or a hang.
#[test]
fn predict_ms_and_choose_plan_on_nan_negative_and_infinite_input() {
    use ordo_cuda_core::pipeline::{choose_plan, predict_ms, Machine, MachineModel, Plan, Schedule, StageTimes};
    let h200 = Machine { stage_timing: true, ..MachineModel::H200_PCIE5.machine(3) };
    let good = StageTimes { copy_in_ms: 4.89, compute_ms: 0.32, copy_out_ms: 4.86 };
    let plans = [
        Plan { chunks: 1, schedule: Schedule::RoundRobin { streams: 1 } },
        Plan { chunks: 32, schedule: Schedule::RoundRobin { streams: 8 } },
        Plan { chunks: 32, schedule: Schedule::Staged },
        Plan { chunks: 0, schedule: Schedule::RoundRobin { streams: 0 } },
    ];
    let nan_times = [
        StageTimes { copy_in_ms: f64::NAN, ..good },
        StageTimes { compute_ms: -1.0, ..good },
        StageTimes { copy_out_ms: f64::NEG_INFINITY, ..good },
    ];
    let nan_machines = [
        Machine { duplex: f64::NAN, ..h200 },
        Machine { chunk_overhead_ms: f64::NAN, ..h200 },
        Machine { stage_timing_overhead_ms: -0.5, ..h200 },
    ];
    for plan in plans {
        assert!(predict_ms(good, plan, &h200).is_finite(), "{plan:?}");
        for t in nan_times {
            assert!(predict_ms(t, plan, &h200).is_nan(), "{t:?} {plan:?}");
        }
        for m in &nan_machines {
            assert!(predict_ms(good, plan, m).is_nan(), "{m:?} {plan:?}");
        }
        assert_eq!(predict_ms(StageTimes { compute_ms: f64::INFINITY, ..good }, plan, &h200), f64::INFINITY);
        assert_eq!(predict_ms(good, plan, &Machine { chunk_overhead_ms: f64::INFINITY, ..h200 }), f64::INFINITY);
        // A duplex outside 1.0-2.0 is clamped, still a finite prediction.
        assert!(predict_ms(good, plan, &Machine { duplex: f64::INFINITY, ..h200 }).is_finite());
        assert!(predict_ms(good, plan, &Machine { duplex: 0.0, ..h200 }).is_finite());
    }
    // Nothing to compare: the planner falls back to one chunk on one stream.
    let serial = Plan { chunks: 1, schedule: Schedule::RoundRobin { streams: 1 } };
    for t in nan_times.into_iter().chain([StageTimes { copy_in_ms: f64::INFINITY, ..good }]) {
        assert_eq!(choose_plan(t, &h200, usize::MAX), serial, "{t:?}");
    }
    for m in &nan_machines {
        assert_eq!(choose_plan(good, m, 1 << 20), serial, "{m:?}");
    }
}

/// A run of more than `MAX_CHUNKS` chunks is refused.
#[test]
fn a_run_refuses_more_chunks_than_max_chunks() {
    use ordo_cuda_core::pipeline::{check_run, MAX_CHUNKS};
    assert!(check_run([usize::MAX; 4], MAX_CHUNKS).is_ok());
    let e = check_run([usize::MAX; 4], MAX_CHUNKS + 1).unwrap_err();
    assert!(e.to_string().contains("MAX_CHUNKS"), "{e}");
    assert!(check_run([usize::MAX; 4], usize::MAX).is_err());
}

/// A pipeline of more than `MAX_STREAMS` streams is refused before CUDA is called.
#[test]
fn a_pipeline_of_absurdly_many_streams_is_refused_before_cuda() {
    let e = ordo_cuda_core::pipeline::Pipeline::new(usize::MAX).err().expect("refused");
    assert!(e.cuda_code().is_none(), "{e}");
    assert!(ordo_cuda_core::pipeline::Pipeline::new(ordo_cuda_core::pipeline::MAX_STREAMS + 1).is_err());
}
