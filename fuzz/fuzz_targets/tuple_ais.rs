//! The AIS CSV parsers (NOAA and Piraeus layouts): the input's first line is the header
//! (`AisColumns::from_header`), the following lines are rows. Byte 0 picks the format.
#![no_main]

use libfuzzer_sys::fuzz_target;
use saams_datasets::{Format, LineContext};

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    let format = if selector & 1 == 0 { Format::AisCsv } else { Format::PiraeusCsv };
    let mut lines = text.lines();
    let Ok(ctx) = LineContext::new(format, "fuzz.csv", lines.next()) else { return };
    for (n, line) in lines.enumerate() {
        let _ = ctx.parse_line(n as u64 + 2, line);
    }
});
