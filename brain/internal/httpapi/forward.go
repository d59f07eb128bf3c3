package httpapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/otel/propagation"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/session"
)

// forwardedHeader marks a request one node forwarded to another: the
// receiver serves it itself (a second hop would only chase a lease that
// moved again).
const forwardedHeader = "Brain-Forwarded"

// sessionWrite answers the session id of a write to one session (a POST or
// DELETE under /v1/sessions/{id}), "" for anything else.
func sessionWrite(r *http.Request) string {
	if r.Method != http.MethodPost && r.Method != http.MethodDelete {
		return ""
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/sessions/")
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, "/")
	if !session.ValidSessionID(id) {
		return ""
	}
	return id
}

// forwardedIn says r is a write another node forwarded to this one (a
// cluster's node that owns the session): the node the client sent it to
// counts it as its request, this one apart.
func (s *Server) forwardedIn(r *http.Request) bool {
	return s.opts.Route != nil && r.Header.Get(forwardedHeader) != "" && sessionWrite(r) != ""
}

// forward sends a write to the node whose live lease owns its session
// (after the route authenticated it: a write this node would refuse is
// never forwarded),
// unchanged (method, path, query, body, Idempotency-Key and authorization
// headers; the trace context is that of this node's request span when
// tracing, none otherwise), and relays the answer; it answers false when this node serves
// the request itself: it holds the session's lease or has just taken it
// because the owner's lease had expired.
func (s *Server) forward(w http.ResponseWriter, r *http.Request) bool {
	if s.opts.Route == nil || r.Header.Get(forwardedHeader) != "" {
		return false
	}
	id := sessionWrite(r)
	if id == "" {
		return false
	}
	owner, err := s.opts.Route(r.Context(), id)
	if err != nil {
		closeUnread(w, r)
		WriteError(w, newError(http.StatusServiceUnavailable, api.CodeOverloaded, "the storage backend is unavailable; retry later"))
		return true
	}
	if owner == "" {
		return false
	}
	target, err := url.Parse(owner)
	if err != nil || target.Host == "" {
		closeUnread(w, r)
		WriteError(w, newError(http.StatusServiceUnavailable, api.CodeOverloaded, "the session's node has no usable public URL; retry later"))
		return true
	}
	// A node that stops answering (frozen, its host hung) holds the
	// request until its heartbeat runs out, and no longer: then its
	// leases expire too, and a retry is served by whichever node takes
	// the session over.
	fctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	if s.opts.OwnerGone != nil {
		go func() {
			if s.opts.OwnerGone(fctx, owner) == nil {
				cancel(errOwnerGone)
			}
		}()
	}
	// sent is set once the whole request was written to the owner (by
	// any attempt of the transport): from then on the owner may have
	// carried it out, whatever happens to the connection.
	var sent atomic.Bool
	tctx := httptrace.WithClientTrace(fctx, &httptrace.ClientTrace{
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				sent.Store(true)
			}
		},
	})
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host
			pr.Out.Header.Set(forwardedHeader, "1")
			// The owner's spans continue this node's request span (the
			// client's trace context is its parent); without tracing no
			// trace context is sent on.
			pr.Out.Header.Del("traceparent")
			pr.Out.Header.Del("tracestate")
			if s.opts.Tracer != nil {
				propagation.TraceContext{}.Inject(pr.Out.Context(), propagation.HeaderCarrier(pr.Out.Header))
			}
		},
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(context.Cause(fctx), errOwnerGone) {
				s.log.Warn("forward to the session's node failed", "session", id, "node", owner, "err", errOwnerGone)
				// The node had the request and may have carried it out
				// before it stopped: the same key, sent again, is served
				// by the node that takes the session over, which answers
				// its outcome or runs it.
				e := newError(http.StatusInternalServerError, api.CodeAmbiguous,
					"the session's node left the cluster without answering; the request may have been carried out: send it again with the same Idempotency-Key")
				e.Body.Retryable = true
				WriteError(w, e)
				return
			}
			s.log.Warn("forward to the session's node failed", "session", id, "node", owner, "err", err)
			if sent.Load() {
				// The node had the whole request when the connection
				// failed: its answer, not the request, may be what was
				// lost. The same key, sent again, is answered by the node
				// that owns the session then: the outcome, or a run.
				e := newError(http.StatusInternalServerError, api.CodeAmbiguous,
					"the session's node received the request but its answer was lost; the request may have been carried out: send it again with the same Idempotency-Key")
				e.Body.Retryable = true
				WriteError(w, e)
				return
			}
			// Nothing reached the node (it refused the connection, or it
			// broke before the request was written): nothing was done.
			WriteError(w, newError(http.StatusServiceUnavailable, api.CodeOverloaded, "the session's node did not answer; retry later"))
		},
	}
	proxy.ServeHTTP(w, r.WithContext(tctx))
	return true
}

// errOwnerGone ends a forwarded write whose node left the cluster
// without answering it.
var errOwnerGone = errors.New("the session's node left the cluster without answering")
