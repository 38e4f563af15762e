//! Stock ticks: the reference `.txt` files and the shared CSVs share the row layout
//! `Date,Time,Price,Volume[,…]`; they differ in the date form (`MM/dd/yyyy` vs ISO, both accepted),
//! the header (CSV only) and how the file name gives the stream.
//!
//! Times are kept as written (the vendor's local clock, read as UTC), as the reference system does.

use std::path::Path;

use saams::Value;
use saams::api::Tuple;

use crate::fields::{date_days, number, set_field, split_csv, time_of_day_ms};

/// Dataset key and stream id of a reference text file `<DataSetKey>·<StreamID>·<Suffix>.txt`
/// (`·` is U+00B7). A name without two `·` separators gives dataset key `Stocks` and the file stem.
///
/// ```
/// use saams_datasets::stock::names_from_txt_file;
/// assert_eq!(names_from_txt_file("Forex·EURTRY·NoExpiry.txt"), ("Forex".into(), "EURTRY".into()));
/// assert_eq!(names_from_txt_file("ticks.txt"), ("Stocks".into(), "ticks".into()));
/// ```
pub fn names_from_txt_file(file_name: &str) -> (String, String) {
    let stem = stem(file_name);
    let parts: Vec<&str> = stem.split('\u{b7}').collect();
    if parts.len() >= 3 && !parts[0].is_empty() && !parts[1].is_empty() {
        (parts[0].to_string(), parts[1].to_string())
    } else {
        ("Stocks".to_string(), stem.to_string())
    }
}

/// Dataset key and stream id of a shared stock CSV
/// `<assetclass>_<market>_<SYMBOL>[_<contract>]_<tick|minute|…>_<trade|quote>.csv`:
/// stream id `SYMBOL` (`SYMBOL_contract` for futures), dataset key `<assetclass>_<market>`.
///
/// The dataset key keeps the market because the same symbol comes from several vendors
/// (`forex_fxcm_EURUSD` and `forex_oanda_EURUSD` are different streams); other names give dataset
/// key `Stocks` and the file stem.
///
/// ```
/// use saams_datasets::stock::names_from_csv_file;
/// assert_eq!(names_from_csv_file("equity_usa_SPY_tick_trade.csv"), ("equity_usa".into(), "SPY".into()));
/// assert_eq!(names_from_csv_file("future_cme_ES_201312_minute_trade.csv"), ("future_cme".into(), "ES_201312".into()));
/// assert_eq!(names_from_csv_file("prices.csv"), ("Stocks".into(), "prices".into()));
/// ```
pub fn names_from_csv_file(file_name: &str) -> (String, String) {
    let stem = stem(file_name);
    let parts: Vec<&str> = stem.split('_').collect();
    let resolution = ["tick", "second", "minute", "hour", "daily"];
    let ok = (parts.len() == 5 || parts.len() == 6)
        && ["trade", "quote"].contains(&parts[parts.len() - 1])
        && resolution.contains(&parts[parts.len() - 2])
        && parts.iter().all(|p| !p.is_empty());
    if ok {
        let stream = if parts.len() == 6 { format!("{}_{}", parts[2], parts[3]) } else { parts[2].to_string() };
        (format!("{}_{}", parts[0], parts[1]), stream)
    } else {
        ("Stocks".to_string(), stem.to_string())
    }
}

fn stem(file_name: &str) -> &str {
    let base = Path::new(file_name).file_name().and_then(|f| f.to_str()).unwrap_or(file_name);
    base.rsplit_once('.').map_or(base, |(s, _)| s)
}

/// One stock row: event time, price, volume.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StockRow {
    /// Milliseconds since the epoch (the row's clock read as UTC).
    pub time_ms: i64,
    /// Price.
    pub price: f64,
    /// Volume (fractional for crypto minute bars).
    pub volume: f64,
}

impl StockRow {
    /// The tuple of this row in stream `stream_id` of dataset `dataset_key`.
    pub fn to_tuple(&self, stream_id: &str, dataset_key: &str) -> Tuple {
        let mut t = Tuple::default();
        self.write_into(stream_id, dataset_key, &mut t);
        t
    }

    /// [`StockRow::to_tuple`] into `t`, reusing its strings and field names (a reader that keeps
    /// one tuple allocates nothing per row).
    ///
    /// ```
    /// use saams::api::Tuple;
    /// use saams_datasets::stock::parse_stock_line;
    /// let mut t = Tuple::from_json(r#"{"streamID":"A","dataSetKey":"D","x":"text","y":1,"z":2}"#).unwrap();
    /// let row = parse_stock_line("01/02/2019,00:00:01,6.0654,1").unwrap();
    /// row.write_into("EURTRY", "Forex", &mut t);
    /// assert_eq!(t, row.to_tuple("EURTRY", "Forex"));
    /// assert_eq!(t.fields.len(), 2);
    /// ```
    pub fn write_into(&self, stream_id: &str, dataset_key: &str, t: &mut Tuple) {
        t.stream_id.clear();
        t.stream_id.push_str(stream_id);
        t.dataset_key.clear();
        t.dataset_key.push_str(dataset_key);
        t.time_ms = Some(self.time_ms);
        set_field(&mut t.fields, 0, "price", Value::Num(self.price));
        set_field(&mut t.fields, 1, "volume", Value::Num(self.volume));
        t.fields.truncate(2);
    }
}

/// Parse `Date,Time,Price,Volume[,…]` (extra columns ignored) without allocating.
///
/// ```
/// use saams_datasets::stock::parse_stock_line;
/// let r = parse_stock_line("01/02/2019,00:00:01,6.0654,1").unwrap();
/// assert_eq!((r.time_ms, r.price, r.volume), (1_546_387_201_000, 6.0654, 1.0));
/// assert!(parse_stock_line("01/02/2019,00:00:01,6.0654").is_err());
/// assert!(parse_stock_line("01/02/2019,00:00:01,6.0654,-3").is_err());
/// ```
///
/// # Errors
/// A message naming the column: fewer than 4 columns, a bad date or time, a non-number, a
/// non-positive price or a negative volume.
pub fn parse_stock_line(line: &str) -> Result<StockRow, String> {
    // The four columns read; extra ones are not split.
    let mut cols = [""; 4];
    let n = split_csv(line, &mut cols).ok_or("unterminated quote")?;
    if n < 4 {
        return Err(format!("expected Date,Time,Price,Volume, got {n} column(s)"));
    }
    let days = date_days(cols[0].trim()).ok_or_else(|| format!("Date: bad date {:?}", cols[0]))?;
    let ms = time_of_day_ms(cols[1].trim()).ok_or_else(|| format!("Time: bad time {:?}", cols[1]))?;
    let price = number(cols[2], "Price")?;
    if price <= 0.0 {
        return Err(format!("Price: must be positive, got {price}"));
    }
    let volume = number(cols[3], "Volume")?;
    if volume < 0.0 {
        return Err(format!("Volume: must not be negative, got {volume}"));
    }
    Ok(StockRow { time_ms: days * 86_400_000 + ms, price, volume })
}
