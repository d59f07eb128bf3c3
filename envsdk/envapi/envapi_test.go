package envapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// canonical re-encodes a JSON document with sorted keys and no spaces.
func canonical(t *testing.T, data []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("canonical: %v", err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func decodeByName(kind string, data []byte) (any, error) {
	switch kind {
	case "Command":
		return DecodeCommand(data)
	case "Response":
		return DecodeResponse(data)
	case "Outcome":
		return DecodeOutcome(data)
	case "ReporterEvent":
		return DecodeReporterEvent(data)
	case "ControlRequest":
		return DecodeControlRequest(data)
	case "ExecutionCall":
		var c ExecutionCall
		err := Strict(data, &c)
		return c, err
	}
	return nil, errors.New("no decoder for " + kind)
}

// TestExamplesRoundTrip decodes every example under testdata/valid and checks
// that encoding gives back the same document, field for field.
func TestExamplesRoundTrip(t *testing.T) {
	files, err := filepath.Glob("testdata/valid/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			kind, _, _ := strings.Cut(name, ".")
			v, err := decodeByName(kind, data)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			out, err := json.Marshal(v)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			if got, want := canonical(t, out), canonical(t, data); got != want {
				t.Errorf("round trip changed the document\n got %s\nwant %s", got, want)
			}
		})
	}
}

func TestDecodeCommandRejects(t *testing.T) {
	base := func(op string) string {
		return `{"contract":"environment/v1","operation":` + op + `}`
	}
	tests := []struct {
		name      string
		doc       string
		field     string
		unsupport bool
	}{
		{"malformed", `{"contract":`, "", false},
		{"trailing data", base(`{"session_id":"s","environment":"e","sequence":1,"request":{"type":"detach"}}`) + `{}`, "", false},
		{"missing contract", `{"operation":{}}`, "contract", false},
		{"wrong contract", `{"contract":"environment/v2","operation":{}}`, "contract", false},
		{"unknown top field", `{"contract":"environment/v1","extra":1}`, "extra", false},
		{"missing operation", `{"contract":"environment/v1"}`, "operation", false},
		{"unknown operation field", base(`{"session_id":"s","environment":"e","sequence":1,"request":{"type":"detach"},"bogus":true}`), "operation.bogus", false},
		{"bad session id", base(`{"session_id":"-bad","environment":"e","sequence":1,"request":{"type":"detach"}}`), "operation.session_id", false},
		{"empty environment", base(`{"session_id":"s","environment":"","sequence":1,"request":{"type":"detach"}}`), "operation.environment", false},
		{"long identifier", base(`{"session_id":"` + strings.Repeat("a", 129) + `","environment":"e","sequence":1,"request":{"type":"detach"}}`), "operation.session_id", false},
		{"zero sequence", base(`{"session_id":"s","environment":"e","sequence":0,"request":{"type":"detach"}}`), "operation.sequence", false},
		{"negative sequence", base(`{"session_id":"s","environment":"e","sequence":-1,"request":{"type":"detach"}}`), "operation.sequence", false},
		{"string sequence", base(`{"session_id":"s","environment":"e","sequence":"1","request":{"type":"detach"}}`), "operation.sequence", false},
		{"missing request", base(`{"session_id":"s","environment":"e","sequence":1}`), "operation.request", false},
		{"request without type", base(`{"session_id":"s","environment":"e","sequence":1,"request":{}}`), "operation.request.type", false},
		{"unknown request type", base(`{"session_id":"s","environment":"e","sequence":1,"request":{"type":"invoke"}}`), "operation.request.type", true},
		{"field of another type", base(`{"session_id":"s","environment":"e","sequence":1,"request":{"type":"detach","name":"x"}}`), "operation.request.name", false},
		{"cancel zero target", base(`{"session_id":"s","environment":"e","sequence":1,"request":{"type":"cancel","target_sequence":0}}`), "operation.request.target_sequence", false},
		{"execute without input", base(`{"session_id":"s","environment":"e","sequence":1,"request":{"type":"execute","implementation":"x"}}`), "operation.request.input", false},
		{"execute negative deadline", base(`{"session_id":"s","environment":"e","sequence":1,"request":{"type":"execute","implementation":"x","input":1,"deadline_ms":-5}}`), "operation.request.deadline_ms", false},
		{"call bad name", base(`{"session_id":"s","environment":"e","sequence":1,"request":{"type":"call","name":"a b","input":{}}}`), "operation.request.name", false},
		{"binding zero sequence", base(`{"session_id":"s","environment":"e","sequence":1,"request":{"type":"detach"},"binding":{"name":"e","sequence":0}}`), "operation.binding.sequence", false},
		{"grant unknown field", base(`{"session_id":"s","environment":"e","sequence":1,"request":{"type":"detach"},"reporter":{"url":"http://x","token":"t","methods":[],"x":1}}`), "operation.reporter.x", false},
		{"grant bad url", base(`{"session_id":"s","environment":"e","sequence":1,"request":{"type":"detach"},"context":{"url":"not a url","token":"t","methods":[]}}`), "operation.context.url", false},
		{"grant long token", base(`{"session_id":"s","environment":"e","sequence":1,"request":{"type":"detach"},"context":{"url":"http://x","token":"` + strings.Repeat("t", 257) + `","methods":[]}}`), "operation.context.token", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeCommand([]byte(tt.doc))
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("DecodeCommand(%s) = %v, want *FieldError", tt.doc, err)
			}
			if fe.Field != tt.field {
				t.Errorf("DecodeCommand error field = %q (%v), want %q", fe.Field, err, tt.field)
			}
			if got := errors.Is(err, ErrUnsupported); got != tt.unsupport {
				t.Errorf("errors.Is(err, ErrUnsupported) = %v, want %v", got, tt.unsupport)
			}
		})
	}
}

func TestUnsupportedKeepsOperation(t *testing.T) {
	cmd, err := DecodeCommand([]byte(`{"contract":"environment/v1","operation":{"session_id":"s","environment":"e","sequence":42,"request":{"type":"turn"}}}`))
	if !errors.Is(err, ErrUnsupported) {
		t.Fatalf("err = %v, want ErrUnsupported", err)
	}
	if cmd.Operation.Sequence != 42 || cmd.Operation.SessionID != "s" {
		t.Errorf("operation = %+v, want sequence 42 of session s", cmd.Operation)
	}
}

func TestDecodeReceiptRejects(t *testing.T) {
	tests := []struct{ doc, field string }{
		{`{"type":"failure","code":"x","message":"m"}`, "receipt.retryable"},
		{`{"type":"failure","code":"bad code","message":"m","retryable":false}`, "receipt.code"},
		{`{"type":"failure","code":"x","message":"` + strings.Repeat("m", 4097) + `","retryable":false}`, "receipt.message"},
		{`{"type":"result"}`, "receipt.output"},
		{`{"type":"accepted","output":1}`, "receipt.output"},
		{`{"type":"done"}`, "receipt.type"},
	}
	for _, tt := range tests {
		_, err := DecodeReceipt([]byte(tt.doc))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tt.field {
			t.Errorf("DecodeReceipt(%.60s) = %v, want error on %q", tt.doc, err, tt.field)
		}
	}
}

func TestReceiptEncoding(t *testing.T) {
	tests := []struct {
		r    Receipt
		want string
	}{
		{Accepted(), `{"type":"accepted"}`},
		{Result(nil), `{"type":"result","output":null}`},
		{Returned(nil), `{"type":"returned"}`},
		{Failure("busy", "m", false, nil), `{"type":"failure","code":"busy","message":"m","retryable":false}`},
		{Unknown(strings.Repeat("é", 3000)), `{"type":"unknown","message":"` + strings.Repeat("é", 2048) + `"}`},
	}
	for _, tt := range tests {
		got, err := json.Marshal(tt.r)
		if err != nil || string(got) != tt.want {
			t.Errorf("Marshal(%+v) = %.80s, %v; want %.80s", tt.r, got, err, tt.want)
		}
	}
}

func TestOutcomeRejects(t *testing.T) {
	for _, doc := range []string{
		`{"status":"ok"}`,
		`{"status":"done","value":1}`,
		`{"status":"error","error":{"code":"x","message":"m","retryable":false},"value":1}`,
		`{"status":"timeout","message":"x"}`,
		`{"value":1}`,
	} {
		if _, err := DecodeOutcome([]byte(doc)); err == nil {
			t.Errorf("DecodeOutcome(%s) succeeded, want error", doc)
		}
	}
}

func TestControlRequestRules(t *testing.T) {
	for _, tt := range []struct{ doc, field string }{
		{`{"operation":"get"}`, "environment"},
		{`{"operation":"list","name":"x"}`, "name"},
		{`{"operation":"create","template":"t"}`, "name"},
		{`{"operation":"call","environment":{"name":"e","sequence":1}}`, "method"},
		{`{"operation":"explode"}`, "operation"},
	} {
		_, err := DecodeControlRequest([]byte(tt.doc))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tt.field {
			t.Errorf("DecodeControlRequest(%s) = %v, want error on %q", tt.doc, err, tt.field)
		}
	}
}

func TestReporterEventRules(t *testing.T) {
	for _, tt := range []struct{ doc, field string }{
		{`{"type":"event"}`, "event_type"},
		{`{"type":"result","output":{"observation":{"scope":"resource","code":"lost"}}}`, "output.observation.resource"},
		{`{"type":"result","output":{"observation":{"scope":"galaxy"}}}`, "output.observation.scope"},
		{`{"type":"result","output":{"observation":{"scope":"operation","sequence":3}}}`, "output.observation.resolution"},
	} {
		_, err := DecodeReporterEvent([]byte(tt.doc))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tt.field {
			t.Errorf("DecodeReporterEvent(%s) = %v, want error on %q", tt.doc, err, tt.field)
		}
	}
}

func TestGrantAllows(t *testing.T) {
	g := &Grant{Methods: ToolMethods()}
	if !g.Allows(MethodFinish) || g.Allows(MethodKVPut) {
		t.Errorf("tool grant Allows(finish)=%v Allows(kv_put)=%v", g.Allows(MethodFinish), g.Allows(MethodKVPut))
	}
	var nilGrant *Grant
	if nilGrant.Allows(MethodEmit) {
		t.Error("nil grant allows emit")
	}
}

// FuzzDecodeCommand checks that the decoder never panics, and that whatever
// it accepts encodes to a document it accepts again unchanged.
func FuzzDecodeCommand(f *testing.F) {
	files, _ := filepath.Glob("testdata/valid/Command.*.json")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"contract":"environment/v1","operation":{"session_id":"s","environment":"e","sequence":1,"request":{"type":"cancel","target_sequence":18446744073709551615}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cmd, err := DecodeCommand(data)
		if err != nil {
			boundedError(t, err)
			return
		}
		out, err := json.Marshal(cmd)
		if err != nil {
			t.Fatalf("encode accepted command: %v", err)
		}
		again, err := DecodeCommand(out)
		if err != nil {
			t.Fatalf("re-decode of %s: %v", out, err)
		}
		out2, _ := json.Marshal(again)
		if !bytes.Equal(out, out2) {
			t.Fatalf("not stable:\n%s\n%s", out, out2)
		}
	})
}

// FuzzDecodeResponse does the same for provider responses.
func FuzzDecodeResponse(f *testing.F) {
	files, _ := filepath.Glob("testdata/valid/Response.*.json")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeResponse(data)
		if err != nil {
			boundedError(t, err)
			return
		}
		out, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		if _, err := DecodeResponse(out); err != nil {
			t.Fatalf("re-decode of %s: %v", out, err)
		}
	})
}

// boundedError fails the test when a decode error's message is longer
// than its two clipped parts allow.
func boundedError(t *testing.T, err error) {
	t.Helper()
	if n := len(err.Error()); n > 2*maxErrorPart+64 {
		t.Fatalf("a decode error of %d bytes", n)
	}
}

// A decode error quotes the sender's keys and values clipped: a
// megabyte-long code, contract, type or key makes a message of a few
// hundred bytes, which names the field and how long the value was.
func TestDecodeErrorsQuoteClipped(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	for _, b := range []string{
		`{"contract":"environment/v1","sequence":1,"receipt":{"type":"failure","code":"` + long + `","message":"m","retryable":false}}`,
		`{"contract":"` + long + `","sequence":1,"receipt":{"type":"result"}}`,
		`{"contract":"environment/v1","sequence":1,"receipt":{"type":"` + long + `"}}`,
		`{"contract":"environment/v1","sequence":1,"receipt":{"type":"result"},"` + long + `":1}`,
	} {
		_, err := DecodeResponse([]byte(b))
		if err == nil {
			t.Fatal("decoded")
		}
		boundedError(t, err)
		if !strings.Contains(err.Error(), "bytes)") {
			t.Errorf("%.120s... does not say how long the value was", err)
		}
	}
}

// TestDecodersRefuseBytesThatAreNotUTF8: a document with a byte that is
// not UTF-8 is malformed JSON (RFC 8259) for every decoder, in a string
// (which encoding/json would replace) as in a raw value (which it would
// pass on as it is).
func TestDecodersRefuseBytesThatAreNotUTF8(t *testing.T) {
	for kind, doc := range map[string]string{
		"Response":       `{"contract":"environment/v1","sequence":1,"receipt":{"type":"result","output":{"text":"` + "\xff" + `"}}}`,
		"Outcome":        `{"status":"error","error":{"code":"x","message":"` + "\xc3" + `"}}`,
		"ReporterEvent":  `{"type":"event","event_type":"progress","data":{"a":"` + "\xed\xa0\x80" + `"}}`,
		"ControlRequest": `{"operation":"list","note":"` + "\xff" + `"}`,
		"ExecutionCall":  `{"method":"emit","input":"` + "\xfe" + `"}`,
	} {
		_, err := decodeByName(kind, []byte(doc))
		var fe *FieldError
		if !errors.As(err, &fe) || !strings.Contains(fe.Reason, "UTF-8") {
			t.Errorf("%s with a byte that is not UTF-8: %v, want a FieldError saying so", kind, err)
		}
	}
}
