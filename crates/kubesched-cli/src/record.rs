//! `kubesched record -o TRACE`: a live cluster written as a trace for `kubesched
//! replay` (kubesched-kube's recorder), until Ctrl-C or `--duration`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use kubesched_kube::cluster_dump::ClusterOptions;
use kubesched_kube::record::record_cluster;

/// `kubesched record`'s arguments.
#[derive(Args, Debug)]
pub struct RecordArgs {
    /// The trace file to write (JSON Lines, docs/replay.md); it is complete after every
    /// line, so a recorder that is killed leaves at most a cut-off last line.
    #[arg(short, long, value_name = "TRACE")]
    pub output: String,
    /// How long to record: a duration as Go writes one (`90s`, `1h30m`) or seconds.
    /// Without it, until Ctrl-C.
    #[arg(long, value_name = "DURATION")]
    pub duration: Option<String>,
    /// The kubeconfig (default: $KUBECONFIG, then ~/.kube/config, then the in-cluster
    /// service account).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context (default: its current-context).
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
}

/// Runs the command: exit 0 when the trace is complete, 2 when recording failed.
pub fn run(args: &RecordArgs) -> ExitCode {
    let duration = match &args.duration {
        None => None,
        Some(text) => match kubesched_replay::parse_duration(text) {
            Ok(seconds) => Some(std::time::Duration::from_secs_f64(seconds)),
            Err(e) => {
                say_error!("--duration {e}");
                return ExitCode::from(2);
            }
        },
    };
    let options = ClusterOptions {
        kubeconfig: args.kubeconfig.clone(),
        context: args.context.clone(),
    };
    say_note!(
        "recording into {} until {}",
        args.output,
        args.duration
            .as_ref()
            .map_or("Ctrl-C".to_string(), |d| format!(
                "{d} have passed or Ctrl-C"
            ))
    );
    match record_cluster(&options, &args.output, duration) {
        Ok((cluster, recorded)) => {
            for w in &recorded.warnings {
                say_warning!("{cluster}: {w}");
            }
            say_note!(
                "{}: {} object(s) at the start, {} change(s) over {} s, written to {}",
                cluster,
                recorded.at_start,
                recorded.changes,
                recorded.seconds,
                args.output
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            say_error!("{e}");
            ExitCode::from(2)
        }
    }
}
