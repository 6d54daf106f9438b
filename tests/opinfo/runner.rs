//! Runs the OpInfo matrix the way PyTorch instantiates device-generic tests: the cases, op ×
//! device × dtype × check, are enumerated at run time from the generated `OPINFOS` table,
//! each runs under `catch_unwind` (the checks panic on a mismatch), in parallel, and the
//! report is printed in table order.

use crate::harness::{self, OpInfo};
use kiln::{DType, Device};
use rayon::prelude::*;
use std::any::Any;
use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::process::ExitCode;

/// One check of the matrix; each is a function in `harness.rs`.
#[derive(Clone, Copy)]
enum Check {
    Forward,
    Edge,
    Noncontiguous,
    ChannelsLast,
    Variants,
    Gradcheck,
    Gradgradcheck,
    Errors,
    Meta,
    MetaErrors,
    Autocast,
}

/// Every check, for the close names of a filter that matches nothing.
const CHECKS: [Check; 11] = [
    Check::Forward,
    Check::Edge,
    Check::Noncontiguous,
    Check::ChannelsLast,
    Check::Variants,
    Check::Gradcheck,
    Check::Gradgradcheck,
    Check::Errors,
    Check::Meta,
    Check::MetaErrors,
    Check::Autocast,
];

impl Check {
    fn name(self) -> &'static str {
        match self {
            Check::Forward => "forward",
            Check::Edge => "edge",
            Check::Noncontiguous => "noncontiguous",
            Check::ChannelsLast => "channels-last",
            Check::Variants => "variants",
            Check::Gradcheck => "gradcheck",
            Check::Gradgradcheck => "gradgradcheck",
            Check::Errors => "errors",
            Check::Meta => "meta",
            Check::MetaErrors => "meta-errors",
            Check::Autocast => "autocast",
        }
    }
}

/// One case: a check of one op on one device, in one dtype.
struct Case {
    info: &'static OpInfo,
    check: Check,
    /// The dtype the check runs in: float64 for gradcheck, `None` for errors, whose samples
    /// choose their own dtypes.
    dtype: Option<DType>,
    device: Device,
}

impl Case {
    /// `forward/exp/f32/cpu`, `gradcheck/exp/f64/cpu`, `errors/exp/cpu`.
    fn name(&self) -> String {
        self.name_with(self.info.name)
    }

    /// The name with the op's Rust name (`forward/sum_dim/f32/cpu` for
    /// `forward/sum.dim_IntList/f32/cpu`), which filters match too; `None` where they agree.
    fn rust_name(&self) -> Option<String> {
        (self.info.rust != self.info.name).then(|| self.name_with(self.info.rust))
    }

    fn name_with(&self, op: &str) -> String {
        match self.dtype {
            Some(d) => format!(
                "{}/{op}/{}/{}",
                self.check.name(),
                d.short_name(),
                self.device
            ),
            None => format!("{}/{op}/{}", self.check.name(), self.device),
        }
    }

    fn run(&self) {
        let (info, device) = (self.info, self.device);
        let dtype = || self.dtype.expect("a per-dtype check has a dtype");
        match self.check {
            Check::Forward => harness::check_forward(info, dtype(), device),
            Check::Edge => harness::check_edge(info, dtype(), device),
            Check::Noncontiguous => harness::check_noncontiguous(info, dtype(), device),
            Check::ChannelsLast => harness::check_channels_last(info, dtype(), device),
            Check::Variants => harness::check_variants(info, dtype(), device),
            Check::Gradcheck => harness::check_gradcheck(info, device),
            Check::Gradgradcheck => harness::check_gradgradcheck(info, device),
            Check::Errors => harness::check_errors(info, device),
            Check::Meta => harness::check_meta(info, dtype()),
            Check::MetaErrors => harness::check_meta_errors(info),
            Check::Autocast => crate::autocast::check_autocast(info, device),
        }
    }
}

/// Every case of one op on one device, in the order the report lists them.
fn op_cases(info: &'static OpInfo, device: Device) -> Vec<Case> {
    let mut cases = Vec::new();
    let mut add = |check, dtype| {
        cases.push(Case {
            info,
            check,
            dtype,
            device,
        })
    };
    // The meta device runs one check per dtype: the CPU's shapes, dtypes and strides.
    if device == Device::Meta {
        for &d in info.dtypes {
            add(Check::Meta, Some(d));
        }
        if info.errors {
            add(Check::MetaErrors, None);
        }
        return cases;
    }
    for &d in info.dtypes_on(device) {
        add(Check::Forward, Some(d));
        add(Check::Edge, Some(d));
        add(Check::Noncontiguous, Some(d));
        if !info.memory_format.is_empty() && device == Device::Cpu {
            add(Check::ChannelsLast, Some(d));
        }
        if info.variants {
            add(Check::Variants, Some(d));
        }
    }
    if info.runs_gradcheck() {
        add(Check::Gradcheck, Some(DType::F64));
        add(Check::Gradgradcheck, Some(DType::F64));
    }
    if info.errors {
        add(Check::Errors, None);
    }
    if crate::autocast::applies(info, device) {
        add(Check::Autocast, None);
    }
    cases
}

/// The devices every case is instantiated for. A CUDA case runs only when
/// `kiln::cuda::is_available()`; otherwise it is counted as skipped.
const DEVICES: [Device; 3] = [Device::Cpu, Device::Cuda(0), Device::Meta];

fn device_available(device: Device) -> bool {
    match device {
        Device::Cpu | Device::Meta => true,
        Device::Cuda(_) => kiln::cuda::is_available(),
    }
}

/// What the command line asks for. cargo passes libtest's flags through to every test
/// binary (`cargo test --workspace -- --nocapture`), so those are accepted: the ones that
/// mean something here are honoured, the rest ignored.
#[derive(Default)]
struct Options {
    /// Run the cases whose name contains one of these (all cases when empty).
    filters: Vec<String>,
    /// Leave out the cases whose name contains one of these.
    skip: Vec<String>,
    /// Filters and skips match whole names.
    exact: bool,
    /// Print the case names instead of running them.
    list: bool,
    /// Run only `#[ignore]`d tests: this binary has none.
    ignored: bool,
    /// `--test-threads N`: how many cases run at once (default: one per core).
    threads: Option<usize>,
}

/// libtest flags that take a value (`--color never` or `--color=never`).
const VALUE_FLAGS: &[&str] = &[
    "--color",
    "--format",
    "--logfile",
    "--shuffle-seed",
    "--skip",
    "--test-threads",
    "-Z",
];

impl Options {
    fn parse(mut args: impl Iterator<Item = String>) -> Options {
        let mut o = Options::default();
        while let Some(arg) = args.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((f, v)) if arg.starts_with("--") => (f.to_string(), Some(v.to_string())),
                _ => (arg.clone(), None),
            };
            let value = if VALUE_FLAGS.contains(&flag.as_str()) {
                inline.or_else(|| args.next())
            } else {
                None
            };
            match flag.as_str() {
                "--skip" => o.skip.extend(value),
                "--test-threads" => o.threads = value.and_then(|v| v.parse().ok()),
                "--exact" => o.exact = true,
                "--list" => o.list = true,
                "--ignored" => o.ignored = true,
                // --nocapture, --quiet, -q, --include-ignored, --color X, ...: nothing to do.
                f if f.starts_with('-') => {}
                _ => o.filters.push(arg),
            }
        }
        o
    }

    fn matches(&self, pattern: &str, name: &str) -> bool {
        if self.exact {
            name == pattern
        } else {
            name.contains(pattern)
        }
    }

    /// Whether `pattern` matches the case under either of its names.
    fn matches_case(&self, pattern: &str, case: &Case) -> bool {
        self.matches(pattern, &case.name())
            || case.rust_name().is_some_and(|n| self.matches(pattern, &n))
    }

    fn selects(&self, case: &Case) -> bool {
        !self.ignored
            && (self.filters.is_empty() || self.filters.iter().any(|f| self.matches_case(f, case)))
            && !self.skip.iter().any(|s| self.matches_case(s, case))
    }
}

/// A filter that matches no case, with what it may have meant: the cases of an op it names
/// exactly (`forward/expm1/i32/cpu`: expm1 has no int32 cases), else the op, check, dtype
/// and device names closest to its parts.
struct Unmatched {
    filter: String,
    close: Vec<String>,
}

impl Unmatched {
    /// Whether the filter was meant for this binary: it is written like a case name
    /// (`/expm1/`, `forward/`) or is close to an op's name. Cargo hands every test binary
    /// the same filters, so one meant for a hand-written test (`cargo test -p kiln-core
    /// deep_graph`) must not fail here.
    fn meant_for_opinfo(&self) -> bool {
        self.filter.contains('/') || !self.close.is_empty()
    }
}

/// The filters that match no case in `table` (whatever `--skip` removes).
fn unmatched(table: &'static [OpInfo], options: &Options) -> Vec<Unmatched> {
    let cases: Vec<Case> = table
        .iter()
        .flat_map(|info| DEVICES.into_iter().flat_map(move |d| op_cases(info, d)))
        .collect();
    let mut words: Vec<&str> = table.iter().flat_map(|i| [i.name, i.rust]).collect();
    words.extend(CHECKS.iter().map(|c| c.name()));
    words.extend(DType::ALL.iter().map(|d| d.short_name()));
    words.extend(["cpu", "cuda:0", "meta"]);
    words.sort_unstable();
    words.dedup();
    options
        .filters
        .iter()
        .filter(|f| !cases.iter().any(|c| options.matches_case(f, c)))
        .map(|f| {
            let parts: Vec<&str> = f.split('/').filter(|p| !p.is_empty()).collect();
            let named = table
                .iter()
                .find(|i| parts.iter().any(|p| *p == i.name || *p == i.rust));
            let close = match named {
                Some(info) => cases
                    .iter()
                    .filter(|c| std::ptr::eq(c.info, info))
                    .map(Case::name)
                    .take(12)
                    .collect(),
                None => {
                    let mut near: Vec<(usize, &str)> = parts
                        .iter()
                        .filter(|p| !words.iter().any(|w| w.contains(**p)))
                        .flat_map(|p| {
                            words.iter().filter_map(|w| {
                                let d = strsim::levenshtein(p, w);
                                (d <= 2.max(p.len() / 4)).then_some((d, *w))
                            })
                        })
                        .collect();
                    near.sort_unstable();
                    near.dedup_by_key(|n| n.1);
                    near.into_iter()
                        .take(8)
                        .map(|(_, w)| w.to_string())
                        .collect()
                }
            };
            Unmatched {
                filter: f.clone(),
                close,
            }
        })
        .collect()
}

thread_local! {
    /// Set while this thread runs a case, whose panics the quiet hook records.
    static IN_CASE: Cell<bool> = const { Cell::new(false) };
    /// The message and location of the case's last panic on this thread.
    static CAPTURED: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// The text of a panic payload (`panic!` gives a `&str` or a `String`).
pub(crate) fn payload_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "Box<dyn Any>".to_string()
    }
}

/// Replaces the default panic hook so that a failing case is reported once, with its name,
/// rather than as "thread panicked at" noise interleaved across threads. Panics outside a
/// case (a bug in this runner) still reach the default hook.
fn install_quiet_hook() {
    let default = panic::take_hook();
    panic::set_hook(Box::new(move |p| {
        if IN_CASE.with(Cell::get) {
            let at = p
                .location()
                .map(|l| format!("\n  at {l}"))
                .unwrap_or_default();
            let message = format!("{}{at}", payload_message(p.payload()));
            CAPTURED.with(|c| *c.borrow_mut() = Some(message));
        } else {
            default(p);
        }
    }));
}

/// Runs one case; the error is its panic message.
fn run_case(case: &Case) -> Result<(), String> {
    IN_CASE.with(|c| c.set(true));
    CAPTURED.with(|c| c.borrow_mut().take());
    let result = panic::catch_unwind(AssertUnwindSafe(|| case.run()));
    IN_CASE.with(|c| c.set(false));
    result.map_err(|payload| {
        CAPTURED
            .with(|c| c.borrow_mut().take())
            .unwrap_or_else(|| payload_message(&*payload))
    })
}

/// The selected cases of one op on one device: one line of the report.
struct Group {
    info: &'static OpInfo,
    device: Device,
    cases: Vec<Case>,
}

/// The groups, in table order, that have a case the command line selects.
fn select(table: &'static [OpInfo], options: &Options) -> Vec<Group> {
    let mut groups = Vec::new();
    for info in table {
        for device in DEVICES {
            let mut cases = op_cases(info, device);
            cases.retain(|c| options.selects(c));
            if !cases.is_empty() {
                groups.push(Group {
                    info,
                    device,
                    cases,
                });
            }
        }
    }
    groups
}

/// Runs groups on a thread pool, printing a line per group and keeping the totals.
struct Runner {
    pool: rayon::ThreadPool,
    /// The width of the op-name column.
    width: usize,
    passed: usize,
    failed: usize,
    skipped: usize,
}

impl Runner {
    /// Runs a group's cases in parallel, prints the group's line, and returns its failures
    /// as (case name, message), in case order.
    fn run(&mut self, group: &Group) -> Vec<(String, String)> {
        if !device_available(group.device) {
            // Counted, never passed: a machine without the device has not tested it.
            self.skipped += group.cases.len();
            return vec![];
        }
        // collect() keeps case order whatever order the threads finish in.
        let results: Vec<Result<(), String>> = self
            .pool
            .install(|| group.cases.par_iter().map(run_case).collect());
        let failures: Vec<(String, String)> = group
            .cases
            .iter()
            .zip(results)
            .filter_map(|(case, r)| r.err().map(|message| (case.name(), message)))
            .collect();
        let failed = failures.len();
        let passed = group.cases.len() - failed;
        self.passed += passed;
        self.failed += failed;
        println!(
            "{:<width$}  {:<6}  {passed} passed, {failed} failed",
            group.info.name,
            group.device.to_string(),
            width = self.width,
        );
        // At once, not only in the closing list: a run cut short by a time limit (the GPU
        // check's) still shows why each failed case failed.
        for (name, message) in &failures {
            println!("---- {name} ----\n{message}");
        }
        failures
    }
}

/// Runs the selected cases of `table` and reports; fails when any case fails.
pub fn main(table: &'static [OpInfo]) -> ExitCode {
    let options = Options::parse(std::env::args().skip(1));
    let groups = select(table, &options);
    // A filter meant for the matrix that matches nothing is a mistake, not a pass: libtest
    // would print `0 passed` and succeed.
    let mut mistaken = false;
    for u in unmatched(table, &options) {
        let close = if u.close.is_empty() {
            String::new()
        } else {
            format!("; close: {}", u.close.join(", "))
        };
        if u.meant_for_opinfo() {
            mistaken = true;
            eprintln!(
                "opinfo: no case matches `{}`{close}\n  cases are named <check>/<op>/<dtype>/<device>, the op by its schema name or its Rust name: forward/sum.dim_IntList/f32/cpu or forward/sum_dim/f32/cpu (`--list` prints them all)",
                u.filter
            );
        } else {
            println!(
                "opinfo: no case matches `{}` (not an op's name: left to the other test binaries)",
                u.filter
            );
        }
    }
    if mistaken {
        return ExitCode::FAILURE;
    }
    if options.list {
        for case in groups.iter().flat_map(|g| &g.cases) {
            println!("{}: test", case.name());
        }
        return ExitCode::SUCCESS;
    }
    if !kiln::cuda::is_available() {
        println!("CUDA tests skipped: no device");
    }
    #[cfg(feature = "cuda")]
    if kiln::cuda::is_available()
        && groups
            .iter()
            .flat_map(|g| &g.cases)
            .any(|c| c.device != Device::Cpu)
    {
        // Compile every module up front on all cores (and into the kernel cache) rather
        // than one at a time under the first cases that need them.
        let t = std::time::Instant::now();
        let threads = std::thread::available_parallelism().map_or(4, |n| n.get());
        match kiln::cuda::precompile(0, threads) {
            Ok(n) => println!(
                "CUDA: {n} modules ready in {:.1} s",
                t.elapsed().as_secs_f64()
            ),
            Err(e) => println!("CUDA: precompiling failed, cases will say why:\n{e}"),
        }
    }
    let mut runner = Runner {
        pool: rayon::ThreadPoolBuilder::new()
            .num_threads(options.threads.unwrap_or(0)) // 0: rayon's default, one per core
            .build()
            .expect("the runner's thread pool"),
        width: groups.iter().map(|g| g.info.name.len()).max().unwrap_or(0),
        passed: 0,
        failed: 0,
        skipped: 0,
    };
    install_quiet_hook();
    let failures: Vec<(String, String)> = groups.iter().flat_map(|g| runner.run(g)).collect();
    if !failures.is_empty() {
        println!("\nfailures (their messages are above, after their groups):");
        for (name, _) in &failures {
            println!("    {name}");
        }
        println!();
    }
    let Runner {
        passed,
        failed,
        skipped,
        ..
    } = runner;
    println!("opinfo: {passed} passed, {failed} failed, {skipped} skipped");
    if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
