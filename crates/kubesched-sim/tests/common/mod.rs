//! What the test binaries that run the repository's own case folders (`cases-sigs`,
//! `cases-gangs`, `cases-gangs-v1.35`) share: listing a folder and running its cases
//! (`cases`), comparing a case's expected lines with a run's (`lines`).

pub mod cases;
pub mod lines;
