package envsdk_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// ctxKeeper logs the Ctx and the request of every operation it serves,
// with log/slog's JSON handler, as a provider tracing its operations
// does, and prints the Ctx of its execute every way it commonly is.
type ctxKeeper struct {
	envsdk.Base
	log     *slog.Logger
	printed strings.Builder // every way Execute's Ctx prints
}

func (k *ctxKeeper) Setup(c *envsdk.Ctx) (envsdk.SetupResult, error) {
	k.log.Info("setup", "ctx", c, "request", c.Request)
	return envsdk.SetupResult{}, nil
}

func (k *ctxKeeper) Execute(c *envsdk.Ctx, _ *envsdk.Execution) (envapi.Receipt, error) {
	k.log.Info("execute", "ctx", c, "request", c.Request, "callback", c.Request.Callback)
	k.printed.WriteString(printed(c))
	return envsdk.Output("done")
}

// An operation's grants are credentials: a provider that prints its Ctx,
// or logs it, its request or the whole operation (as JSON too), does not
// show their tokens, while what the operation is stays readable. Printing
// a Ctx does not reach into its context either, which the handler may be
// ending meanwhile.
func TestLoggedOperationsHideTheirTokens(t *testing.T) {
	const (
		reporterToken = "reporter-secret-2c8e"
		contextToken  = "context-secret-5d1a"
		callbackToken = "callback-secret-77f0"
	)
	var logged bytes.Buffer
	k := &ctxKeeper{log: slog.New(slog.NewJSONHandler(&logged, nil))}
	srv := serve(t, k, nil)
	grant := func(path, tok string, methods ...string) *envapi.Grant {
		return &envapi.Grant{URL: "http://127.0.0.1:1/v1/sessions/ses_1/" + path, Token: tok, Methods: methods}
	}
	ops := []envapi.Operation{
		{SessionID: "ses_1", Environment: "env", Sequence: 1, Request: envapi.Setup(json.RawMessage(`{"label":"l"}`)),
			Reporter: grant("environments/env/1/events", reporterToken, "event", "result"),
			Context:  grant("executions/1/call", contextToken, envapi.ContextMethods()...)},
		{SessionID: "ses_1", Environment: "env", Sequence: 2,
			Request:  envapi.Execute(json.RawMessage(`"x"`), json.RawMessage(`{}`), nil, grant("executions/2/call", callbackToken, envapi.ToolMethods()...)),
			Reporter: grant("environments/env/1/events", reporterToken, "event", "result"),
			Context:  grant("executions/2/call", contextToken, envapi.ContextMethods()...)},
	}
	for _, op := range ops {
		data, err := json.Marshal(envapi.Command{Contract: envapi.Contract, Operation: op})
		if err != nil {
			t.Fatal(err)
		}
		send(t, srv, data)
		// A provider that decodes commands itself logs them so.
		cmd := envapi.Command{Contract: envapi.Contract, Operation: op}
		k.log.Info("command", "command", cmd, "operation", cmd.Operation, "pointer", &cmd.Operation)
	}
	out := logged.String() + k.printed.String()
	for _, tok := range []string{reporterToken, contextToken, callbackToken} {
		if strings.Contains(out, tok) {
			t.Errorf("the log shows the token %s:\n%s", tok, out)
		}
	}
	for _, want := range []string{`"session_id":"ses_1"`, `"type":"execute"`, "executions/2/call", `"label":"l"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the log does not show %s:\n%s", want, out)
		}
	}
}
