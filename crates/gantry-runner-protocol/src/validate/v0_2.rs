//! 0.2.0's constraints.

use super::{Validate, Violation, non_empty, non_empty_fields, positive};
use crate::v0_2 as pb;
use crate::v0_2::client_message::Payload;
use crate::v0_2::server_message::Request;

impl Validate for pb::RegisterRunnerRequest {
    fn validate(&self) -> Result<(), Violation> {
        for (i, sdk) in self.agent_sdks.iter().enumerate() {
            non_empty(&sdk.name, || format!("agent_sdks[{i}].name"))?;
            for (j, model) in sdk.models.iter().enumerate() {
                non_empty(&model.name, || format!("agent_sdks[{i}].models[{j}].name"))?;
            }
        }
        Ok(())
    }
}

impl Validate for pb::ServerMessage {
    fn validate(&self) -> Result<(), Violation> {
        match &self.request {
            None => Err(Violation {
                field: "request".to_owned(),
                rule: "must be set",
            }),
            Some(Request::CreateAgentRequest(r)) => {
                non_empty_fields!(r, "create_agent_request.", [agent_id, agent_sdk])
            }
            Some(Request::DeleteAgentRequest(r)) => {
                non_empty_fields!(r, "delete_agent_request.", [agent_id])
            }
            Some(Request::CreateThreadRequest(r)) => {
                non_empty_fields!(r, "create_thread_request.", [agent_id, model])
            }
            Some(Request::DeleteThreadRequest(r)) => {
                non_empty_fields!(r, "delete_thread_request.", [agent_id, thread_id])
            }
            Some(Request::CreateUserMessageRequest(r)) => {
                non_empty_fields!(
                    r,
                    "create_user_message_request.",
                    [agent_id, thread_id, text]
                )
            }
            Some(Request::InstallSkillsMpRequest(r)) => {
                non_empty_fields!(r, "install_skills_mp_request.", [agent_id, package_name])
            }
        }
    }
}

impl Validate for pb::ClientMessage {
    fn validate(&self) -> Result<(), Violation> {
        match &self.payload {
            None => Err(Violation {
                field: "payload".to_owned(),
                rule: "must be set",
            }),
            Some(Payload::RequestError(e)) => {
                non_empty_fields!(e, "request_error.", [error_message])
            }
            Some(Payload::AgentUpdate(u)) => non_empty_fields!(u, "agent_update.", [agent_id]),
            Some(Payload::ThreadUpdate(u)) => non_empty_fields!(u, "thread_update.", [thread_id]),
            Some(Payload::TurnUpdate(u)) => non_empty_fields!(u, "turn_update.", [sdk_turn_id]),
            Some(Payload::ItemUpdate(u)) => {
                non_empty(&u.sdk_item_id, || "item_update.sdk_item_id".to_owned())?;
                match &u.command_execution_item {
                    Some(c) => non_empty_fields!(
                        c,
                        "item_update.command_execution_item.",
                        [command, cwd, process_id]
                    ),
                    None => Ok(()),
                }
            }
            Some(Payload::SkillMpUpdate(u)) => {
                non_empty_fields!(u, "skill_mp_update.", [agent_id, package_name])
            }
        }
    }
}

impl Validate for pb::ListGithubInstallationsForRunnerResponse {
    fn validate(&self) -> Result<(), Violation> {
        for (i, installation) in self.installations.iter().enumerate() {
            positive(
                installation.installation_id,
                &format!("installations[{i}].installation_id"),
            )?;
        }
        Ok(())
    }
}

impl Validate for pb::GetGithubInstallationAccessTokenForRunnerRequest {
    fn validate(&self) -> Result<(), Violation> {
        positive(self.installation_id, "installation_id")
    }
}

impl Validate for pb::GetGithubInstallationAccessTokenForRunnerResponse {
    fn validate(&self) -> Result<(), Violation> {
        non_empty(&self.access_token, || "access_token".to_owned())?;
        for (i, repo) in self.repositories.iter().enumerate() {
            non_empty(repo, || format!("repositories[{i}]"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_required_field_is_named_with_its_path() {
        let msg = pb::ServerMessage {
            request_id: Some("r1".into()),
            request: Some(Request::CreateThreadRequest(pb::CreateThreadRequest {
                agent_id: "a".into(),
                model: String::new(),
                reasoning_level: None,
            })),
        };
        let err = msg.validate().unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid create_thread_request.model: must not be empty"
        );
    }

    #[test]
    fn a_message_without_a_request_is_refused() {
        let msg = pb::ServerMessage::default();
        assert_eq!(msg.validate().unwrap_err().field, "request");
    }

    #[test]
    fn nested_command_fields_and_model_names_are_checked() {
        let msg = pb::ClientMessage {
            request_id: None,
            payload: Some(Payload::ItemUpdate(pb::ItemUpdate {
                sdk_item_id: "i".into(),
                command_execution_item: Some(pb::CommandExecutionItem {
                    command: "ls".into(),
                    cwd: "/w".into(),
                    process_id: String::new(),
                    output: None,
                }),
                ..Default::default()
            })),
        };
        assert_eq!(
            msg.validate().unwrap_err().field,
            "item_update.command_execution_item.process_id"
        );
        let register = pb::RegisterRunnerRequest {
            agent_sdks: vec![pb::AgentSdk {
                name: "gantry".into(),
                models: vec![pb::LlmModel::default()],
            }],
        };
        assert_eq!(
            register.validate().unwrap_err().field,
            "agent_sdks[0].models[0].name"
        );
    }

    #[test]
    fn installation_ids_start_at_one() {
        let request = pb::GetGithubInstallationAccessTokenForRunnerRequest { installation_id: 0 };
        assert_eq!(request.validate().unwrap_err().rule, "must be at least 1");
    }

    #[test]
    fn every_constraint_on_what_runners_send_is_checked_by_name() {
        let update = |payload| pb::ClientMessage {
            request_id: None,
            payload: Some(payload),
        };
        let command = |command: &str, cwd: &str, process_id: &str| {
            update(Payload::ItemUpdate(pb::ItemUpdate {
                sdk_item_id: "i".into(),
                command_execution_item: Some(pb::CommandExecutionItem {
                    command: command.into(),
                    cwd: cwd.into(),
                    process_id: process_id.into(),
                    output: None,
                }),
                ..Default::default()
            }))
        };
        let cases = [
            (
                update(Payload::RequestError(pb::RequestError::default())),
                "request_error.error_message",
            ),
            (
                update(Payload::AgentUpdate(pb::AgentUpdate::default())),
                "agent_update.agent_id",
            ),
            (
                update(Payload::ThreadUpdate(pb::ThreadUpdate::default())),
                "thread_update.thread_id",
            ),
            (
                update(Payload::TurnUpdate(pb::TurnUpdate::default())),
                "turn_update.sdk_turn_id",
            ),
            (
                update(Payload::ItemUpdate(pb::ItemUpdate::default())),
                "item_update.sdk_item_id",
            ),
            (
                command("", "/w", "1"),
                "item_update.command_execution_item.command",
            ),
            (
                command("ls", "", "1"),
                "item_update.command_execution_item.cwd",
            ),
            (
                command("ls", "/w", ""),
                "item_update.command_execution_item.process_id",
            ),
            (
                update(Payload::SkillMpUpdate(pb::SkillMpUpdate {
                    package_name: "p".into(),
                    ..Default::default()
                })),
                "skill_mp_update.agent_id",
            ),
            (
                update(Payload::SkillMpUpdate(pb::SkillMpUpdate {
                    agent_id: "a".into(),
                    ..Default::default()
                })),
                "skill_mp_update.package_name",
            ),
        ];
        for (message, field) in cases {
            assert_eq!(message.validate().unwrap_err().field, field);
        }
        let fine = command("ls", "/w", "1");
        assert_eq!(fine.validate(), Ok(()));

        let sdk = pb::RegisterRunnerRequest {
            agent_sdks: vec![pb::AgentSdk::default()],
        };
        assert_eq!(sdk.validate().unwrap_err().field, "agent_sdks[0].name");
        let list = pb::ListGithubInstallationsForRunnerResponse {
            installations: vec![pb::GithubInstallationForRunner { installation_id: 0 }],
        };
        assert_eq!(
            list.validate().unwrap_err().field,
            "installations[0].installation_id"
        );
        let token = |access_token: &str, repositories: Vec<String>| {
            pb::GetGithubInstallationAccessTokenForRunnerResponse {
                installation_id: 7,
                access_token: access_token.into(),
                access_token_expires_unix_time_ms: 0,
                repositories,
            }
        };
        assert_eq!(
            token("", vec![]).validate().unwrap_err().field,
            "access_token"
        );
        assert_eq!(
            token("t", vec!["a/b".into(), String::new()])
                .validate()
                .unwrap_err()
                .field,
            "repositories[1]"
        );
    }
}
