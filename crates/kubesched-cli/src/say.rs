//! The lines the command writes to standard error, each led by the program's name:
//! `kubesched: error: ...`, or `my-scheduler: error: ...` when an embedder's
//! [`Command::name`](crate::Command::name) renames the command. The macros take
//! `format!` arguments; the name is set once per run by `Command::run_from`.

use std::sync::RwLock;

/// The name when [`Command::name`](crate::Command::name) gives none.
pub(crate) const DEFAULT_PROGRAM: &str = "kubesched";

static PROGRAM: RwLock<String> = RwLock::new(String::new());

/// Makes `name` the program's name in the lines that follow.
pub(crate) fn set_program(name: &str) {
    let mut program = PROGRAM.write().unwrap_or_else(|e| e.into_inner());
    program.clear();
    program.push_str(name);
}

/// The program's name: [`DEFAULT_PROGRAM`] unless [`set_program`] said otherwise.
pub(crate) fn program() -> String {
    let program = PROGRAM.read().unwrap_or_else(|e| e.into_inner());
    if program.is_empty() {
        DEFAULT_PROGRAM.to_string()
    } else {
        program.clone()
    }
}

/// `PROGRAM: error: ...` on standard error.
macro_rules! say_error {
    ($($arg:tt)*) => {
        eprintln!("{}: error: {}", $crate::say::program(), format_args!($($arg)*))
    };
}

/// `PROGRAM: warning: ...` on standard error.
macro_rules! say_warning {
    ($($arg:tt)*) => {
        eprintln!("{}: warning: {}", $crate::say::program(), format_args!($($arg)*))
    };
}

/// `PROGRAM: note: ...` on standard error.
macro_rules! say_note {
    ($($arg:tt)*) => {
        eprintln!("{}: note: {}", $crate::say::program(), format_args!($($arg)*))
    };
}

/// `PROGRAM: ...` on standard error (what was written, how long it took).
macro_rules! say {
    ($($arg:tt)*) => {
        eprintln!("{}: {}", $crate::say::program(), format_args!($($arg)*))
    };
}
