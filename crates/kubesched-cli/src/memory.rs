//! `--cache-memory`, shared by `simulate`, `capacity`, `rollout`, `report` and `bench`:
//! how much memory exact incremental scheduling may keep (docs/architecture.md), for
//! clusters where its default (128 MiB, or 20 KiB per node when that is more) is too
//! much for the machine or too little for the number of pod shapes.

use clap::Args;
use kubesched_framework::quantity::Quantity;
use kubesched_sim::SimulationOptions;

/// The memory option.
#[derive(Args, Debug, Clone, Default)]
pub struct CacheArgs {
    /// How much memory exact incremental scheduling may keep (each pod shape's
    /// verdicts and scores on every node), as a Kubernetes quantity: `512Mi`, `2Gi`.
    /// Past it, the shapes used least recently are dropped and computed again when
    /// they come back: decisions never change, only the time they take. `0` keeps
    /// nothing (every node is evaluated for every pod). Default: 128Mi, or 20Ki per
    /// node when that is more.
    #[arg(long, value_name = "QUANTITY", value_parser = parse_cache_memory)]
    pub cache_memory: Option<usize>,
}

/// Bytes from a quantity (`512Mi`, `1G`, `1048576`), fractions of a byte rounded up.
fn parse_cache_memory(text: &str) -> Result<usize, String> {
    let quantity = Quantity::parse(text)
        .map_err(|e| format!("{e} (a quantity of bytes, such as 512Mi or 2Gi)"))?;
    if quantity.milli() < 0 {
        return Err("a negative amount of memory; give 0 to keep nothing".to_string());
    }
    let bytes = (quantity.milli() + 999) / 1000;
    usize::try_from(bytes)
        .map_err(|_| format!("{text} bytes is more than this machine can address"))
}

impl CacheArgs {
    /// `options` with the memory asked for: incremental scheduling off for `0`, else
    /// its budget.
    pub fn apply(&self, options: SimulationOptions) -> SimulationOptions {
        match self.cache_memory {
            None => options,
            Some(0) => SimulationOptions {
                incremental: false,
                ..options
            },
            Some(bytes) => SimulationOptions {
                incremental_budget: Some(bytes),
                ..options
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_memory_is_a_quantity_of_bytes() {
        assert_eq!(parse_cache_memory("512Mi"), Ok(512 << 20));
        assert_eq!(parse_cache_memory("2G"), Ok(2_000_000_000));
        assert_eq!(parse_cache_memory("0"), Ok(0));
        // A fraction of a byte is a whole byte.
        assert_eq!(parse_cache_memory("1500m"), Ok(2));
        let negative = parse_cache_memory("-1Mi").unwrap_err();
        assert!(negative.contains("negative"), "{negative}");
        let typo = parse_cache_memory("512MB").unwrap_err();
        assert!(typo.contains("such as 512Mi"), "{typo}");
    }

    #[test]
    fn zero_turns_incremental_scheduling_off_and_a_size_is_its_budget() {
        let default = SimulationOptions::default();
        let off = CacheArgs {
            cache_memory: Some(0),
        }
        .apply(default.clone());
        assert!(!off.incremental);
        let sized = CacheArgs {
            cache_memory: Some(1 << 30),
        }
        .apply(default.clone());
        assert!(sized.incremental);
        assert_eq!(sized.incremental_budget, Some(1 << 30));
        let unset = CacheArgs::default().apply(default);
        assert!(unset.incremental);
        assert_eq!(unset.incremental_budget, None);
    }
}
