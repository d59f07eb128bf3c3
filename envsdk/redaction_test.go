package envsdk_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// grantKeeper keeps the Reporter of its setup and the Invocation of its
// execute, as a provider that logs them would.
type grantKeeper struct {
	envsdk.Base
	reporter   chan *envsdk.Reporter
	invocation chan *envsdk.Invocation
}

func (k *grantKeeper) Setup(c *envsdk.Ctx) (envsdk.SetupResult, error) {
	k.reporter <- c.Reporter()
	return envsdk.SetupResult{}, nil
}

func (k *grantKeeper) Execute(_ *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	k.invocation <- x.Invocation
	return envapi.Returned(nil), nil
}

// printed is every way a provider's code commonly prints or logs v.
func printed(v any) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%v\n%+v\n%#v\n%s\n", v, v, v, v)
	slog.New(slog.NewTextHandler(&b, nil)).Info("kept", "value", v)
	slog.New(slog.NewJSONHandler(&b, nil)).Info("kept", "value", v)
	return b.String()
}

// A grant's token is a credential: printing or logging a Reporter, an
// Invocation or a Grant never shows it, while the URL stays readable.
func TestPrintedGrantsHideTheirToken(t *testing.T) {
	const (
		reporterToken = "reporter-secret-7f3a"
		callbackToken = "callback-secret-91bc"
	)
	k := &grantKeeper{reporter: make(chan *envsdk.Reporter, 1), invocation: make(chan *envsdk.Invocation, 1)}
	srv := serve(t, k, nil)

	reporter := &envapi.Grant{URL: "http://127.0.0.1:1/v1/sessions/ses_1/environments/env/1/events", Token: reporterToken, Methods: []string{}}
	setup, err := json.Marshal(envapi.Command{Contract: envapi.Contract, Operation: envapi.Operation{
		SessionID: "ses_1", Environment: "env", Sequence: 1, Request: envapi.Setup(nil), Reporter: reporter,
	}})
	if err != nil {
		t.Fatal(err)
	}
	send(t, srv, setup)
	callback := &envapi.Grant{URL: "http://127.0.0.1:1/v1/sessions/ses_1/executions/2/call", Token: callbackToken, Methods: envapi.ToolMethods()}
	send(t, srv, execute(2, "x", nil, callback))

	for _, tc := range []struct {
		name  string
		v     any
		token string
		urlOf string
	}{
		{"reporter", <-k.reporter, reporterToken, reporter.URL},
		{"invocation", <-k.invocation, callbackToken, callback.URL},
		{"grant", *callback, callbackToken, callback.URL},
		{"grant pointer", callback, callbackToken, callback.URL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := printed(tc.v)
			if strings.Contains(out, tc.token) {
				t.Errorf("printed %s shows its token:\n%s", tc.name, out)
			}
			if !strings.Contains(out, tc.urlOf) {
				t.Errorf("printed %s does not show its URL:\n%s", tc.name, out)
			}
		})
	}

	// A provider without a reporter grant has a nil Reporter, and may log
	// it all the same.
	var none *envsdk.Reporter
	var noInvocation *envsdk.Invocation
	var noGrant *envapi.Grant
	if out := printed(none) + printed(noInvocation) + printed(noGrant); strings.Contains(out, "PANIC") || strings.Contains(out, "panicked") {
		t.Errorf("printing a nil Reporter or Invocation panicked:\n%s", out)
	}

	// The wire encoding of a grant keeps its token: Brain sends it so.
	data, err := json.Marshal(callback)
	if err != nil || !strings.Contains(string(data), callbackToken) {
		t.Errorf("json.Marshal(grant) = %s, %v; want the token on the wire", data, err)
	}
}
