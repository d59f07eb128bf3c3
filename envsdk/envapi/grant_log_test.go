package envapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// A grant logged with log/slog, by value or by pointer, through its text
// or its JSON handler, shows its URL and methods but not its token; a nil
// grant logs as nothing, not as a panic.
func TestLoggedGrantHidesItsToken(t *testing.T) {
	const secret = "callback-secret-5d0e"
	g := envapi.Grant{URL: "http://127.0.0.1:9/v1/sessions/ses_1/executions/3/call", Token: secret, Methods: []string{envapi.MethodFinish}}
	var none *envapi.Grant
	handlers := map[string]func(*bytes.Buffer) slog.Handler{
		"text": func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
		"json": func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
	}
	for hname, newHandler := range handlers {
		for _, tc := range []struct {
			name string
			args []any
		}{
			{"value", []any{"grant", g}},
			{"pointer", []any{"grant", &g}},
			{"value in a group", []any{slog.Group("op", "callback", g)}},
			{"value in a struct", []any{"op", struct{ Callback envapi.Grant }{g}}},
			{"value in a map", []any{"op", map[string]envapi.Grant{"callback": g}}},
		} {
			t.Run(hname+"/"+tc.name, func(t *testing.T) {
				var b bytes.Buffer
				slog.New(newHandler(&b)).Info("grant", tc.args...)
				out := b.String()
				if strings.Contains(out, secret) {
					t.Errorf("logged %s shows its token: %s", tc.name, out)
				}
				if !strings.Contains(out, g.URL) || !strings.Contains(out, envapi.MethodFinish) {
					t.Errorf("logged %s lost its URL or methods: %s", tc.name, out)
				}
			})
		}
		t.Run(hname+"/nil pointer", func(t *testing.T) {
			var b bytes.Buffer
			slog.New(newHandler(&b)).Info("grant", "grant", none)
			if out := b.String(); strings.Contains(out, "panic") || !strings.Contains(out, "grant") {
				t.Errorf("logged nil grant: %s", out)
			}
		})
	}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		for _, v := range []any{g, &g, []envapi.Grant{g}} {
			if out := fmt.Sprintf(format, v); strings.Contains(out, secret) || !strings.Contains(out, g.URL) {
				t.Errorf("Sprintf(%q, %T) = %s", format, v, out)
			}
		}
		if out := fmt.Sprintf(format, none); strings.Contains(out, "PANIC") {
			t.Errorf("Sprintf(%q, nil grant) = %s", format, out)
		}
	}
}

// The wire keeps the token: a grant encoded through its pointer, alone or
// in an operation, carries it, and decodes back to the same grant.
func TestGrantWireEncodingKeepsItsToken(t *testing.T) {
	g := &envapi.Grant{URL: "http://127.0.0.1:9/v1/sessions/ses_1/executions/3/call", Token: "callback-secret-5d0e", Methods: envapi.ToolMethods()}
	data, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	var back envapi.Grant
	if err := json.Unmarshal(data, &back); err != nil || back.Token != g.Token || back.URL != g.URL || len(back.Methods) != len(g.Methods) {
		t.Fatalf("grant %s decoded as %#v (token %q), %v", data, back, back.Token, err)
	}
	if want := `{"url":"http://127.0.0.1:9/v1/sessions/ses_1/executions/3/call","token":"callback-secret-5d0e","methods":null}`; mustMarshal(t, &envapi.Grant{URL: g.URL, Token: g.Token}) != want {
		t.Errorf("grant without methods encodes as %s, want %s", mustMarshal(t, &envapi.Grant{URL: g.URL, Token: g.Token}), want)
	}

	cmd := envapi.Command{Contract: envapi.Contract, Operation: envapi.Operation{
		SessionID: "ses_1", Environment: "env", Sequence: 3,
		Request:  envapi.Execute(json.RawMessage(`{}`), json.RawMessage(`{}`), nil, g),
		Reporter: g,
	}}
	wire, err := json.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	got, err := envapi.DecodeCommand(wire)
	if err != nil {
		t.Fatalf("DecodeCommand(%s) = %v", wire, err)
	}
	if got.Operation.Request.Callback == nil || got.Operation.Request.Callback.Token != g.Token ||
		got.Operation.Reporter == nil || got.Operation.Reporter.Token != g.Token {
		t.Errorf("command %s lost a grant's token on the wire", wire)
	}
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
