package envapi_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// TestGrantTokenNeverPrintedOrLogged: a grant printed with any verb, or
// logged by value or by pointer through slog's text and JSON handlers,
// shows its URL and not its token.
func TestGrantTokenNeverPrintedOrLogged(t *testing.T) {
	const token = "tok-5f1e9c2a7b"
	g := envapi.Grant{URL: "http://127.0.0.1:9/ops", Token: token, Methods: []string{"emit"}}
	var outs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		outs = append(outs, fmt.Sprintf(verb, g), fmt.Sprintf(verb, &g))
	}
	for _, json := range []bool{false, true} {
		var buf bytes.Buffer
		var h slog.Handler = slog.NewTextHandler(&buf, nil)
		if json {
			h = slog.NewJSONHandler(&buf, nil)
		}
		slog.New(h).Info("grant", "value", g, "pointer", &g, "group", slog.Any("g", g))
		outs = append(outs, buf.String())
	}
	for _, out := range outs {
		if strings.Contains(out, token) {
			t.Errorf("the token shows in %s", out)
		}
		if !strings.Contains(out, g.URL) {
			t.Errorf("the URL is missing from %s", out)
		}
	}
}
