//! 0.7.0's constraints.

use super::{Validate, Violation, non_empty, non_empty_fields, not_negative};
use crate::v0_7 as pb;
use crate::v0_7::client_message::Payload;
use crate::v0_7::server_message::Request;
use crate::v0_7::thread_mcp_server::TransportConfig;

impl Validate for pb::RegisterRunnerRequest {
    fn validate(&self) -> Result<(), Violation> {
        for (i, sdk) in self.agent_sdks.iter().enumerate() {
            sdk_rules(sdk, &format!("agent_sdks[{i}]"))?;
        }
        Ok(())
    }
}

fn sdk_rules(sdk: &pb::AgentSdk, path: &str) -> Result<(), Violation> {
    non_empty(&sdk.name, || format!("{path}.name"))?;
    for (j, model) in sdk.models.iter().enumerate() {
        non_empty(&model.name, || format!("{path}.models[{j}].name"))?;
    }
    Ok(())
}

impl Validate for pb::ServerMessage {
    fn validate(&self) -> Result<(), Violation> {
        non_empty(&self.request_id, || "request_id".to_owned())?;
        match &self.request {
            None => Err(Violation {
                field: "request".to_owned(),
                rule: "must be set",
            }),
            Some(Request::CreateThreadRequest(r)) => {
                non_empty_fields!(r, "create_thread_request.", [thread_id, model, cli_secret])?;
                for (i, server) in r.mcp_servers.iter().enumerate() {
                    mcp_rules(server, &format!("create_thread_request.mcp_servers[{i}]"))?;
                }
                for (i, package) in r.git_skill_packages.iter().enumerate() {
                    let path = format!("create_thread_request.git_skill_packages[{i}]");
                    non_empty(&package.repository_url, || format!("{path}.repository_url"))?;
                    non_empty(&package.commit_reference, || {
                        format!("{path}.commit_reference")
                    })?;
                    for (j, skill) in package.skills.iter().enumerate() {
                        non_empty(&skill.directory_path, || {
                            format!("{path}.skills[{j}].directory_path")
                        })?;
                    }
                }
                Ok(())
            }
            Some(Request::DeleteThreadRequest(r)) => {
                non_empty_fields!(r, "delete_thread_request.", [thread_id])
            }
            Some(Request::CreateUserMessageRequest(r)) => {
                non_empty_fields!(r, "create_user_message_request.", [thread_id, text])
            }
            Some(Request::InterruptTurnRequest(r)) => {
                non_empty_fields!(r, "interrupt_turn_request.", [thread_id])
            }
            Some(Request::HeartbeatRequest(_) | Request::CodexConfigurationRequest(_)) => Ok(()),
        }
    }
}

fn mcp_rules(server: &pb::ThreadMcpServer, path: &str) -> Result<(), Violation> {
    non_empty(&server.server_id, || format!("{path}.server_id"))?;
    non_empty(&server.name, || format!("{path}.name"))?;
    let headers = match &server.transport_config {
        Some(TransportConfig::Stdio(stdio)) => {
            non_empty(&stdio.command, || format!("{path}.stdio.command"))?;
            (&stdio.env_vars, "stdio.env_vars")
        }
        Some(TransportConfig::StreamableHttp(http)) => {
            non_empty(&http.url, || format!("{path}.streamable_http.url"))?;
            (&http.headers, "streamable_http.headers")
        }
        None => return Ok(()),
    };
    for (i, header) in headers.0.iter().enumerate() {
        non_empty(&header.key, || format!("{path}.{}[{i}].key", headers.1))?;
    }
    Ok(())
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
            Some(Payload::ThreadUpdate(u)) => non_empty_fields!(u, "thread_update.", [thread_id]),
            Some(Payload::TurnUpdate(u)) => {
                non_empty_fields!(u, "turn_update.", [sdk_turn_id, thread_id])
            }
            Some(Payload::ItemUpdate(u)) => {
                non_empty_fields!(u, "item_update.", [sdk_item_id, thread_id, sdk_turn_id])?;
                match &u.command_execution_item {
                    Some(c) => non_empty_fields!(
                        c,
                        "item_update.command_execution_item.",
                        [command, cwd, process_id]
                    ),
                    None => Ok(()),
                }
            }
            Some(Payload::ThreadNameUpdate(u)) => {
                non_empty_fields!(u, "thread_name_update.", [thread_id])
            }
            Some(Payload::HeartbeatResponse(_)) => Ok(()),
            Some(Payload::AgentSdkUpdate(sdk)) => sdk_rules(sdk, "agent_sdk_update"),
            Some(Payload::CodexDeviceCode(c)) => {
                non_empty_fields!(c, "codex_device_code.", [device_code])
            }
            Some(Payload::ThreadTokenUsageUpdate(u)) => {
                non_empty_fields!(u, "thread_token_usage_update.", [thread_id, sdk_turn_id])?;
                let usages = [
                    ("total_usage", &u.total_usage),
                    ("last_usage", &u.last_usage),
                ];
                for (name, usage) in usages {
                    let Some(usage) = usage else { continue };
                    let counts = [
                        ("input_tokens", usage.input_tokens),
                        ("cached_input_tokens", usage.cached_input_tokens),
                        ("output_tokens", usage.output_tokens),
                        ("reasoning_output_tokens", usage.reasoning_output_tokens),
                        ("total_tokens", usage.total_tokens),
                    ];
                    for (field, value) in counts {
                        not_negative(value, || {
                            format!("thread_token_usage_update.{name}.{field}")
                        })?;
                    }
                }
                match u.model_context_window {
                    Some(window) => not_negative(window, || {
                        "thread_token_usage_update.model_context_window".to_owned()
                    }),
                    None => Ok(()),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_needs_its_id_and_a_thread_needs_its_secret() {
        let mut message = pb::ServerMessage {
            request_id: String::new(),
            request: Some(Request::HeartbeatRequest(pb::HeartbeatRequest {})),
        };
        assert_eq!(message.validate().unwrap_err().field, "request_id");
        message.request_id = "r1".into();
        assert_eq!(message.validate(), Ok(()));
        message.request = Some(Request::CreateThreadRequest(pb::CreateThreadRequest {
            thread_id: "t".into(),
            model: "m".into(),
            ..Default::default()
        }));
        assert_eq!(
            message.validate().unwrap_err().to_string(),
            "invalid create_thread_request.cli_secret: must not be empty"
        );
    }

    #[test]
    fn updates_name_their_thread_and_turn_and_counts_are_not_negative() {
        let turn = pb::ClientMessage {
            request_id: None,
            payload: Some(Payload::TurnUpdate(pb::TurnUpdate {
                sdk_turn_id: "u".into(),
                ..Default::default()
            })),
        };
        assert_eq!(turn.validate().unwrap_err().field, "turn_update.thread_id");
        let usage = pb::ClientMessage {
            request_id: None,
            payload: Some(Payload::ThreadTokenUsageUpdate(
                pb::ThreadTokenUsageUpdate {
                    thread_id: "t".into(),
                    sdk_turn_id: "u".into(),
                    last_usage: Some(pb::TokenUsageBreakdown {
                        output_tokens: -1,
                        ..Default::default()
                    }),
                    ..Default::default()
                },
            )),
        };
        assert_eq!(
            usage.validate().unwrap_err().field,
            "thread_token_usage_update.last_usage.output_tokens"
        );
    }
}
