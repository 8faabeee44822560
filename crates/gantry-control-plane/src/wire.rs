//! The runner service as served: the generated 0.2.0 server for what only
//! 0.2.0 has (the GitHub rpcs), and `RegisterRunner` and `ControlChannel`
//! served here, on the same paths in both versions, as protobuf bytes: a
//! runner's version is known only once it is authenticated (pinned) or has
//! registered (detected), so messages are decoded per runner in
//! `service.rs`, not by the route.

use std::convert::Infallible;
use std::task::{Context, Poll};

use bytes::Bytes;
use gantry_grpc::RawCodec;
use gantry_runner_protocol::v0_2::agent_runner_control_service_server::AgentRunnerControlServiceServer;
use gantry_runner_protocol::{CONTROL_CHANNEL_PATH, REGISTER_RUNNER_PATH};
use tonic::codegen::{Body, BoxFuture, StdError, http};
use tonic::server::NamedService;
use tonic::{Request, Response, Status, Streaming};

use crate::service::ControlService;

/// `AgentRunnerControlService` for runners of either version; made by
/// [`crate::ControlPlane::grpc_service`].
#[derive(Clone)]
pub struct RunnerService {
    service: ControlService,
    generated: AgentRunnerControlServiceServer<ControlService>,
}

impl RunnerService {
    pub(crate) fn new(service: ControlService) -> Self {
        Self {
            generated: AgentRunnerControlServiceServer::new(service.clone()),
            service,
        }
    }
}

impl NamedService for RunnerService {
    const NAME: &'static str = "companyhelm.runner.v1.AgentRunnerControlService";
}

impl<B> tonic::codegen::Service<http::Request<B>> for RunnerService
where
    B: Body + Send + 'static,
    B::Error: Into<StdError> + Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let service = self.service.clone();
        match req.uri().path() {
            REGISTER_RUNNER_PATH => Box::pin(async move {
                let mut grpc = tonic::server::Grpc::new(RawCodec);
                Ok(grpc.unary(Register(service), req).await)
            }),
            CONTROL_CHANNEL_PATH => Box::pin(async move {
                let mut grpc = tonic::server::Grpc::new(RawCodec);
                Ok(grpc.streaming(Channel(service), req).await)
            }),
            _ => self.generated.call(req),
        }
    }
}

struct Register(ControlService);

impl tonic::server::UnaryService<Bytes> for Register {
    type Response = Bytes;
    type Future = BoxFuture<Response<Bytes>, Status>;

    fn call(&mut self, request: Request<Bytes>) -> Self::Future {
        let service = self.0.clone();
        Box::pin(async move { service.register(request).await })
    }
}

struct Channel(ControlService);

impl tonic::server::StreamingService<Bytes> for Channel {
    type Response = Bytes;
    type ResponseStream = crate::service::Outgoing;
    type Future = BoxFuture<Response<Self::ResponseStream>, Status>;

    fn call(&mut self, request: Request<Streaming<Bytes>>) -> Self::Future {
        let service = self.0.clone();
        Box::pin(async move { service.channel(request).await })
    }
}
