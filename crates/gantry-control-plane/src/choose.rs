//! Where a new agent goes when the caller names no runner: a connected
//! runner offering the SDK (and model, if given), least loaded.

use std::collections::HashMap;

use crate::offers::{SdkOffer, includes};
use crate::store::RunnerLoad;

/// The least loaded of `connected` runners that offer `sdk` (and `model`):
/// fewest running turns, then fewest agents, then lowest id (stable).
pub(crate) fn least_loaded(
    connected: &[(String, Vec<SdkOffer>)],
    loads: &[RunnerLoad],
    sdk: &str,
    model: Option<&str>,
) -> Option<String> {
    let loads: HashMap<&str, (i64, i64)> = loads
        .iter()
        .map(|l| (l.runner_id.as_str(), (l.running_turns, l.agents)))
        .collect();
    connected
        .iter()
        .filter(|(_, offers)| includes(offers, sdk, model))
        .map(|(id, _)| {
            let (turns, agents) = loads.get(id.as_str()).copied().unwrap_or_default();
            (turns, agents, id)
        })
        .min()
        .map(|(_, _, id)| id.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::offers::ModelOffer;

    fn runner(id: &str, sdk: &str, models: &[&str]) -> (String, Vec<SdkOffer>) {
        let models = models
            .iter()
            .map(|m| ModelOffer {
                name: (*m).into(),
                reasoning: Vec::new(),
            })
            .collect();
        (
            id.into(),
            vec![SdkOffer {
                status: None,
                error: None,
                name: sdk.into(),
                models,
            }],
        )
    }

    fn load(id: &str, running_turns: i64, agents: i64) -> RunnerLoad {
        RunnerLoad {
            runner_id: id.into(),
            running_turns,
            agents,
        }
    }

    #[test]
    fn the_runner_with_fewest_running_turns_wins_among_those_offering_the_model() {
        let connected = vec![
            runner("a", "gantry", &["m1"]),
            runner("b", "gantry", &["m1", "m2"]),
            runner("c", "gantry", &["m2"]),
            runner("d", "codex", &["m1"]),
        ];
        let loads = vec![
            load("a", 3, 0),
            load("b", 1, 5),
            load("c", 0, 0),
            load("d", 0, 0),
        ];
        assert_eq!(
            least_loaded(&connected, &loads, "gantry", Some("m1")),
            Some("b".into())
        );
        assert_eq!(
            least_loaded(&connected, &loads, "gantry", None),
            Some("c".into())
        );
        assert_eq!(least_loaded(&connected, &loads, "gantry", Some("m9")), None);
    }

    #[test]
    fn equal_turns_go_to_the_runner_with_fewer_agents() {
        let connected = vec![runner("a", "gantry", &[]), runner("b", "gantry", &[])];
        let loads = vec![load("a", 0, 2), load("b", 0, 1)];
        assert_eq!(
            least_loaded(&connected, &loads, "gantry", None),
            Some("b".into())
        );
    }
}
