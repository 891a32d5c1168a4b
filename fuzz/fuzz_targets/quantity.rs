//! libFuzzer entry point (`cargo fuzz run quantity`): arbitrary text through the quantity
//! parser. The checks are in [`kubesched_fuzz::quantity`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubesched_fuzz::quantity(data));
