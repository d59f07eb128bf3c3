package conformance_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/conformance"
	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// lenient passes each command through f before the provider's strict
// decoder sees it: f is what a provider decoding with fewer checks makes of
// the body (nil: it refuses the body as the strict decoder would).
func lenient(f func(body []byte) []byte) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			if out := f(body); out != nil {
				body = out
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
			next.ServeHTTP(w, r)
		})
	}
}

// ignoresContract never reads "contract": whatever it holds, or its
// absence, the command is served as environment/v1.
func ignoresContract(body []byte) []byte {
	var doc map[string]json.RawMessage
	if json.Unmarshal(body, &doc) != nil {
		return nil
	}
	doc["contract"] = json.RawMessage(`"environment/v1"`)
	out, _ := json.Marshal(doc)
	return out
}

// firstValue decodes one JSON value from the body, as a json.Decoder's
// Decode does, and ignores what follows it.
func firstValue(body []byte) []byte {
	var v json.RawMessage
	if json.NewDecoder(bytes.NewReader(body)).Decode(&v) != nil {
		return nil
	}
	return v
}

// lastDuplicate keeps the last of the members that share a name, as
// encoding/json, Python's json and JavaScript's JSON.parse do.
func lastDuplicate(body []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || dec.More() {
		return nil
	}
	out, _ := json.Marshal(v)
	return out
}

// foldsCase matches member names without regard to case, as encoding/json
// does: every name is read as its lower-case form (the protocol's names
// are lower-case). Duplicates and the order of members are kept.
func foldsCase(body []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var out bytes.Buffer
	// Each open container: whether it is an object, whether its next
	// token is a member name, and whether it holds anything yet.
	type frame struct{ object, wantKey, any bool }
	stack := []frame{{}}
	done := func() { // a value ended: an object wants the next name
		if top := &stack[len(stack)-1]; top.object {
			top.wantKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil
		}
		top := &stack[len(stack)-1]
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			out.WriteByte(byte(d))
			done()
			continue
		}
		switch {
		case top.object && top.wantKey:
			if top.any {
				out.WriteByte(',')
			}
			top.any, top.wantKey = true, false
			name, _ := json.Marshal(strings.ToLower(tok.(string)))
			out.Write(name)
			continue
		case top.object:
			out.WriteByte(':')
		case len(stack) > 1:
			if top.any {
				out.WriteByte(',')
			}
			top.any = true
		}
		if d, ok := tok.(json.Delim); ok {
			out.WriteByte(byte(d))
			stack = append(stack, frame{object: d == '{', wantKey: d == '{'})
			continue
		}
		data, _ := json.Marshal(tok)
		out.Write(data)
		done()
	}
	return out.Bytes()
}

// TestLenientDecoding runs the suite against providers that decode
// commands more loosely than the protocol allows: each fails the case of
// the check it skips, and a provider decoding with plain encoding/json
// (DisallowUnknownFields, identifiers and sequence checked, nothing else)
// fails all of them.
func TestLenientDecoding(t *testing.T) {
	// The rewriters read whole bodies, token by token: a small limit keeps
	// transport/body-too-large quick under -race.
	const limit = 1 << 20
	opts := testOptions
	opts.MaxBodyBytes = limit
	opts.Run = []string{"transport/", "contract/", "lifecycle/full", "exec/finish"}
	sdk := envsdk.Options{Token: refToken, StopGrace: time.Second, MaxBodyBytes: limit}
	plain := func(body []byte) []byte {
		for _, f := range []func([]byte) []byte{firstValue, lastDuplicate, foldsCase, ignoresContract} {
			if out := f(body); out != nil {
				body = out
			}
		}
		return body
	}
	for _, tc := range []struct {
		name string
		f    func([]byte) []byte
		want []string
	}{
		{"ignores-contract", ignoresContract, []string{"transport/wrong-contract"}},
		{"reads-first-value", firstValue, []string{"transport/malformed-json"}},
		{"keeps-last-duplicate", lastDuplicate, []string{"transport/duplicate-key"}},
		{"folds-case", foldsCase, []string{"transport/unknown-field"}},
		{"plain-encoding-json", plain, []string{"transport/malformed-json", "transport/unknown-field", "transport/duplicate-key", "transport/wrong-contract"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			report := conformance.Check(t.Context(), func(ct conformance.T) conformance.Target {
				return serveReference(ct, newReference, sdk, lenient(tc.f))
			}, &opts)
			if got := report.Failed(); !slices.Equal(got, tc.want) {
				t.Errorf("failed cases %v, want %v\n%s", got, tc.want, details(report))
			}
			for _, r := range report.Results {
				log := strings.Join(r.Log, "\n")
				if r.Status == conformance.Fail && (!strings.Contains(log, "rule: ") || !strings.Contains(log, "exchange: ")) {
					t.Errorf("%s failed without naming the rule and the exchange: %s", r.ID, log)
				}
			}
		})
	}
}

// TestLenientRewritersKeepCommands: the rewriters above change nothing in
// a well-formed command, so a provider behind them serves Brain as before.
func TestLenientRewritersKeepCommands(t *testing.T) {
	cmd := envapi.Command{Contract: envapi.Contract, Operation: envapi.Operation{
		SessionID: "s", Environment: "e", Sequence: 7,
		Request: envapi.Execute(json.RawMessage(`{"type":"reference","name":"echo"}`), json.RawMessage(`{"n":[1,2,{"k":null}],"b":true}`), nil, nil),
	}}
	body, err := json.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func([]byte) []byte{"contract": ignoresContract, "first": firstValue, "duplicate": lastDuplicate, "case": foldsCase} {
		got, err := envapi.DecodeCommand(f(body))
		if err != nil {
			t.Errorf("%s: %v\n%s", name, err, f(body))
			continue
		}
		var a, b any
		again, _ := json.Marshal(got)
		_ = json.Unmarshal(again, &a)
		_ = json.Unmarshal(body, &b)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: %s, want %s", name, again, body)
		}
	}
	if got := string(foldsCase([]byte(`{"A":{"Bc":[1,{"D":2}],"e":"F"},"G":[]}`))); got != `{"a":{"bc":[1,{"d":2}],"e":"F"},"g":[]}` {
		t.Errorf("foldsCase: %s", got)
	}
}
