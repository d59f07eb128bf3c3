package envsdk

import (
	"context"
	"fmt"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// Reporter posts diagnostics and actionable observations about a binding
// to Brain. Unlike an operation's context it outlives the operation and
// survives a Brain restart; it stops working once the binding is closed or
// replaced. Never hand it to untrusted executed code.
type Reporter struct {
	grant  envapi.Grant
	caller *caller
}

// String shows the reporter's grant without its token, so a reporter
// printed or logged (log/slog's text handler prints it so) does not give
// the token away.
func (r Reporter) String() string { return "envsdk.Reporter" + r.grant.String() }

// GoString is String for %#v.
func (r Reporter) GoString() string { return r.String() }

// Event posts a diagnostic {type:"event"}; it does not wake the Agentloop.
func (r *Reporter) Event(ctx context.Context, eventType string, data any) (uint64, error) {
	d, err := marshalInput(data)
	if err != nil {
		return 0, err
	}
	return r.post(ctx, envapi.ReporterEvent{Type: "event", EventType: eventType, Data: d})
}

// Result posts an actionable observation with optional model-facing content.
func (r *Reporter) Result(ctx context.Context, obs envapi.Observation, content any) (uint64, error) {
	if err := envapi.ValidateObservation(&obs); err != nil {
		return 0, err
	}
	out := &envapi.ReporterOutput{Observation: obs}
	if content != nil {
		c, err := marshalInput(content)
		if err != nil {
			return 0, err
		}
		out.Content = c
	}
	return r.post(ctx, envapi.ReporterEvent{Type: "result", Output: out})
}

func (r *Reporter) post(ctx context.Context, body envapi.ReporterEvent) (uint64, error) {
	if r == nil {
		return 0, fmt.Errorf("%w: no reporter grant", ErrNotGranted)
	}
	raw, err := r.caller.post(ctx, r.grant.URL, r.grant.Token, "reporter", body)
	if err != nil {
		return 0, err
	}
	return decodeReporterAnswer(raw)
}
