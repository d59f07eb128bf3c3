package pythonprovider_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// TestFinishAnswerNotASequence: finish is acknowledged by the committed
// sequence, a positive integer. Any other answer, even with a 2xx status,
// is no acknowledgement: the Tool's outcome may or may not be committed,
// so the execute answers unknown.
func TestFinishAnswerNotASequence(t *testing.T) {
	url := startProvider(t, "provider.py")
	for _, answer := range []string{`{}`, `"ok"`, `0`, `null`} {
		t.Run(answer, func(t *testing.T) {
			var finishes atomic.Int32
			grantSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				finishes.Add(1)
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, answer)
			}))
			defer grantSrv.Close()
			cmds := envtest.NewCommands("s-"+strings.Trim(answer, `{}"`), "box")
			ctx := context.Background()
			if _, _, resp, err := envtest.Post(ctx, nil, url, token, cmds.Setup(nil)); err != nil || resp.Receipt.Type != envapi.ReceiptAccepted {
				t.Fatalf("setup: %+v %v", resp, err)
			}
			grant := func(uint64) *envapi.Grant {
				return &envapi.Grant{URL: grantSrv.URL, Token: "tool-token", Methods: []string{envapi.MethodFinish}}
			}
			_, body, resp, err := envtest.Post(ctx, nil, url, token,
				cmds.ExecuteWith(json.RawMessage(`{"name":"echo"}`), json.RawMessage(`{"n":1}`), nil, grant))
			if err != nil || resp.Receipt.Type != envapi.ReceiptUnknown {
				t.Fatalf("execute whose finish answered %s: %s %v, want unknown", answer, body, err)
			}
			if n := finishes.Load(); n != 1 {
				t.Errorf("finish sent %d times, want once", n)
			}
		})
	}
}
