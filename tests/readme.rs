//! The README's contributor sections ("Adding an operator" and its kernel contract) say what
//! is true: every command of their `sh` blocks runs, from the repository root, as written;
//! every code block of the expm1 walk-through is in the file it names, verbatim; and the
//! OpInfo runner's filter behaves as the README says. They drifted once (a package name, a
//! trait, a CUDA helper that did not exist), which no other test could see.
//!
//! The commands are real cargo runs against this target directory: after `cargo test` has
//! built the workspace, each finds its binaries built and takes seconds (`scripts/cuda-check`
//! builds the CUDA test binary the first time, and fetches NVRTC once).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The README from `## Adding an operator` up to the next section that is not part of it.
fn contributor_sections() -> String {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let start = readme
        .find("\n## Adding an operator\n")
        .expect("README has `## Adding an operator`");
    let end = readme[start..]
        .find("\n## Adding a backend")
        .map_or(readme.len(), |e| start + e);
    readme[start..end].to_string()
}

/// The fenced blocks of `text` as (info string, body).
fn blocks(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut open: Option<(String, usize, String)> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        match &mut open {
            None if trimmed.starts_with("```") => {
                let indent = line.len() - trimmed.len();
                open = Some((trimmed[3..].trim().to_string(), indent, String::new()));
            }
            Some((info, _, body)) if trimmed.starts_with("```") => {
                out.push((std::mem::take(info), std::mem::take(body)));
                open = None;
            }
            Some((_, indent, body)) => {
                // A block inside a list item is indented with it.
                body.push_str(line.get(*indent..).unwrap_or(line.trim_start()));
                body.push('\n');
            }
            None => {}
        }
    }
    out
}

/// Runs `command` through `sh` from the repository root; (success, output).
fn run(command: &str) -> (bool, String) {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("{command} 2>&1"))
        .current_dir(root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("`{command}`: cannot start sh: {e}"));
    let mut stdout = child.stdout.take().expect("piped stdout");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut s).ok();
        s
    });
    // A command that never ends (a cargo lock held by whoever runs this test) fails the test
    // instead of hanging it.
    let limit = Duration::from_secs(1200);
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("waiting for sh") {
            break s;
        }
        if t.elapsed() > limit {
            child.kill().ok();
            panic!("`{command}` ran past {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    (status.success(), reader.join().unwrap_or_default())
}

/// The commands of the `sh` blocks: each line without its trailing comment.
fn commands(sections: &str) -> Vec<String> {
    blocks(sections)
        .into_iter()
        .filter(|(info, _)| info == "sh")
        .flat_map(|(_, body)| {
            body.lines()
                .map(|l| l.split(" #").next().unwrap_or("").trim().to_string())
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn every_command_of_the_contributor_loop_runs() {
    let sections = contributor_sections();
    let commands = commands(&sections);
    assert!(
        commands.len() >= 4,
        "the README's loop has {} commands: {commands:?}",
        commands.len()
    );
    for c in &commands {
        // `cargo test -p kiln-core` would run this test again, and again.
        assert!(
            !c.contains("--test readme"),
            "the README's loop runs this test: {c}"
        );
        let (ok, output) = run(c);
        assert!(ok, "README command `{c}` failed:\n{output}");
    }
}

/// The walk-through's code, block by block, in the file it names: the kernel and its CUDA
/// twin, the YAML entry and the formula are the tree's, not a sketch of them.
#[test]
fn the_expm1_walk_through_is_the_code_in_the_tree() {
    let sections = contributor_sections();
    let files: [(&str, &str); 4] = [
        ("rust", "kernels/src/cpu/unary.rs"),
        ("c++", "kernels/cuda/unary.cuh"),
        ("yaml", "native_functions.yaml"),
        ("yaml", "derivatives.yaml"),
    ];
    let mut found = [false; 4];
    for (info, body) in blocks(&sections) {
        let lang = info.split(',').next().unwrap_or("");
        let mentions_expm1 = body.contains("expm1");
        if !mentions_expm1 || !files.iter().any(|(l, _)| *l == lang) {
            continue;
        }
        let hit = files
            .iter()
            .enumerate()
            .find(|(_, (l, path))| *l == lang && read(path).contains(&body));
        match hit {
            Some((i, _)) => found[i] = true,
            None => panic!(
                "a README `{info}` block about expm1 is not in {}:\n{body}",
                files
                    .iter()
                    .filter(|(l, _)| *l == lang)
                    .map(|(_, p)| *p)
                    .collect::<Vec<_>>()
                    .join(" or ")
            ),
        }
    }
    for (i, (_, path)) in files.iter().enumerate() {
        assert!(found[i], "the README shows no expm1 block from {path}");
    }
}

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(&root()).join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The OpInfo filter as the README describes it: a case name or part of one, the op by its
/// schema or its Rust name; a filter meant for the matrix that matches nothing fails with
/// close names; one meant for another test binary does not fail this one.
#[test]
fn the_opinfo_filter_fails_on_a_mistake_and_takes_rust_names() {
    let opinfo = "cargo test --quiet -p kiln-core --test opinfo --";
    let (ok, out) = run(&format!("{opinfo} /expm1x/"));
    assert!(!ok, "a misspelt op ran nothing and passed:\n{out}");
    assert!(out.contains("no case matches `/expm1x/`"), "{out}");
    assert!(out.contains("close: expm1"), "{out}");
    let (ok, out) = run(&format!("{opinfo} forward/expm1/i16/cpu"));
    assert!(!ok, "{out}");
    assert!(out.contains("forward/expm1/f32/cpu"), "{out}");
    let (ok, out) = run(&format!("{opinfo} forward/sum_dim/f32/cpu"));
    assert!(ok, "{out}");
    assert!(out.contains("opinfo: 1 passed, 0 failed"), "{out}");
    let (ok, out) = run(&format!("{opinfo} deep_graph_of_a_hand_written_test"));
    assert!(ok, "{out}");
    assert!(out.contains("opinfo: 0 passed, 0 failed"), "{out}");
}
