//! The SVG: the planned pipeline's timeline (per chunk: copy in, compute, copy out, from events),
//! and below it the first kernels of PDL chains with and without PDL (from `%globaltimer` stamps).

use crate::gaps::KernelLane;
use ordo_cuda_core::pipeline::ChunkTimes;
use std::fmt::Write as _;

const LEFT: f32 = 150.0;
const WIDTH: f32 = 1000.0;

pub(crate) fn write_svg(path: &str, timeline: &[ChunkTimes], lanes: &[KernelLane]) -> std::io::Result<()> {
    let mut body = String::new();
    let mut y = 10.0f32;
    pipeline_panel(&mut body, &mut y, timeline);
    kernel_panel(&mut body, &mut y, lanes);
    let svg = format!(
        "<svg xmlns='http://www.w3.org/2000/svg' width='{}' height='{y}' font-family='sans-serif' font-size='11'>\n{body}</svg>\n",
        LEFT + WIDTH + 20.0
    );
    std::fs::write(path, svg)
}

fn pipeline_panel(svg: &mut String, y: &mut f32, timeline: &[ChunkTimes]) {
    if timeline.is_empty() {
        return;
    }
    let streams = 3 * timeline.iter().map(|t| t.stream).max().map_or(1, |m| m + 1);
    let end = timeline.iter().map(|t| t.copy_out.1).fold(0f32, f32::max).max(1e-3);
    let lane = 36.0f32;
    let _ = writeln!(
        svg,
        "<text x='4' y='{}' font-weight='bold'>Pipeline: {} chunks, 0 to {end:.2} ms</text>",
        *y + 12.0,
        timeline.len()
    );
    *y += 20.0;
    let x = |t: f32| LEFT + t / end * WIDTH;
    for st in 0..streams {
        let stage = ["in", "compute", "out"][st % 3];
        let _ = writeln!(svg, "<text x='4' y='{}'>stream {} {stage}</text>", *y + 16.0 + lane * st as f32, st / 3);
    }
    for t in timeline {
        for (stage, ((a, b), color)) in
            [(t.copy_in, "#4e79a7"), (t.compute, "#f28e2b"), (t.copy_out, "#59a14f")].into_iter().enumerate()
        {
            let top = *y + lane * (3 * t.stream + stage) as f32;
            let _ = writeln!(svg, "<rect x='{:.2}' y='{top}' width='{:.2}' height='24' fill='{color}' stroke='white' stroke-width='0.5'/>", x(a), (x(b) - x(a)).max(0.5));
        }
    }
    *y += lane * streams as f32 + 4.0;
    let _ = writeln!(
        svg,
        "<text x='{LEFT}' y='{}'>copy in (blue), compute (orange), copy out (green), from the chunks' events</text>",
        *y + 8.0
    );
    *y += 30.0;
}

fn kernel_panel(svg: &mut String, y: &mut f32, lanes: &[KernelLane]) {
    if lanes.is_empty() {
        return;
    }
    let _ = writeln!(
        svg,
        "<text x='4' y='{}' font-weight='bold'>PDL chains: the first kernels, from %globaltimer (each row its own time scale)</text>",
        *y + 12.0
    );
    *y += 22.0;
    for lane in lanes {
        let end = lane.kernels.iter().map(|k| k.2).fold(0f64, f64::max).max(1e-3);
        let x = |t: f64| LEFT as f64 + t / end * WIDTH as f64;
        let _ = writeln!(svg, "<text x='4' y='{}'>{}</text>", *y + 18.0, lane.label);
        // Even kernels on the upper half-row, odd on the lower, so that overlap shows.
        for (k, &(entry, release, done)) in lane.kernels.iter().enumerate() {
            let top = *y + if k % 2 == 0 { 0.0 } else { 14.0 };
            let color = if k % 2 == 0 { "#4e79a7" } else { "#e15759" };
            let _ = writeln!(
                svg,
                "<rect x='{:.2}' y='{top}' width='{:.2}' height='12' fill='{color}' fill-opacity='0.3'/>\n<rect x='{:.2}' y='{top}' width='{:.2}' height='12' fill='{color}'/>",
                x(entry),
                (x(release) - x(entry)).max(0.0),
                x(release),
                (x(done) - x(release)).max(0.5)
            );
        }
        let _ = writeln!(svg, "<text x='{}' y='{}'>{end:.1} us</text>", LEFT + WIDTH - 50.0, *y + 40.0);
        *y += 48.0;
    }
    let _ = writeln!(
        svg,
        "<text x='{LEFT}' y='{}'>pale: first block started, waiting in the PDL wait; solid: released until the last block ended</text>",
        *y + 4.0
    );
    *y += 20.0;
}
