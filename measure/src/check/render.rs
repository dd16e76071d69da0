//! A [`CheckReport`] as markdown and as JSON (the JSON's fields: docs/check.md).

use super::advice::Figure;
use super::dynamic::Perturbation;
use super::edge::{AccessReport, EdgeReport, When};
use super::{CheckReport, Space};
use crate::report::{cell, format_seconds, number};
use serde_json::{json, Value};
use std::fmt::Write as _;

fn space_label(s: Space) -> &'static str {
    match s {
        Space::Global => "global",
        Space::MaybeGlobal => "may be global",
    }
}

fn when_label(w: &When) -> &'static str {
    match w {
        When::BeforeOnEveryPath => "before the wait on every path",
        When::BeforeOnSomePath { .. } => "before the wait on some path",
        When::AfterWait => "after the wait",
    }
}

fn lines(v: &[usize]) -> String {
    v.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")
}

fn point_label(point: &[(String, String)]) -> String {
    point.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
}

fn headline(r: &CheckReport) -> String {
    let v = r.verdict();
    let why = match v {
        super::Verdict::Race => "B touches memory of A's before its wait",
        super::Verdict::Unproven => {
            "an access before a wait is safe only under a condition to confirm, or its address is not followed"
        }
        super::Verdict::Safe => "every access before a wait is proven not to touch A's memory",
    };
    format!("**verdict: {}** (exit {}): {why}", v.label(), r.exit_code())
}

fn edge_markdown(s: &mut String, e: &EdgeReport) {
    let _ = writeln!(s, "\n## {}: {} -> {}, static check (PTX)\n", e.edge, cell(&e.a), cell(&e.b));
    if e.waits.is_empty() {
        let _ = writeln!(
            s,
            "- B ({}) **never waits** (no griddepcontrol.wait): launched with PDL, all of it may run beside A",
            e.b
        );
    } else {
        let _ = writeln!(s, "- B ({}) waits at line {}", e.b, lines(&e.waits));
    }
    let _ = writeln!(s, "- A's trigger: {}", e.trigger.summary);
    let _ = writeln!(s, "- what A does to B's memory: {}", e.knowledge.source);
    let _ = writeln!(s, "- verdict: **{}**", e.verdict.label());
    let before: Vec<&AccessReport> = e.before_wait().collect();
    if before.is_empty() {
        let _ = writeln!(s, "\nNo global access of B comes before its wait on any path.");
    } else {
        let _ = writeln!(s, "\n| line | instruction | access | address from | where | finding |");
        let _ = writeln!(s, "| ---: | --- | --- | --- | --- | --- |");
        for a in &before {
            let finding = a.finding.as_ref().map_or(String::new(), |f| format!("**{}**: {}", f.label(), f.text()));
            let mut place = when_label(&a.when).to_owned();
            if let When::BeforeOnSomePath { path } = &a.when {
                if !path.is_empty() {
                    place = format!("{place}: {}", path.join(" -> "));
                }
            }
            let _ = writeln!(
                s,
                "| {} | `{}` | {} ({}) | {} | {} | {} |",
                a.line,
                cell(&a.instruction),
                a.kind.label(),
                space_label(a.space),
                cell(&a.from.join("; ")),
                cell(&place),
                cell(&finding)
            );
        }
    }
    let after: Vec<usize> = e.accesses.iter().filter(|a| a.when == When::AfterWait).map(|a| a.line).collect();
    if !after.is_empty() {
        let _ = writeln!(s, "\nCertainly after the wait ({} accesses): lines {}.", after.len(), lines(&after));
    }
}

fn figure(f: Option<Figure>) -> String {
    f.map_or("-".to_owned(), |f| format_seconds(f.seconds))
}

/// The report as markdown.
pub fn markdown(r: &CheckReport) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# ordo-measure check: {}\n", r.module);
    let _ = writeln!(s, "{}", headline(r));
    if let Some(h) = &r.header {
        let _ = writeln!(s);
        s.push_str(&h.to_markdown().replace("# ", "### "));
    }
    for e in &r.edges {
        edge_markdown(&mut s, e);
    }
    for d in &r.dynamic {
        let _ = writeln!(s, "\n## {} -> {}: dynamic check (GPU)\n", cell(&d.edge.0), cell(&d.edge.1));
        let _ = writeln!(
            s,
            "- {} trials a point at {} point(s), seed {}: **{} trial(s) differed** from the runs without PDL",
            d.trials, d.points, d.seed, d.trials_with_race
        );
        if d.unstable_bytes > 0 {
            let _ = writeln!(s, "- {} bytes differ between runs without PDL: not compared", d.unstable_bytes);
        }
        for n in &d.notes {
            let _ = writeln!(s, "- {n}");
        }
        if !d.races.is_empty() {
            let _ = writeln!(
                s,
                "\n| trial | point | perturbation | grids A, B | buffer | elements | first | without PDL | with PDL |"
            );
            let _ = writeln!(s, "| ---: | --- | --- | --- | --- | ---: | ---: | ---: | ---: |");
            for x in &d.races {
                let g = |g: (u32, u32, u32)| format!("{}x{}x{}", g.0, g.1, g.2);
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {}, {} | {} | {} | {} | {} | {} |",
                    x.trial,
                    cell(&point_label(&x.point)),
                    cell(&x.perturbation.describe()),
                    g(x.grids[0]),
                    g(x.grids[1]),
                    cell(&x.buffer),
                    x.elements,
                    x.index,
                    cell(&x.expected),
                    cell(&x.seen)
                );
            }
            let _ = writeln!(
                s,
                "\nRun one again: `--seed {} --trials N` runs trials 0..N with the same perturbations.",
                d.seed
            );
        }
    }
    if !r.advice.is_empty() {
        let _ = writeln!(s, "\n## Advice (graph replays)\n");
        let _ = writeln!(s, "| edge | point | gap, no PDL | gap, PDL | release | period, no PDL | period, PDL | waves | recommendation |");
        let _ = writeln!(s, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |");
        for a in &r.advice {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} | {} | **{}** |",
                cell(&a.edge),
                cell(&point_label(&a.point)),
                figure(a.gap_plain),
                figure(a.gap_pdl),
                figure(a.release),
                figure(a.period_plain),
                figure(a.period_pdl),
                a.waves.map_or("-".to_owned(), |w| format!("{w:.2}")),
                a.recommendation.label()
            );
        }
        let _ = writeln!(s);
        for a in &r.advice {
            let _ = writeln!(s, "- {} ({}): {}", a.edge, point_label(&a.point), a.why);
        }
    }
    if !r.notes.is_empty() {
        let _ = writeln!(s, "\n## Notes\n");
        for n in &r.notes {
            let _ = writeln!(s, "- {n}");
        }
    }
    s
}

fn perturbation_json(p: &Perturbation) -> Value {
    json!({
        "delay_ns": p.delay_ns,
        "delay_from_block": p.delay_from_block,
        "early_trigger": p.early_trigger,
        "load_blocks": p.load_blocks,
        "load_ns": p.load_ns,
    })
}

fn point_json(point: &[(String, String)]) -> Value {
    Value::Object(point.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect())
}

fn figure_json(f: Option<Figure>) -> Value {
    f.map_or(Value::Null, |f| json!({ "seconds": number(f.seconds), "noise": f.noise.map_or(Value::Null, number) }))
}

fn edge_json(e: &EdgeReport) -> Value {
    let t = &e.trigger;
    let set = |s: &Option<std::collections::BTreeSet<usize>>| s.as_ref().map_or(Value::Null, |s| json!(s));
    json!({
        "edge": e.edge,
        "a": e.a,
        "b": e.b,
        "verdict": e.verdict.label(),
        "waits": e.waits,
        "never_waits": e.waits.is_empty(),
        "knowledge": {
            "a_writes": set(&e.knowledge.a_writes),
            "a_reads": set(&e.knowledge.a_reads),
            "source": e.knowledge.source,
        },
        "trigger": {
            "lines": t.lines,
            "placement": t.placement.label(),
            "on_every_path": t.on_every_path,
            "instructions": t.instructions,
            "instructions_after_some": t.instructions_after_some,
            "instructions_after_every": t.instructions_after_every,
            "stores": t.stores,
            "stores_after_some": t.stores_after_some,
            "stores_after_every": t.stores_after_every,
            "summary": t.summary,
        },
        "accesses": e.accesses.iter().map(|a| {
            let path = match &a.when { When::BeforeOnSomePath { path } => path.clone(), _ => Vec::new() };
            json!({
                "line": a.line,
                "instruction": a.instruction,
                "kind": a.kind.label(),
                "space": space_label(a.space),
                "from": a.from,
                "when": when_label(&a.when),
                "path": path,
                "finding": a.finding.as_ref().map_or(Value::Null, |f| json!({ "kind": f.label(), "text": f.text() })),
            })
        }).collect::<Vec<_>>(),
    })
}

/// The report as JSON.
pub fn json(r: &CheckReport) -> String {
    let v = json!({
        "tool": format!("ordo-measure check {}", env!("CARGO_PKG_VERSION")),
        "module": r.module,
        "verdict": r.verdict().label(),
        "exit_code": r.exit_code(),
        "header": r.header.as_ref().map_or(Value::Null, |h| h.to_json()),
        "edges": r.edges.iter().map(edge_json).collect::<Vec<_>>(),
        "dynamic": r.dynamic.iter().map(|d| json!({
            "a": d.edge.0,
            "b": d.edge.1,
            "trials": d.trials,
            "seed": d.seed,
            "points": d.points,
            "trials_with_race": d.trials_with_race,
            "unstable_bytes": d.unstable_bytes,
            "notes": d.notes,
            "races": d.races.iter().map(|x| json!({
                "trial": x.trial,
                "point": point_json(&x.point),
                "perturbation": perturbation_json(&x.perturbation),
                "grids": [[x.grids[0].0, x.grids[0].1, x.grids[0].2], [x.grids[1].0, x.grids[1].1, x.grids[1].2]],
                "buffer": x.buffer,
                "elements": x.elements,
                "index": x.index,
                "expected": x.expected,
                "seen": x.seen,
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "advice": r.advice.iter().map(|a| json!({
            "edge": a.edge,
            "point": point_json(&a.point),
            "gap_plain": figure_json(a.gap_plain),
            "gap_pdl": figure_json(a.gap_pdl),
            "release": figure_json(a.release),
            "period_plain": figure_json(a.period_plain),
            "period_pdl": figure_json(a.period_pdl),
            "waves": a.waves.map_or(Value::Null, number),
            "recommendation": a.recommendation.label(),
            "why": a.why,
        })).collect::<Vec<_>>(),
        "notes": r.notes,
    });
    let mut s = serde_json::to_string_pretty(&v).unwrap_or_else(|_| String::from("{}"));
    s.push('\n');
    s
}
