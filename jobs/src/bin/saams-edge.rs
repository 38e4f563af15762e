//! `saams-edge`: a device of a federated saams job (see `saams-edge --help`, docs/guide.md).

use clap::Parser;
use saams_jobs::edge_device::{EdgeCli, run};

fn main() {
    let cli = EdgeCli::parse();
    match run(&cli) {
        Ok(summary) => eprintln!("{}", summary.line(&cli.device)),
        Err(e) => {
            eprintln!("saams-edge: {e}");
            std::process::exit(2);
        }
    }
}
