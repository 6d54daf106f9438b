//! libFuzzer target: the first byte picks the entry point, the rest are its arguments.
//! A panic (not an `Err`) is a crash for libFuzzer.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let entries = kiln_fuzz::entries();
    let (_, f) = entries[pick as usize % entries.len()];
    let mut args = kiln_fuzz::Args::new(rest);
    let _ = f(&mut args);
});
