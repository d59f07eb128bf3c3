// Package otlptest is an in-process OTLP/HTTP receiver for tests: it
// serves POST /v1/traces and /v1/logs on a loopback port, decodes the
// protobuf export requests (go.opentelemetry.io/proto/otlp) and keeps the
// spans and log records it received. It can be made to refuse exports
// (Refuse) or to reject some log records with an OTLP partial success
// (RejectLogs).
package otlptest
