//! Finds what the tests need from outside the clone (see `build/test_env.rs`).
include!("../build/test_env.rs");

fn main() {
    emit_test_environment(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".."), false);
}
