//! [`ScenarioError`]: every way loading a scenario can fail, each displayed as one line.

use kubesched_config::echo;

/// Why a scenario could not be loaded. Every variant displays as one line that starts with
/// the file (with the document number when the object has no name to identify it).
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read ([`Scenario::from_files`](super::Scenario::from_files)).
    #[error("{file}: cannot read: {message}")]
    Read {
        /// The file name, as given.
        file: String,
        /// The operating system's message.
        message: String,
    },
    /// The text is not valid YAML (or JSON); `line` and `column` count from 1.
    #[error("{file}:{line}:{column}: {message}")]
    Syntax {
        /// The file name.
        file: String,
        /// The line of the error, from 1.
        line: usize,
        /// The column of the error, from 1.
        column: usize,
        /// The YAML parser's message, without its position.
        message: String,
    },
    /// The YAML parser failed without giving a position (e.g. its repetition limit, which
    /// guards against alias bombs).
    #[error("{file}: {message}")]
    Yaml {
        /// The file name.
        file: String,
        /// The YAML parser's message.
        message: String,
    },
    /// A document (or a `List` item) is not a mapping, so it cannot be an object.
    #[error("{document}: not a Kubernetes object: the document is {found}, not a mapping")]
    NotAnObject {
        /// The file and document, e.g. `x.yaml (document 2)`.
        document: String,
        /// What it is instead, e.g. `a sequence`.
        found: &'static str,
    },
    /// A document has no `apiVersion` or no `kind`, or one that is not a non-empty string.
    #[error("{document}: {field}: {problem}; every document needs apiVersion and kind")]
    MissingTypeField {
        /// The file and document.
        document: String,
        /// `apiVersion` or `kind`.
        field: &'static str,
        /// `missing`, or `must be a non-empty string`.
        problem: &'static str,
    },
    /// An object has no `metadata.name` (or an empty one).
    #[error("{document}: {}: metadata.name: missing", echo(kind))]
    MissingName {
        /// The file and document.
        document: String,
        /// The object's kind.
        kind: String,
    },
    /// A Pod or Node has a field its type does not know (usually a typo).
    #[error("{file}: {object}: {field}: unknown field{}", did_you_mean(suggestion))]
    UnknownField {
        /// The file (and document, when the object has no name).
        file: String,
        /// The object, e.g. `Pod default/web-1`.
        object: String,
        /// The path of the unknown field, e.g. `spec.schdulerName`.
        field: String,
        /// The closest known field at that level, if one is close enough.
        suggestion: Option<String>,
    },
    /// A resource quantity of a Pod or Node does not parse.
    #[error("{file}: {object}: {field}: invalid quantity {value:?}: {reason}")]
    InvalidQuantity {
        /// The file (and document, when the object has no name).
        file: String,
        /// The object, e.g. `Pod default/web-1`.
        object: String,
        /// The path of the quantity, e.g. `spec.containers[0].resources.requests.memory`.
        field: String,
        /// The quantity as written (a YAML number rendered as a string).
        value: String,
        /// The quantity parser's reason.
        reason: String,
    },
    /// A Pod or Node does not decode into its type (a wrong type, a missing required field,
    /// a bad timestamp, ...).
    #[error("{file}: {object}: {}{message}", path_prefix(field))]
    Decode {
        /// The file (and document, when the object has no name).
        file: String,
        /// The object, e.g. `Node n1`.
        object: String,
        /// The path of the offending field (empty for the object itself).
        field: String,
        /// The decoder's message.
        message: String,
    },
    /// A `kind` that is not one kubesched knows but looks like a typo of one (another
    /// case, a truncation, a letter or two off): kept silently it would be ignored.
    #[error(
        "{file}: kind: unknown kind {kind:?}, did you mean {suggestion}? (kinds kubesched does not read are ignored, so a typo would drop the object)"
    )]
    UnknownKind {
        /// The file (and document, when the object has no name).
        file: String,
        /// The kind as written.
        kind: String,
        /// The known kind it most likely stands for.
        suggestion: &'static str,
    },
    /// Two nodes have the same name.
    #[error(
        "{file}: Node {}: metadata.name: duplicate node name (first defined in {first})",
        echo(name)
    )]
    DuplicateNode {
        /// The file of the second node.
        file: String,
        /// The node name.
        name: String,
        /// Where the first node with that name is.
        first: String,
    },
    /// Two pods have the same namespace and name.
    #[error(
        "{file}: Pod {}/{}: metadata.name: duplicate pod (first defined in {first})",
        echo(namespace),
        echo(name)
    )]
    DuplicatePod {
        /// The file of the second pod.
        file: String,
        /// The pod namespace (after defaulting).
        namespace: String,
        /// The pod name.
        name: String,
        /// Where the first pod with that name is.
        first: String,
    },
    /// A second `KubeSchedulerConfiguration` document.
    #[error(
        "{document}: KubeSchedulerConfiguration: a second configuration document (the first is {first}); a scenario has at most one"
    )]
    DuplicateConfig {
        /// The file and document of the second configuration.
        document: String,
        /// The source of the first one.
        first: String,
    },
    /// A `List` whose `items` is not a sequence, or lists nested too deeply.
    #[error("{document}: {}: items: {message}", echo(kind))]
    InvalidList {
        /// The file and document.
        document: String,
        /// The list's kind.
        kind: String,
        /// What is wrong.
        message: String,
    },
}

pub(super) fn did_you_mean(suggestion: &Option<String>) -> String {
    suggestion
        .as_ref()
        .map(|s| format!(", did you mean {s}?"))
        .unwrap_or_default()
}

fn path_prefix(field: &str) -> String {
    if field.is_empty() {
        String::new()
    } else {
        format!("{field}: ")
    }
}
