package otlptest

import (
	"context"
	"net"
	"net/http"

	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// grpcReceiver serves the OTLP/gRPC trace and logs services.
type grpcReceiver struct {
	srv *grpc.Server
	url string
}

// StartGRPC serves a receiver speaking OTLP over gRPC (without TLS) on a
// loopback port until Close; its URL is http://host:port, the form an
// OTLP/gRPC endpoint takes for a plain-text connection.
func StartGRPC() (*Receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Receiver{}
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(maxBody))
	coltrace.RegisterTraceServiceServer(srv, traceService{r: r})
	collogs.RegisterLogsServiceServer(srv, logsService{r: r})
	r.grpc = &grpcReceiver{srv: srv, url: "http://" + ln.Addr().String()}
	go func() { _ = srv.Serve(ln) }()
	return r, nil
}

// headerOf answers the request metadata as HTTP headers, so that Headers
// reads the same for both transports.
func headerOf(ctx context.Context) http.Header {
	h := http.Header{}
	md, _ := metadata.FromIncomingContext(ctx)
	for k, vs := range md {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	return h
}

type traceService struct {
	coltrace.UnimplementedTraceServiceServer
	r *Receiver
}

func (s traceService) Export(ctx context.Context, in *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	if s.r.refusal() != 0 {
		return nil, status.Error(grpcRefusal, "export refused")
	}
	s.r.addSpans(in, headerOf(ctx))
	return &coltrace.ExportTraceServiceResponse{}, nil
}

type logsService struct {
	collogs.UnimplementedLogsServiceServer
	r *Receiver
}

func (s logsService) Export(ctx context.Context, in *collogs.ExportLogsServiceRequest) (*collogs.ExportLogsServiceResponse, error) {
	if s.r.refusal() != 0 {
		return nil, status.Error(grpcRefusal, "export refused")
	}
	return logsAnswer(s.r.addLogs(in, headerOf(ctx))), nil
}
