//! The fault fixtures' tests, one binary: a module per file. One binary links the dependency
//! tree once.
//!
//! Run one file with `cargo test -p toolwright-fault-fixtures --test it <file name>::`.

mod exactly_once_soak;
mod faults;
mod worked_example;
