//! The crate's error type, [`ConfigError`], and [`FieldError`], one validation
//! finding worded as apimachinery's `field.Error` words it.

use std::fmt;

/// What is wrong with one field, in the categories of apimachinery's `field.ErrorType`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldErrorKind {
    /// `Invalid value: <value>: <detail>`.
    Invalid {
        /// The offending value, already formatted as Go formats it (strings quoted).
        value: String,
        /// Why the value is invalid.
        detail: String,
    },
    /// `Required value` (with an optional detail).
    Required {
        /// Extra explanation; may be empty.
        detail: String,
    },
    /// `Duplicate value: <value>`.
    Duplicate {
        /// The repeated value, formatted as Go formats it.
        value: String,
    },
    /// `Unsupported value: <value>: supported values: ...`.
    NotSupported {
        /// The offending value, formatted as Go formats it.
        value: String,
        /// The values that are accepted.
        supported: Vec<String>,
    },
    /// `Forbidden: <detail>`.
    Forbidden {
        /// Why the field may not be set.
        detail: String,
    },
}

/// One validation finding: a field path (e.g. `profiles[0].schedulerName`) and what is wrong.
///
/// Displayed exactly as Go's `field.Error` is, e.g.
/// `profiles[1].schedulerName: Duplicate value: "a" (already the name of profiles[0].schedulerName)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The field path, in Go's notation (`a.b[2].c`).
    pub path: String,
    /// What is wrong.
    pub kind: FieldErrorKind,
}

/// An input string as it may be echoed in a one-line message: unchanged when every
/// character is visible and not whitespace (`web-1`, `example.com/gpu`), else quoted and
/// escaped as Rust's `{:?}` does (`"a\nb"`, `""`), so that a newline, a control character
/// or an invisible one in a name, a kind or a key can neither split a message nor hide.
pub fn echo(s: &str) -> std::borrow::Cow<'_, str> {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| !c.is_whitespace() && c != '"' && c.escape_debug().nth(1).is_none());
    if plain {
        std::borrow::Cow::Borrowed(s)
    } else {
        std::borrow::Cow::Owned(format!("{s:?}"))
    }
}

/// Quote a string as Go's `%q` does (close enough for the values that appear in configs).
pub(crate) fn go_quote(s: &str) -> String {
    // serde_json's string escaping matches %q for printable text.
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

impl FieldError {
    /// `Invalid value` for a string value (quoted in the message).
    pub fn invalid_str(path: impl Into<String>, value: &str, detail: impl Into<String>) -> Self {
        Self::invalid_raw(path, go_quote(value), detail)
    }

    /// `Invalid value` for a value already formatted (numbers, JSON).
    pub fn invalid_raw(
        path: impl Into<String>,
        value: impl Into<String>,
        detail: impl Into<String>,
    ) -> Self {
        FieldError {
            path: path.into(),
            kind: FieldErrorKind::Invalid {
                value: value.into(),
                detail: detail.into(),
            },
        }
    }

    /// `Required value`.
    pub fn required(path: impl Into<String>, detail: impl Into<String>) -> Self {
        FieldError {
            path: path.into(),
            kind: FieldErrorKind::Required {
                detail: detail.into(),
            },
        }
    }

    /// `Duplicate value` for a string value.
    pub fn duplicate(path: impl Into<String>, value: &str) -> Self {
        FieldError {
            path: path.into(),
            kind: FieldErrorKind::Duplicate {
                value: go_quote(value),
            },
        }
    }

    /// `Unsupported value` for a string value.
    pub fn not_supported(path: impl Into<String>, value: &str, supported: &[&str]) -> Self {
        FieldError {
            path: path.into(),
            kind: FieldErrorKind::NotSupported {
                value: go_quote(value),
                supported: supported.iter().map(|s| s.to_string()).collect(),
            },
        }
    }

    /// `Forbidden`.
    pub fn forbidden(path: impl Into<String>, detail: impl Into<String>) -> Self {
        FieldError {
            path: path.into(),
            kind: FieldErrorKind::Forbidden {
                detail: detail.into(),
            },
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.path.is_empty() {
            write!(f, "{}: ", self.path)?;
        }
        match &self.kind {
            FieldErrorKind::Invalid { value, detail } => {
                write!(f, "Invalid value: {value}")?;
                if !detail.is_empty() {
                    write!(f, ": {detail}")?;
                }
                Ok(())
            }
            FieldErrorKind::Required { detail } => {
                write!(f, "Required value")?;
                if !detail.is_empty() {
                    write!(f, ": {detail}")?;
                }
                Ok(())
            }
            FieldErrorKind::Duplicate { value } => write!(f, "Duplicate value: {value}"),
            FieldErrorKind::NotSupported { value, supported } => {
                write!(f, "Unsupported value: {value}")?;
                if !supported.is_empty() {
                    let quoted: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
                    write!(f, ": supported values: {}", quoted.join(", "))?;
                }
                Ok(())
            }
            FieldErrorKind::Forbidden { detail } => write!(f, "Forbidden: {detail}"),
        }
    }
}

/// Join field errors for display, on one line: `N errors: first; second; ...`.
fn join_errors(errors: &[FieldError]) -> String {
    match errors {
        [] => "invalid configuration".to_string(),
        [one] => one.to_string(),
        many => {
            let all: Vec<String> = many.iter().map(FieldError::to_string).collect();
            format!("{} errors: {}", many.len(), all.join("; "))
        }
    }
}

fn suggestion_text(suggestion: &Option<String>, expected: &[String]) -> String {
    match suggestion {
        Some(s) => format!(", did you mean {s}?"),
        None if expected.is_empty() => " (this object has no fields)".to_string(),
        None => format!(" (known fields: {})", expected.join(", ")),
    }
}

fn with_path(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!("{path}: ")
    }
}

/// Every way loading, decoding or validating a `KubeSchedulerConfiguration` can fail.
///
/// Each variant carries `file` (the file name given by the caller, or a description such
/// as `NodeResourcesFit args`) and, where there is one, the field path in Go's notation.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// The text is not well-formed YAML or JSON (line and column are 1-based when known).
    #[error("{file}:{}: invalid {format}: {message}", location(*.line, *.column))]
    Syntax {
        /// File name.
        file: String,
        /// `YAML` or `JSON`.
        format: &'static str,
        /// 1-based line of the error, when known.
        line: Option<usize>,
        /// 1-based column of the error, when known.
        column: Option<usize>,
        /// The parser's message.
        message: String,
    },
    /// A value that JSON cannot represent appeared in YAML (a tag, NaN, a complex mapping key).
    #[error("{file}: {}{message}", with_path(path))]
    Unrepresentable {
        /// File name.
        file: String,
        /// Field path of the value.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The document is not a mapping (e.g. a bare list or scalar).
    #[error(
        "{file}: expected a KubeSchedulerConfiguration mapping at the top level, found {found}"
    )]
    NotAMapping {
        /// File name.
        file: String,
        /// What was found instead (`a sequence`, `a string`, ...).
        found: String,
    },
    /// `apiVersion` is missing.
    #[error("{file}: apiVersion: Required value: must be kubescheduler.config.k8s.io/v1")]
    MissingApiVersion {
        /// File name.
        file: String,
    },
    /// `apiVersion` names a version kubesched does not load.
    #[error(
        "{file}: apiVersion: unsupported version {api_version:?}; kubesched loads kubescheduler.config.k8s.io/v1 (and, with a warning, v1beta2 and v1beta3)"
    )]
    UnsupportedApiVersion {
        /// File name.
        file: String,
        /// The `apiVersion` given.
        api_version: String,
    },
    /// `kind` is missing.
    #[error("{file}: kind: Required value: must be KubeSchedulerConfiguration")]
    MissingKind {
        /// File name.
        file: String,
    },
    /// A ConfigMap given as the configuration does not hold exactly one.
    #[error("{what}: {message}")]
    ConfigMap {
        /// `FILE: ConfigMap NAMESPACE/NAME`.
        what: String,
        /// What is wrong.
        message: String,
    },
    /// `kind` is not `KubeSchedulerConfiguration`.
    #[error("{file}: kind: {kind:?} is not KubeSchedulerConfiguration")]
    WrongKind {
        /// File name.
        file: String,
        /// The `kind` given.
        kind: String,
    },
    /// A field that this type does not have (strict decoding, as kube-scheduler does).
    #[error(
        "{file}: {path}: unknown field{}",
        suggestion_text(suggestion, expected)
    )]
    UnknownField {
        /// File name.
        file: String,
        /// Path of the unknown field, its own name included (`profiles[0].schdulerName`).
        path: String,
        /// The closest known field, when one is close enough to be a likely typo.
        suggestion: Option<String>,
        /// Every field the object accepts.
        expected: Vec<String>,
    },
    /// A field that existed in an older config version and no longer exists in v1.
    #[error(
        "{file}: {path}: field was removed in {removed_in} and is not part of kubescheduler.config.k8s.io/v1"
    )]
    RemovedField {
        /// File name.
        file: String,
        /// Path of the field.
        path: String,
        /// The API version that removed it.
        removed_in: String,
    },
    /// A value of the wrong type or out of range for its field (`weight: "3"`, an int32 overflow, ...).
    #[error("{file}: {}{message}", with_path(path))]
    Decode {
        /// File name.
        file: String,
        /// Field path of the value.
        path: String,
        /// What is wrong, in serde's words or Go's.
        message: String,
    },
    /// Plugin args carry a `kind` that is not `<PluginName>Args`.
    #[error(
        "{file}: {path}: args of kind {} given for plugin {plugin}",
        echo(kind)
    )]
    ArgsKind {
        /// File name.
        file: String,
        /// Path of the `kind` field.
        path: String,
        /// The plugin the args were given for.
        plugin: String,
        /// The `kind` given.
        kind: String,
    },
    /// `extenders` is not empty: kubesched has no HTTP extenders.
    #[error("{file}: extenders: extenders are not supported by kubesched")]
    ExtendersUnsupported {
        /// File name.
        file: String,
    },
    /// The configuration decoded but failed kube-scheduler's validation; every finding is listed.
    #[error("{file}: {}", join_errors(errors))]
    Invalid {
        /// File name.
        file: String,
        /// Every validation finding, in Go's order.
        errors: Vec<FieldError>,
    },
}

fn location(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!("{l}:{c}"),
        (Some(l), None) => format!("{l}"),
        _ => "?".to_string(),
    }
}

impl ConfigError {
    /// The validation findings of an [`ConfigError::Invalid`], empty for other variants.
    pub fn field_errors(&self) -> &[FieldError] {
        match self {
            ConfigError::Invalid { errors, .. } => errors,
            _ => &[],
        }
    }
}
