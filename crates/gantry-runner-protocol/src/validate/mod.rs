//! The protos' `buf.validate` constraints, enforced by hand, one module per
//! version: a message that breaks one is refused with the field's path,
//! never processed.

use std::fmt;

mod v0_2;
mod v0_7;

/// A broken constraint: which field, and what it must be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Dotted path from the checked message, e.g. `create_thread_request.model`.
    pub field: String,
    /// What the field must be.
    pub rule: &'static str,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid {}: {}", self.field, self.rule)
    }
}

impl std::error::Error for Violation {}

/// A message whose fields carry `buf.validate` constraints.
pub trait Validate {
    /// `Ok` when every constraint holds, else the first broken one.
    fn validate(&self) -> Result<(), Violation>;
}

/// `string.min_len = 1`.
pub(crate) fn non_empty(value: &str, field: impl FnOnce() -> String) -> Result<(), Violation> {
    if value.is_empty() {
        return Err(Violation {
            field: field(),
            rule: "must not be empty",
        });
    }
    Ok(())
}

/// `int64.gte = 1`.
pub(crate) fn positive(value: i64, field: &str) -> Result<(), Violation> {
    if value < 1 {
        return Err(Violation {
            field: field.to_owned(),
            rule: "must be at least 1",
        });
    }
    Ok(())
}

/// Checks `string.min_len = 1` on each named field, prefixing its path.
macro_rules! non_empty_fields {
    ($msg:expr, $prefix:literal, [$($field:ident),+ $(,)?]) => {{
        $(non_empty(&$msg.$field, || concat!($prefix, stringify!($field)).to_owned())?;)+
        Ok(())
    }};
}

pub(crate) use non_empty_fields;

/// `int64.gte = 0`.
pub(crate) fn not_negative(value: i64, field: impl FnOnce() -> String) -> Result<(), Violation> {
    if value < 0 {
        return Err(Violation {
            field: field(),
            rule: "must not be negative",
        });
    }
    Ok(())
}
