//! The CodeAgentService implementation: one module per rpc group of the
//! proto, each rpc a function from its request to its response over the
//! engine's public API. This file only wires the rpcs to those functions.

mod context;
mod control;
mod cron;
mod events;
mod generation;
mod hitl;
mod lanes;
mod lifecycle;
mod lsp;
mod mcp;
mod memory;
mod observability;
mod permissions;
mod planning;
mod provider_models;
mod providers;
mod sessions;
mod skill_catalog;
mod skills;
mod todos;

use std::pin::Pin;
use std::sync::Arc;

use futures_util::{Stream, TryStreamExt};
use tonic::{Request, Response, Status};

use crate::pb;
use crate::state::Ctx;

/// A server-streaming rpc's response stream.
pub(crate) type RpcStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// The service: a handle on the shared [`Ctx`].
#[derive(Clone)]
pub struct CodeAgent {
    ctx: Arc<Ctx>,
}

impl CodeAgent {
    /// The service over `ctx`.
    pub(crate) fn new(ctx: Arc<Ctx>) -> Self {
        Self { ctx }
    }
}

/// Implements the generated trait by delegating each rpc to its function;
/// every status message is bounded (`gantry_grpc::bounded`), a backstop
/// for client input an error echoes unclipped. The `*_traced` rpcs start
/// a turn: their function also gets the request's `traceparent` metadata.
macro_rules! service {
    (
        unary { $($u:ident($ureq:ident) -> $uresp:ident = $uh:path;)* }
        unary_with_caller { $($c:ident($creq:ident) -> $cresp:ident = $ch:path;)* }
        unary_traced { $($t:ident($treq:ident) -> $tresp:ident = $th:path;)* }
        streaming { $($s:ident($sreq:ident) -> $sty:ident<$sitem:ident> = $sh:path;)* }
        streaming_traced {
            $($ts:ident($tsreq:ident) -> $tsty:ident<$tsitem:ident> = $tsh:path;)*
        }
    ) => {
        #[tonic::async_trait]
        impl pb::code_agent_service_server::CodeAgentService for CodeAgent {
            $(
                async fn $u(
                    &self,
                    request: Request<pb::$ureq>,
                ) -> Result<Response<pb::$uresp>, Status> {
                    $uh(&self.ctx, request.into_inner())
                        .await
                        .map(Response::new)
                        .map_err(gantry_grpc::bounded)
                }
            )*
            $(
                async fn $c(
                    &self,
                    request: Request<pb::$creq>,
                ) -> Result<Response<pb::$cresp>, Status> {
                    let caller = crate::auth::Caller::of(&request);
                    $ch(&self.ctx, request.into_inner(), caller)
                        .await
                        .map(Response::new)
                        .map_err(gantry_grpc::bounded)
                }
            )*
            $(
                async fn $t(
                    &self,
                    request: Request<pb::$treq>,
                ) -> Result<Response<pb::$tresp>, Status> {
                    let trace_parent = crate::trace_context::traceparent(&request);
                    $th(&self.ctx, request.into_inner(), trace_parent)
                        .await
                        .map(Response::new)
                        .map_err(gantry_grpc::bounded)
                }
            )*
            $(
                type $sty = RpcStream<pb::$sitem>;

                async fn $s(
                    &self,
                    request: Request<pb::$sreq>,
                ) -> Result<Response<Self::$sty>, Status> {
                    match $sh(&self.ctx, request.into_inner()).await {
                        Ok(stream) => Ok(Response::new(
                            Box::pin(stream.map_err(gantry_grpc::bounded)) as RpcStream<_>,
                        )),
                        Err(status) => Err(gantry_grpc::bounded(status)),
                    }
                }
            )*
            $(
                type $tsty = RpcStream<pb::$tsitem>;

                async fn $ts(
                    &self,
                    request: Request<pb::$tsreq>,
                ) -> Result<Response<Self::$tsty>, Status> {
                    let trace_parent = crate::trace_context::traceparent(&request);
                    match $tsh(&self.ctx, request.into_inner(), trace_parent).await {
                        Ok(stream) => Ok(Response::new(
                            Box::pin(stream.map_err(gantry_grpc::bounded)) as RpcStream<_>,
                        )),
                        Err(status) => Err(gantry_grpc::bounded(status)),
                    }
                }
            )*
        }
    };
}

service! {
    unary {
        health_check(HealthCheckRequest) -> HealthCheckResponse = lifecycle::health_check;
        get_capabilities(GetCapabilitiesRequest) -> GetCapabilitiesResponse = lifecycle::get_capabilities;
        initialize(InitializeRequest) -> InitializeResponse = lifecycle::initialize;
        shutdown(ShutdownRequest) -> ShutdownResponse = lifecycle::shutdown;
        create_session(CreateSessionRequest) -> CreateSessionResponse = sessions::create_session;
        destroy_session(DestroySessionRequest) -> DestroySessionResponse = sessions::destroy_session;
        list_sessions(ListSessionsRequest) -> ListSessionsResponse = sessions::list_sessions;
        get_session(GetSessionRequest) -> GetSessionResponse = sessions::get_session;
        configure_session(ConfigureSessionRequest) -> ConfigureSessionResponse = sessions::configure_session;
        get_messages(GetMessagesRequest) -> GetMessagesResponse = sessions::get_messages;
        restore_session(RestoreSessionRequest) -> RestoreSessionResponse = sessions::restore_session;
        load_skill(LoadSkillRequest) -> LoadSkillResponse = skills::load_skill;
        unload_skill(UnloadSkillRequest) -> UnloadSkillResponse = skills::unload_skill;
        list_skills(ListSkillsRequest) -> ListSkillsResponse = skills::list_skills;
        get_claude_code_skills(GetClaudeCodeSkillsRequest) -> GetClaudeCodeSkillsResponse = skills::get_claude_code_skills;
        get_skill(GetSkillRequest) -> GetSkillResponse = skill_catalog::get_skill;
        search_skills(SearchSkillsRequest) -> SearchSkillsResponse = skill_catalog::search_skills;
        install_skill(InstallSkillRequest) -> InstallSkillResponse = skill_catalog::install_skill;
        load_skills_from_dir(LoadSkillsFromDirRequest) -> LoadSkillsFromDirResponse = skill_catalog::load_skills_from_dir;
        get_context_usage(GetContextUsageRequest) -> GetContextUsageResponse = context::get_context_usage;
        compact_context(CompactContextRequest) -> CompactContextResponse = context::compact_context;
        clear_context(ClearContextRequest) -> ClearContextResponse = context::clear_context;
        cancel(CancelRequest) -> CancelResponse = control::cancel;
        pause(PauseRequest) -> PauseResponse = control::pause;
        resume(ResumeRequest) -> ResumeResponse = control::resume;
        confirm_tool_execution(ConfirmToolExecutionRequest) -> ConfirmToolExecutionResponse = hitl::confirm_tool_execution;
        set_confirmation_policy(SetConfirmationPolicyRequest) -> SetConfirmationPolicyResponse = hitl::set_confirmation_policy;
        get_confirmation_policy(GetConfirmationPolicyRequest) -> GetConfirmationPolicyResponse = hitl::get_confirmation_policy;
        set_lane_handler(SetLaneHandlerRequest) -> SetLaneHandlerResponse = lanes::set_lane_handler;
        get_lane_handler(GetLaneHandlerRequest) -> GetLaneHandlerResponse = lanes::get_lane_handler;
        complete_external_task(CompleteExternalTaskRequest) -> CompleteExternalTaskResponse = lanes::complete_external_task;
        list_pending_external_tasks(ListPendingExternalTasksRequest) -> ListPendingExternalTasksResponse = lanes::list_pending_external_tasks;
        set_permission_policy(SetPermissionPolicyRequest) -> SetPermissionPolicyResponse = permissions::set_permission_policy;
        get_permission_policy(GetPermissionPolicyRequest) -> GetPermissionPolicyResponse = permissions::get_permission_policy;
        check_permission(CheckPermissionRequest) -> CheckPermissionResponse = permissions::check_permission;
        add_permission_rule(AddPermissionRuleRequest) -> AddPermissionRuleResponse = permissions::add_permission_rule;
        get_todos(GetTodosRequest) -> GetTodosResponse = todos::get_todos;
        set_todos(SetTodosRequest) -> SetTodosResponse = todos::set_todos;
        add_provider(AddProviderRequest) -> AddProviderResponse = providers::add_provider;
        update_provider(UpdateProviderRequest) -> UpdateProviderResponse = providers::update_provider;
        remove_provider(RemoveProviderRequest) -> RemoveProviderResponse = providers::remove_provider;
        set_default_model(SetDefaultModelRequest) -> SetDefaultModelResponse = providers::set_default_model;
        get_default_model(GetDefaultModelRequest) -> GetDefaultModelResponse = providers::get_default_model;
        create_plan(CreatePlanRequest) -> CreatePlanResponse = planning::create_plan;
        get_plan(GetPlanRequest) -> GetPlanResponse = planning::get_plan;
        extract_goal(ExtractGoalRequest) -> ExtractGoalResponse = planning::extract_goal;
        check_goal_achievement(CheckGoalAchievementRequest) -> CheckGoalAchievementResponse = planning::check_goal_achievement;
        store_memory(StoreMemoryRequest) -> StoreMemoryResponse = memory::store_memory;
        retrieve_memory(RetrieveMemoryRequest) -> RetrieveMemoryResponse = memory::retrieve_memory;
        search_memories(SearchMemoriesRequest) -> SearchMemoriesResponse = memory::search_memories;
        get_memory_stats(GetMemoryStatsRequest) -> GetMemoryStatsResponse = memory::get_memory_stats;
        clear_memories(ClearMemoriesRequest) -> ClearMemoriesResponse = memory::clear_memories;
        delete_memory(DeleteMemoryRequest) -> DeleteMemoryResponse = memory::delete_memory;
        summarize_memories(SummarizeMemoriesRequest) -> SummarizeMemoriesResponse = memory::summarize_memories;
        register_mcp_server(RegisterMcpServerRequest) -> RegisterMcpServerResponse = mcp::register_mcp_server;
        connect_mcp_server(ConnectMcpServerRequest) -> ConnectMcpServerResponse = mcp::connect_mcp_server;
        disconnect_mcp_server(DisconnectMcpServerRequest) -> DisconnectMcpServerResponse = mcp::disconnect_mcp_server;
        list_mcp_servers(ListMcpServersRequest) -> ListMcpServersResponse = mcp::list_mcp_servers;
        get_mcp_tools(GetMcpToolsRequest) -> GetMcpToolsResponse = mcp::get_mcp_tools;
        start_lsp_server(StartLspServerRequest) -> StartLspServerResponse = lsp::start_lsp_server;
        stop_lsp_server(StopLspServerRequest) -> StopLspServerResponse = lsp::stop_lsp_server;
        list_lsp_servers(ListLspServersRequest) -> ListLspServersResponse = lsp::list_lsp_servers;
        lsp_hover(LspHoverRequest) -> LspHoverResponse = lsp::lsp_hover;
        lsp_definition(LspDefinitionRequest) -> LspDefinitionResponse = lsp::lsp_definition;
        lsp_references(LspReferencesRequest) -> LspReferencesResponse = lsp::lsp_references;
        lsp_symbols(LspSymbolsRequest) -> LspSymbolsResponse = lsp::lsp_symbols;
        lsp_diagnostics(LspDiagnosticsRequest) -> LspDiagnosticsResponse = lsp::lsp_diagnostics;
        list_cron_jobs(ListCronJobsRequest) -> ListCronJobsResponse = cron::list_cron_jobs;
        create_cron_job(CreateCronJobRequest) -> CreateCronJobResponse = cron::create_cron_job;
        get_cron_job(GetCronJobRequest) -> GetCronJobResponse = cron::get_cron_job;
        update_cron_job(UpdateCronJobRequest) -> UpdateCronJobResponse = cron::update_cron_job;
        pause_cron_job(PauseCronJobRequest) -> PauseCronJobResponse = cron::pause_cron_job;
        resume_cron_job(ResumeCronJobRequest) -> ResumeCronJobResponse = cron::resume_cron_job;
        delete_cron_job(DeleteCronJobRequest) -> DeleteCronJobResponse = cron::delete_cron_job;
        get_cron_history(GetCronHistoryRequest) -> GetCronHistoryResponse = cron::get_cron_history;
        run_cron_job(RunCronJobRequest) -> RunCronJobResponse = cron::run_cron_job;
        parse_cron_schedule(ParseCronScheduleRequest) -> ParseCronScheduleResponse = cron::parse_cron_schedule;
        get_tool_metrics(GetToolMetricsRequest) -> GetToolMetricsResponse = observability::get_tool_metrics;
        get_cost_summary(GetCostSummaryRequest) -> GetCostSummaryResponse = observability::get_cost_summary;
        get_queue_stats(GetQueueStatsRequest) -> GetQueueStatsResponse = observability::get_queue_stats;
    }
    // Answers that depend on who asks (keys for authenticated callers).
    unary_with_caller {
        list_providers(ListProvidersRequest) -> ListProvidersResponse = providers::list_providers;
        get_provider(GetProviderRequest) -> GetProviderResponse = providers::get_provider;
    }
    // The rpcs that start a turn: the turn keeps the caller's `traceparent`.
    unary_traced {
        generate(GenerateRequest) -> GenerateResponse = generation::generate;
        generate_structured(GenerateStructuredRequest) -> GenerateStructuredResponse = generation::generate_structured;
        agentic_generate(AgenticGenerateRequest) -> AgenticGenerateResponse = generation::agentic_generate;
        delegate(DelegateRequest) -> DelegateResponse = generation::delegate;
    }
    streaming {
        subscribe_events(SubscribeEventsRequest) -> SubscribeEventsStream<AgentEvent> = events::subscribe_events;
    }
    streaming_traced {
        stream_generate(GenerateRequest) -> StreamGenerateStream<GenerateChunk> = generation::stream_generate;
        stream_generate_structured(GenerateStructuredRequest) -> StreamGenerateStructuredStream<GenerateStructuredChunk> = generation::stream_generate_structured;
        stream_agentic_generate(AgenticGenerateRequest) -> StreamAgenticGenerateStream<AgenticGenerateEvent> = generation::stream_agentic_generate;
        stream_delegate(DelegateRequest) -> StreamDelegateStream<AgenticGenerateEvent> = generation::stream_delegate;
    }
}
