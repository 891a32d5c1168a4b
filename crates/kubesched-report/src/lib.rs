//! # kubesched-report
//!
//! `kubesched report`: one self-contained HTML page (inline style and script, no
//! network) that shows a simulation: the cluster's nodes with what they offer and what
//! is requested before and after, grouped by zone; every pod with its scheduler and its
//! node or the reason it is pending and its preemption victims; one pod opened as a heat
//! map of every node's verdict and each score plugin's weighted score; and two or more
//! scheduler configurations run over the same cluster side by side: the pods they place
//! differently and cluster-level figures (pods pending, nodes used, cpu and memory
//! utilisation spread, fragmentation). [`jsonl::figures_jsonl`] prints the same figures
//! as JSON Lines.
//!
//! [`build()`] runs the simulations and builds the typed [`model::Report`] from the
//! simulator's own results; [`html::render`] renders it through an askama template
//! (every name HTML-escaped). [`capacity::render`] and [`rollout::render`] draw
//! `kubesched capacity`'s and `kubesched rollout`'s answers as pages of charts, both
//! through the inline-SVG charts of [`chart`]. A report can also compare two
//! Kubernetes versions instead of configurations ([`Variant::features`]).

pub mod build;
pub mod capacity;
pub mod chart;
pub mod figures;
pub mod html;
pub mod jsonl;
pub mod model;
pub mod replay;
pub mod rollout;

pub use build::{Options, Variant, build, build_with};
