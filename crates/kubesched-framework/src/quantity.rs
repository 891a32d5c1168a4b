//! Kubernetes resource quantities (`500m`, `1.5Gi`, `2e9`) parsed by apimachinery's rules.
//!
//! PLACEHOLDER: the real implementation is being written. The public API below is fixed.

use std::fmt;

/// A parsed resource quantity, stored exactly as the API server stores it
/// (rounded up to milli units).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Quantity {
    milli: i128,
}

/// Why a quantity string could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")]
pub struct QuantityError;

impl Quantity {
    /// Parses a quantity string.
    pub fn parse(_s: &str) -> Result<Quantity, QuantityError> {
        Err(QuantityError)
    }
    /// The value in milli units, rounded up (apimachinery `MilliValue`).
    pub fn milli_value(&self) -> i64 {
        self.milli as i64
    }
    /// The value in whole units, rounded up (apimachinery `Value`).
    pub fn value(&self) -> i64 {
        (self.milli / 1000) as i64
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}m", self.milli)
    }
}
