//! The stock text and CSV line parsers. Byte 0 picks the format; the rest is the file's lines.
#![no_main]

use libfuzzer_sys::fuzz_target;
use saams_datasets::stock::parse_stock_line;
use saams_datasets::{Format, LineContext};

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    let (format, name) = if selector & 1 == 0 {
        (Format::StockTxt, "Forex·EURTRY·NoExpiry.txt")
    } else {
        (Format::StockCsv, "equity_usa_SPY_tick_trade.csv")
    };
    let ctx = LineContext::new(format, name, text.lines().next()).expect("stock formats accept any first line");
    for (n, line) in text.lines().enumerate() {
        let _ = ctx.parse_line(n as u64 + 1, line);
        let _ = parse_stock_line(line);
    }
});
