//! placeholder
pub mod quantity;
