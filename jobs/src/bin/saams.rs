//! `saams`: maintain stream synopses over tuples and answer requests, on one laptop or across
//! hosts (timely's `-w -n -p -h`). See `saams --help` and the README.

use clap::Parser;
use saams_jobs::cli::Cli;

fn main() {
    let cli = Cli::parse();
    match saams_jobs::job::run(cli) {
        Ok(summary) => eprintln!("{}", summary.line()),
        Err(e) => {
            eprintln!("saams: {e}");
            std::process::exit(2);
        }
    }
}
