package client

import (
	"context"
	"net/http"
	"net/url"

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
	opts = append(opts, func(c *call) { c.raw, c.ctype = module, "application/octet-stream" })
	r, err := a.c.do(ctx, http.MethodPost, "/v1/agentloops", nil, true, opts)
	if err != nil {
		return Admission{}, err
	}
	return decode[Admission](r)
}

// Get answers the admission of module id.
func (a *Agentloops) Get(ctx context.Context, id string) (Admission, error) {
	r, err := a.c.do(ctx, http.MethodGet, "/v1/agentloops/"+url.PathEscape(id), nil, false, nil)
	if err != nil {
		return Admission{}, err
	}
	return decode[Admission](r)
}
