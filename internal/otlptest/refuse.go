package otlptest

import "google.golang.org/grpc/codes"

// Refuse makes the receiver answer every later export with status,
// keeping nothing of it (over gRPC, any refusal is InvalidArgument); 0
// accepts exports again.
func (r *Receiver) Refuse(status int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refuse = status
}

// RejectLogs makes the receiver reject the later log records for which
// reject answers true: it keeps the others and answers an OTLP partial
// success counting those it rejected (rejected_log_records). nil keeps
// them all again.
func (r *Receiver) RejectLogs(reject func(Log) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rejectLog = reject
}

// refusal answers the status of an export refused whole (0: none).
func (r *Receiver) refusal() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.refuse
}

// grpcRefusal is the gRPC code of a refused export.
const grpcRefusal = codes.InvalidArgument
