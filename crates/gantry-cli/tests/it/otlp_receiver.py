"""A minimal OTLP trace receiver for Gantry's tests, written apart from
Gantry: it decodes each export with opentelemetry-proto's own messages and
prints one JSON line per span on stdout. The first line is `listening PORT`.

Usage: otlp_receiver.py [--grpc] [PORT]   (0, the default, picks a free port)

Over OTLP/HTTP (the default) it answers POSTs to /v1/traces; with --grpc it
serves opentelemetry-proto's own TraceService with grpcio. Anything else it
is sent is printed as an `unexpected` line.
"""

import json
import sys
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


def value(v):
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [value(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None


def attributes(kvs):
    return {kv.key: value(kv.value) for kv in kvs}


def print_spans(request):
    """One JSON line per span of an ExportTraceServiceRequest."""
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                print(json.dumps({
                    "service": resource.get("service.name"),
                    "trace_id": span.trace_id.hex(),
                    "span_id": span.span_id.hex(),
                    "parent_span_id": span.parent_span_id.hex(),
                    "name": span.name,
                    "kind": span.kind,
                    "start": span.start_time_unix_nano,
                    "end": span.end_time_unix_nano,
                    "status": span.status.code,
                    "attributes": attributes(span.attributes),
                }), flush=True)


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path != "/v1/traces" or "protobuf" not in self.headers.get("Content-Type", ""):
            print(json.dumps({"unexpected": self.path}), flush=True)
            self.send_response(404)
            self.end_headers()
            return
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        print_spans(request)
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


def serve_http(port):
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"listening {server.server_address[1]}", flush=True)
    server.serve_forever()


def serve_grpc(port):
    # Imported here: the HTTP receiver needs no grpcio.
    import grpc
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

    class TraceService(trace_service_pb2_grpc.TraceServiceServicer):
        def Export(self, request, context):
            print_spans(request)
            return ExportTraceServiceResponse()

    class Unexpected(grpc.GenericRpcHandler):
        """Any method but TraceService/Export (asked after the service's own)."""

        def service(self, handler_call_details):
            print(json.dumps({"unexpected": handler_call_details.method}), flush=True)
            return None

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(TraceService(), server)
    server.add_generic_rpc_handlers((Unexpected(),))
    bound = server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    print(f"listening {bound}", flush=True)
    server.wait_for_termination()


args = sys.argv[1:]
grpc_wanted = "--grpc" in args
args = [a for a in args if a != "--grpc"]
port = int(args[0]) if args else 0
if grpc_wanted:
    serve_grpc(port)
else:
    serve_http(port)
