//! libFuzzer entry point (`cargo fuzz run scenario`): YAML text through the scenario loader
//! and, when it loads and is small, through the simulation. The checks are in
//! [`kubesched_fuzz::scenario`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubesched_fuzz::scenario(data));
