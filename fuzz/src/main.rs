//! The stable fuzz runner: `cargo run --release -p kiln-fuzz -- --seconds 60 [--seed N]`.
//!
//! It runs a worker copy of itself that calls every entry point round-robin on random byte
//! strings, catching panics. Aborts (a refused allocation, a stack overflow) and hangs kill
//! the worker instead, so the supervisor notes the call the worker was in, and starts a new
//! worker at the next call. `--replay NAME CASE` reruns one call with the normal panic output.

use kiln_fuzz::{entries, Args, MAX_BYTES};
use rand::{RngCore, SeedableRng};
use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Refuses any single allocation over `MAX_BYTES`, so that a call asking kiln for terabytes
/// aborts the worker ("memory allocation of N bytes failed") instead of swapping the machine.
struct Capped;

// SAFETY: every method forwards to `System`, a sound allocator, with the caller's arguments
// unchanged, or returns null, which `GlobalAlloc` allows for any request it cannot satisfy.
unsafe impl GlobalAlloc for Capped {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if l.size() > MAX_BYTES {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller upholds `alloc`'s contract (a non-zero size), passed on as is.
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        if l.size() > MAX_BYTES {
            return std::ptr::null_mut();
        }
        // SAFETY: as in `alloc`.
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: `p` came from this allocator with layout `l`, so from `System` (the only
        // allocator that hands out memory here).
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        if new > MAX_BYTES {
            return std::ptr::null_mut();
        }
        // SAFETY: `p` came from `System` with layout `l` (see `dealloc`), and the caller
        // upholds `realloc`'s contract for `new`.
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static ALLOC: Capped = Capped;

/// Bytes per call: more than any entry point draws.
const INPUT_LEN: usize = 256;
/// A worker making no progress for this long is hung.
const HANG_SECS: u64 = 3;

static PANIC: Mutex<Option<(String, String)>> = Mutex::new(None);
static PROGRESS: AtomicU64 = AtomicU64::new(0);

/// Records the panic's message and location instead of printing them.
fn silence_panics() {
    std::panic::set_hook(Box::new(|info| {
        let p = info.payload();
        let msg = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "<non-string panic payload>".into());
        let loc = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        *PANIC.lock().unwrap_or_else(|e| e.into_inner()) = Some((msg, loc));
    }));
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The case (byte string seed) of call `i` in a run seeded `seed` (splitmix64).
fn case_of(seed: u64, i: u64) -> u64 {
    let mut z = seed ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn input(case: u64) -> Vec<u8> {
    let mut v = vec![0u8; INPUT_LEN];
    rand::rngs::StdRng::seed_from_u64(case).fill_bytes(&mut v);
    v
}

/// One line, whatever the message holds.
fn flat(s: &str) -> String {
    s.replace(['\t', '\n', '\r'], " ")
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| {
        argv.iter()
            .position(|a| a == name)
            .and_then(|i| argv.get(i + 1))
            .cloned()
    };
    let num = |name: &str, default: u64| flag(name).and_then(|v| v.parse().ok()).unwrap_or(default);
    if let Some(i) = argv.iter().position(|a| a == "--replay") {
        let (Some(name), Some(case)) = (
            argv.get(i + 1),
            argv.get(i + 2).and_then(|c| c.parse().ok()),
        ) else {
            eprintln!("usage: fuzz-replay --replay NAME CASE [--no-huge]");
            return ExitCode::FAILURE;
        };
        return replay(name, case, !argv.iter().any(|a| a == "--no-huge"));
    }
    if argv.iter().any(|a| a == "--worker") {
        let no_huge: BTreeSet<usize> = flag("--no-huge")
            .unwrap_or_default()
            .split(',')
            .filter_map(|s| s.parse().ok())
            .collect();
        worker(
            num("--seed", 0),
            num("--start", 0),
            num("--until", 0),
            &no_huge,
        );
        return ExitCode::SUCCESS;
    }
    let seed = num("--seed", now_ms());
    supervise(seed, num("--seconds", 60))
}

/// Calls entries round-robin until `until` (ms since the epoch). Protocol on stdout, one line
/// each: `c I IDX CASE` before call I; `p IDX CASE PHASE\tLOCATION\tMESSAGE\tARGS` after a
/// panic; `s IDX` after a call the harness skipped; `done` at the end.
fn worker(seed: u64, start: u64, until: u64, no_huge: &BTreeSet<usize>) {
    silence_panics();
    std::thread::spawn(|| {
        let (mut last, mut still) = (u64::MAX, 0);
        loop {
            std::thread::sleep(Duration::from_secs(1));
            let p = PROGRESS.load(Ordering::Relaxed);
            still = if p == last { still + 1 } else { 0 };
            last = p;
            if still >= HANG_SECS {
                eprintln!("kiln-fuzz: HANG");
                std::process::abort();
            }
        }
    });
    let all = entries();
    let mut out = std::io::stdout().lock();
    let mut i = start;
    while !i.is_multiple_of(64) || now_ms() < until {
        let idx = (i % all.len() as u64) as usize;
        let case = case_of(seed, i);
        let _ = writeln!(out, "c {i} {idx} {case}");
        let data = input(case);
        let mut args = Args::new(&data);
        args.huge = !no_huge.contains(&idx);
        kiln_core::manual_seed(case);
        let r = catch_unwind(AssertUnwindSafe(|| (all[idx].1)(&mut args)));
        PROGRESS.fetch_add(1, Ordering::Relaxed);
        if args.skipped {
            let _ = writeln!(out, "s {idx}");
        }
        if r.is_err() {
            let (msg, loc) = PANIC
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "p {idx} {case} {:?}\t{loc}\t{}\t{}",
                args.phase,
                flat(&msg),
                flat(&args.log.join("; "))
            );
        }
        i += 1;
    }
    let _ = writeln!(out, "done");
}

/// A distinct failure and its first example.
struct Finding {
    idx: usize,
    case: u64,
    huge: bool,
    phase: String,
    message: String,
    location: String,
    args: String,
    hits: u64,
}

/// Digits vary between hits of one bug (shapes, sizes); the key ignores them.
fn key(idx: usize, location: &str, message: &str) -> (usize, String, String) {
    let m: String = message
        .chars()
        .map(|c| if c.is_ascii_digit() { '#' } else { c })
        .collect();
    (idx, location.to_string(), m)
}

fn supervise(seed: u64, seconds: u64) -> ExitCode {
    silence_panics();
    let all = entries();
    let until = now_ms() + seconds * 1000;
    let exe = std::env::current_exe().expect("own path");
    let mut calls = vec![(0u64, 0u64); all.len()];
    let mut findings: BTreeMap<(usize, String, String), Finding> = BTreeMap::new();
    let mut no_huge = BTreeSet::new();
    let (mut start, mut panics, mut workers) = (0u64, 0u64, 0u64);
    eprintln!("fuzz: {} entry points, seed {seed}, {seconds} s", all.len());
    while now_ms() < until {
        workers += 1;
        let list: Vec<String> = no_huge.iter().map(|i: &usize| i.to_string()).collect();
        let mut child = Command::new(&exe)
            .args([
                "--worker",
                "--seed",
                &seed.to_string(),
                "--start",
                &start.to_string(),
            ])
            .args(["--until", &until.to_string(), "--no-huge", &list.join(",")])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn worker");
        let mut err = child.stderr.take().expect("piped");
        let err_thread = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        let (mut last, mut done) = (None, false);
        for line in BufReader::new(child.stdout.take().expect("piped")).lines() {
            let Ok(line) = line else { break };
            let mut w = line.splitn(4, ' ');
            match w.next() {
                Some("c") => {
                    let v: Vec<u64> = w.filter_map(|x| x.parse().ok()).collect();
                    last = (v.len() == 3).then(|| (v[0], v[1] as usize, v[2]));
                    if let Some((_, idx, _)) = last {
                        calls[idx].0 += 1;
                    }
                }
                Some("p") => {
                    let (idx, case) = (w.next().unwrap_or("0"), w.next().unwrap_or("0"));
                    let (idx, case): (usize, u64) =
                        (idx.parse().unwrap_or(0), case.parse().unwrap_or(0));
                    let rest: Vec<&str> = w.next().unwrap_or("").split('\t').collect();
                    let get = |i: usize| rest.get(i).copied().unwrap_or("").to_string();
                    panics += 1;
                    findings
                        .entry(key(idx, &get(1), &get(2)))
                        .or_insert_with(|| Finding {
                            idx,
                            case,
                            huge: !no_huge.contains(&idx),
                            phase: get(0),
                            location: get(1),
                            message: get(2),
                            args: get(3),
                            hits: 0,
                        })
                        .hits += 1;
                }
                Some("s") => {
                    if let Some(idx) = w.next().and_then(|x| x.parse::<usize>().ok()) {
                        calls[idx].1 += 1;
                    }
                }
                Some("done") => done = true,
                _ => {}
            }
        }
        let status = child.wait().expect("wait worker");
        let stderr = err_thread.join().unwrap_or_default();
        if done {
            break;
        }
        // The worker died inside call `i`: record it and go on from the next call.
        let Some((i, idx, case)) = last else {
            eprintln!("fuzz: worker died before its first call: {status}\n{stderr}");
            return ExitCode::FAILURE;
        };
        let huge = !no_huge.contains(&idx);
        let what = if stderr.contains("memory allocation of") {
            // Later calls of this op stop drawing huge sizes, so it keeps being covered.
            no_huge.insert(idx);
            "abort: allocation over 1 GiB refused (kiln would allocate it)"
        } else if stderr.contains("HANG") {
            no_huge.insert(idx);
            "hang: no progress for 3 s"
        } else if stderr.contains("overflowed its stack") {
            "abort: stack overflow"
        } else {
            "worker died"
        };
        let detail = (stderr.lines().find(|l| l.contains("memory allocation of")))
            .or_else(|| stderr.lines().rev().find(|l| !l.trim().is_empty()))
            .unwrap_or("");
        let message = format!("{what} ({status}; {})", flat(detail));
        panics += 1;
        findings
            .entry(key(idx, "", what))
            .or_insert_with(|| Finding {
                idx,
                case,
                huge,
                phase: "Call".into(),
                location: String::new(),
                message,
                args: describe(idx, case, huge),
                hits: 0,
            })
            .hits += 1;
        start = i + 1;
    }
    report(&all, &calls, &findings, panics, workers)
}

/// The arguments of a call, drawn without making it (for a call that killed the worker).
fn describe(idx: usize, case: u64, huge: bool) -> String {
    let data = input(case);
    let mut args = Args::new(&data);
    args.huge = huge;
    args.dry_run = true;
    let f = entries()[idx].1;
    let _ = catch_unwind(AssertUnwindSafe(|| f(&mut args)));
    args.log.join("; ")
}

fn report(
    all: &[(&str, kiln_fuzz::FuzzFn)],
    calls: &[(u64, u64)],
    findings: &BTreeMap<(usize, String, String), Finding>,
    panics: u64,
    workers: u64,
) -> ExitCode {
    let total: u64 = calls.iter().map(|c| c.0).sum();
    println!("calls per entry point (skipped: constructor over 64 MiB, not made):");
    for ((name, _), (c, s)) in all.iter().zip(calls) {
        let skipped = if *s > 0 {
            format!(" (skipped {s})")
        } else {
            String::new()
        };
        println!("  {name:<28} {c:>9}{skipped}");
    }
    println!("workers started: {workers}");
    println!("distinct panics: {}", findings.len());
    for (n, f) in findings.values().enumerate() {
        println!(
            "[{}] {} — {} hit(s), phase {}",
            n + 1,
            all[f.idx].0,
            f.hits,
            f.phase
        );
        println!("    message: {}", f.message);
        if !f.location.is_empty() {
            println!("    at: {}", f.location);
        }
        println!("    args: {}", f.args);
        let nh = if f.huge { "" } else { " --no-huge" };
        println!(
            "    replay: cargo run --release -p kiln-fuzz -- --replay '{}' {}{nh}",
            all[f.idx].0, f.case
        );
    }
    println!("fuzz: {total} calls, {panics} panics");
    let _ = std::io::stdout().flush();
    if panics > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Reruns one call with Rust's normal panic output (and backtrace with RUST_BACKTRACE=1).
fn replay(name: &str, case: u64, huge: bool) -> ExitCode {
    let all = entries();
    let Some(idx) = all.iter().position(|(n, _)| *n == name) else {
        eprintln!("no entry point named '{name}'");
        return ExitCode::FAILURE;
    };
    println!("{}", describe(idx, case, huge).replace("; ", "\n"));
    let data = input(case);
    let mut args = Args::new(&data);
    args.huge = huge;
    kiln_core::manual_seed(case);
    let r = (all[idx].1)(&mut args);
    println!("result: {r:?}");
    ExitCode::SUCCESS
}
