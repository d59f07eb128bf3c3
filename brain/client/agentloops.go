package client

import (
	"context"
	"net/http"

	"github.com/brain-in-go/brain/brain/api"
)

// Admission statuses of an agentloop module.
const (
	AdmissionAdmitted = "admitted"
	AdmissionRejected = "rejected"
)

// Admission is the server's verdict on an agentloop module: its id (the
// SHA-256 of its bytes, hex) and whether it can run. A rejected module
// carries the reason in Error.
type Admission struct {
	ID     string        `json:"id"`
	Status string        `json:"status"`
	Error  *api.ApiError `json:"error,omitempty"`
}

// Agentloops uploads and looks up agentloop modules.
type Agentloops struct{ c *Client }

// Upload admits a Wasm agentloop module. Uploading the same bytes again
// answers the same admission.
func (a *Agentloops) Upload(ctx context.Context, module []byte, opts ...CallOption) (Admission, error) {
	return a.c.admit(ctx, "/v1/agentloops", module, opts)
}

// Get answers the admission of module id.
func (a *Agentloops) Get(ctx context.Context, id string) (Admission, error) {
	return a.c.admission(ctx, "/v1/agentloops/", id)
}

// Tools uploads and looks up Tool modules (Wasm Tools run by the built-in
// environment).
type Tools struct{ c *Client }

// Upload admits a Wasm Tool module. Uploading the same bytes again answers
// the same admission.
func (t *Tools) Upload(ctx context.Context, module []byte, opts ...CallOption) (Admission, error) {
	return t.c.admit(ctx, "/v1/tools", module, opts)
}

// Get answers the admission of Tool module id.
func (t *Tools) Get(ctx context.Context, id string) (Admission, error) {
	return t.c.admission(ctx, "/v1/tools/", id)
}

func (c *Client) admit(ctx context.Context, path string, module []byte, opts []CallOption) (Admission, error) {
	opts = append(opts[:len(opts):len(opts)], func(c *call) { c.raw, c.ctype = module, "application/octet-stream" }, answers[Admission]())
	r, err := c.do(ctx, http.MethodPost, path, nil, true, opts)
	if err != nil {
		return Admission{}, err
	}
	return decode[Admission](r)
}

func (c *Client) admission(ctx context.Context, prefix, id string) (Admission, error) {
	r, err := c.do(ctx, http.MethodGet, prefix+segment(id), nil, false, []CallOption{answers[Admission]()})
	if err != nil {
		return Admission{}, err
	}
	return decode[Admission](r)
}
