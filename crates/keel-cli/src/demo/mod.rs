//! `keel demo`: Keel's main job, shown on built-in workloads.
//!
//! The demo is a list of [`Section`]s, each one function that prints its own
//! tables. Later features add their sections to [`sections`]; `keel demo
//! NAME...` runs a subset. Every number printed is computed on the spot.

mod auto;
mod cosched;
mod farm;
mod loops;
mod mapping;
mod objects;

use std::io::Write;
use std::time::Instant;

use crate::error::CliError;
use crate::report;

/// One part of the demo.
pub struct Section {
    /// Short name for `keel demo NAME`.
    pub name: &'static str,
    /// Heading.
    pub title: &'static str,
    /// One line saying what to look for in the numbers.
    pub look_for: &'static str,
    /// Prints the section's body.
    pub body: fn(&mut dyn Write) -> Result<(), CliError>,
}

/// Every section, in the order the demo prints them.
pub fn sections() -> Vec<Section> {
    let mut all = mapping::sections();
    all.extend(loops::sections());
    all.extend(auto::sections());
    all.extend(farm::sections());
    all.extend(objects::sections());
    all.extend(cosched::sections());
    all
}

/// One section's output, for `keel demo --json`.
#[derive(serde::Serialize)]
struct JsonSection<'a> {
    name: &'a str,
    title: &'a str,
    look_for: &'a str,
    /// What the section prints, as printed.
    text: String,
}

/// Runs the named sections, or all of them when `names` is empty; with
/// `json`, prints one document holding each section's text.
pub fn run(names: &[String], json: bool, out: &mut dyn Write) -> Result<(), CliError> {
    let all = sections();
    let chosen: Vec<&Section> = if names.is_empty() {
        all.iter().collect()
    } else {
        names
            .iter()
            .map(|name| {
                all.iter().find(|s| s.name == name.as_str()).ok_or_else(|| {
                    CliError::UnknownSection {
                        name: name.clone(),
                        valid: all.iter().map(|s| s.name).collect(),
                    }
                })
            })
            .collect::<Result<_, _>>()?
    };
    if json {
        let mut sections = Vec::with_capacity(chosen.len());
        for section in chosen {
            let mut text = Vec::new();
            (section.body)(&mut text)?;
            sections.push(JsonSection {
                name: section.name,
                title: section.title,
                look_for: section.look_for,
                text: String::from_utf8_lossy(&text).into_owned(),
            });
        }
        serde_json::to_writer(&mut *out, &serde_json::json!({ "sections": sections }))?;
        writeln!(out)?;
        return Ok(());
    }
    let start = Instant::now();
    writeln!(
        out,
        "Keel demo: every mapping policy, computed now on built-in workloads."
    )?;
    writeln!(
        out,
        "Loads and times are seconds. λ (%) = (makespan/mean − 1)·100; LIB (%) = (1 − mean/makespan)·100;"
    )?;
    writeln!(
        out,
        "of bound (%) = makespan / max(mean, largest task)·100 (100 is optimal); migrations = tasks moved"
    )?;
    writeln!(
        out,
        "from the current mapping; splits = neighbouring tasks on different PUs; decision = time in map()."
    )?;
    for section in chosen {
        writeln!(out)?;
        writeln!(out, "== {}: {} ==", section.name, section.title)?;
        writeln!(out, "Look for: {}", section.look_for)?;
        (section.body)(out)?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "demo computed in {}",
        report::duration(start.elapsed().as_secs_f64())
    )?;
    Ok(())
}
