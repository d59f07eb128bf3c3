package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
)

// ModelList is the server's model catalogue: the providers a session may
// name and their models.
type ModelList struct {
	SnapshotDigest string          `json:"snapshot_digest"`
	Providers      []ModelProvider `json:"providers"`
}

// ModelProvider is one provider of the catalogue: its id (a session's
// model.provider), the dialect it speaks, the media types it carries by
// URL and its models.
type ModelProvider struct {
	ID          string      `json:"id"`
	Dialect     string      `json:"dialect"`
	MediaInputs []string    `json:"media_inputs"`
	Models      []ModelInfo `json:"models"`
}

// ModelInfo is one model of a provider.
type ModelInfo struct {
	ID                  string `json:"id"`
	ContextWindowTokens int64  `json:"context_window_tokens,omitempty"`
}

// Models lists the server's model catalogue.
type Models struct{ c *Client }

// List answers the whole catalogue.
func (m *Models) List(ctx context.Context) (ModelList, error) {
	r, err := m.c.do(ctx, http.MethodGet, "/v1/models", nil, false, []CallOption{answers[ModelList]()})
	if err != nil {
		return ModelList{}, err
	}
	return decode[ModelList](r)
}

// Provider answers one provider of the catalogue; an unknown one answers
// an *api.ApiError with code not_found.
func (m *Models) Provider(ctx context.Context, id string) (ModelProvider, error) {
	r, err := m.c.do(ctx, http.MethodGet, "/v1/models?provider="+url.QueryEscape(id), nil, false, []CallOption{answers[ModelList]()})
	if err != nil {
		return ModelProvider{}, err
	}
	l, err := decode[ModelList](r)
	if err != nil {
		return ModelProvider{}, err
	}
	if len(l.Providers) != 1 || l.Providers[0].ID != id {
		return ModelProvider{}, fmt.Errorf("client: malformed answer: the catalogue of provider %q holds %d providers", id, len(l.Providers))
	}
	return l.Providers[0], nil
}
