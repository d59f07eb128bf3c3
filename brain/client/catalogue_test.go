package client_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
)

// TestToolsAndModels covers the Tool admission routes (POST and GET
// /v1/tools) and the model catalogue (GET /v1/models[?provider=]).
func TestToolsAndModels(t *testing.T) {
	ctx := context.Background()
	c, _ := start(t, brain.Config{})
	mod := []byte("\x00asm\x01\x00\x00\x00garbage")
	sum := sha256.Sum256(mod)
	ad, err := c.Tools.Upload(ctx, mod)
	if err != nil || ad.ID != hex.EncodeToString(sum[:]) || ad.Status != "rejected" || ad.Error == nil {
		t.Fatalf("Tools.Upload of a broken module = %+v, %v", ad, err)
	}
	got, err := c.Tools.Get(ctx, ad.ID)
	if err != nil || got.ID != ad.ID || got.Status != ad.Status {
		t.Fatalf("Tools.Get = %+v, %v", got, err)
	}
	var ae *api.ApiError
	if _, err := c.Tools.Get(ctx, strings.Repeat("0", 64)); !errors.As(err, &ae) || ae.Code != api.CodeNotFound {
		t.Fatalf("Tools.Get of an unknown id = %v", err)
	}
	if _, err := c.Tools.Upload(ctx, nil); !errors.As(err, &ae) || ae.Code != api.CodeInvalidRequest {
		t.Fatalf("empty Tools.Upload = %v", err)
	}
	list, err := c.Models.List(ctx)
	if err != nil || list.SnapshotDigest == "" {
		t.Fatalf("Models.List = %+v, %v", list, err)
	}
	found := false
	for _, p := range list.Providers {
		found = found || p.ID == "scripted"
	}
	if !found {
		t.Fatalf("the catalogue has no scripted provider: %+v", list.Providers)
	}
	p, err := c.Models.Provider(ctx, "scripted")
	if err != nil || p.ID != "scripted" || p.Dialect == "" {
		t.Fatalf("Models.Provider = %+v, %v", p, err)
	}
	if _, err := c.Models.Provider(ctx, "nobody"); !errors.As(err, &ae) || ae.Code != api.CodeNotFound {
		t.Fatalf("Models.Provider of an unknown provider = %v", err)
	}
}
