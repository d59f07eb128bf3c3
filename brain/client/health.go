package client

import (
	"context"
	"net/http"
)

// Live reports whether the server answers at all: nil when GET
// /health/live answers 204.
func (c *Client) Live(ctx context.Context) error {
	_, err := c.do(ctx, http.MethodGet, "/health/live", nil, false, []CallOption{sendOnce, expect(http.StatusNoContent)})
	return err
}

// Ready reports whether the server takes work: nil when GET /health/ready
// answers 204, an *api.ApiError (errors.As) with code overloaded while it
// does not (it drains, or its durable writes fail).
// Readiness does not check model credentials, remote environments or
// hosts.
func (c *Client) Ready(ctx context.Context) error {
	_, err := c.do(ctx, http.MethodGet, "/health/ready", nil, false, []CallOption{sendOnce, expect(http.StatusNoContent)})
	return err
}
