package agentloop

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/guestjson"
)

func ptr[T any](v T) *T { return &v }

// encodeWith runs f on a fresh encoder.
func encodeWith(f func(e *encoder)) ([]byte, error) {
	e := newEncoder(0)
	f(&e)
	return e.B, e.Err
}

// decodeWith runs f on a decoder of data and checks the end.
func decodeWith(data []byte, f func(d *decoder)) error {
	d := newDecoder(data)
	f(&d)
	return d.End()
}

const tricky = "a<b>&c \"q\" \\ / \b\f\n\r\t \x00\x1f\x7f é € 😀 \u2028\u2029 \xff\xfe bad \xe2\x82"

func sampleMessages() []api.Message {
	return []api.Message{
		api.UserMessage(api.UserInput{Message: tricky, Media: []api.Media{{Type: "image", URL: "http://x/<y>"}, {Type: "file", URL: "u", MediaType: "text/plain"}}}),
		{Role: api.RoleAssistant, Content: []api.ContentBlock{
			api.TextBlock("sure"),
			{Type: api.BlockToolUse, ID: "call_1", Name: "search", Input: json.RawMessage(" {\"q\" : \"<a&b>\u2028\", \"n\": [1, 2.5e3, -0, true, false, null]} ")},
			{Type: api.BlockNative, Format: "f", Data: json.RawMessage(`"x"`)},
		}},
		{Role: api.RoleUser, Content: []api.ContentBlock{api.ToolResultBlock("call_1", json.RawMessage(`{"ok":1}`), false), api.ToolResultBlock("c2", json.RawMessage(`"e"`), true)}},
		{Role: api.RoleDeveloper, Content: nil},
		{Role: "", Content: []api.ContentBlock{}},
	}
}

func TestEncoderWritesWhatEncodingJSONWrites(t *testing.T) {
	msgs := sampleMessages()
	cases := []struct {
		name string
		v    any
		enc  func(e *encoder)
	}{
		{"string", tricky, func(e *encoder) { e.Str(tricky) }},
		{"messages", msgs, func(e *encoder) { e.messages(msgs) }},
		{"nil messages", []api.Message(nil), func(e *encoder) { e.messages(nil) }},
		{"model request", api.ModelRequest{Messages: msgs}, func(e *encoder) { e.modelRequest(&api.ModelRequest{Messages: msgs}) }},
		{"full model request", api.ModelRequest{
			Messages: msgs, System: ptr(""), MaxOutputTokens: ptr(int64(-7)),
			Tools:          []api.ToolDefinition{{Name: "t", Description: "d<", InputSchema: json.RawMessage(`{"type":"object"}`)}, {Name: "u", OutputSchema: json.RawMessage(`{}`)}},
			ResponseFormat: json.RawMessage(`{"type":"json"}`), Options: json.RawMessage(` [ ] `),
		}, func(e *encoder) {
			e.modelRequest(&api.ModelRequest{
				Messages: msgs, System: ptr(""), MaxOutputTokens: ptr(int64(-7)),
				Tools:          []api.ToolDefinition{{Name: "t", Description: "d<", InputSchema: json.RawMessage(`{"type":"object"}`)}, {Name: "u", OutputSchema: json.RawMessage(`{}`)}},
				ResponseFormat: json.RawMessage(`{"type":"json"}`), Options: json.RawMessage(` [ ] `),
			})
		}},
		{"invocations", []api.ToolInvocation{{CallID: "a", Name: "n", Environment: "e", EnvironmentSequence: 9, Input: json.RawMessage(`{"x": "<"}`)}, {CallID: "b"}},
			func(e *encoder) {
				e.invocations([]api.ToolInvocation{{CallID: "a", Name: "n", Environment: "e", EnvironmentSequence: 9, Input: json.RawMessage(`{"x": "<"}`)}, {CallID: "b"}})
			}},
		{"no invocations", []api.ToolInvocation{}, func(e *encoder) { e.invocations([]api.ToolInvocation{}) }},
		{"emit", api.EmitInput{EventType: "progress", Data: json.RawMessage(`{"step": 1}`)}, func(e *encoder) { e.keyRaw("event_type", "progress", "data", json.RawMessage(`{"step": 1}`)) }},
		{"kv_put", api.KVPutInput{Key: "k&", Value: json.RawMessage(`null`)}, func(e *encoder) { e.keyRaw("key", "k&", "value", json.RawMessage(`null`)) }},
		{"kv_put nil", api.KVPutInput{Key: "k"}, func(e *encoder) { e.keyRaw("key", "k", "value", nil) }},
		{"turn output", api.TurnOutput{Result: json.RawMessage("\"ok <\"\n")}, func(e *encoder) { e.turnOutput(&api.TurnOutput{Result: json.RawMessage("\"ok <\"\n")}) }},
		{"empty turn output", api.TurnOutput{}, func(e *encoder) { e.turnOutput(&api.TurnOutput{}) }},
		{"cursor", uint64(1<<64 - 1), func(e *encoder) { e.Uint(1<<64 - 1) }},
		{"turn error", struct {
			Error turnFailure `json:"error"`
		}{turnFailure{Message: tricky, Ref: 3}}, func(e *encoder) { e.turnError(tricky, 3) }},
		{"turn error without ref", struct {
			Error turnFailure `json:"error"`
		}{turnFailure{Message: "m"}}, func(e *encoder) { e.turnError("m", 0) }},
	}
	for _, c := range cases {
		want, err := json.Marshal(c.v)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, err := encodeWith(c.enc)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if string(got) != string(want) {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, want)
		}
	}
	if got := guestjson.MarshalString(tricky); string(got) != string(mustMarshal(t, tricky)) {
		t.Errorf("marshalString: %s", got)
	}
}

// turnFailure is the error member of a failed turn's answer, for
// comparing with encoding/json.
type turnFailure struct {
	Message string `json:"message"`
	Ref     uint32 `json:"ref,omitempty"`
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEncoderRejectsInvalidRawMessage(t *testing.T) {
	for _, raw := range []string{"", "{", `{"a":}`, "1 2", "nul", `"\x01"`, `[1,]`} {
		_, err := encodeWith(func(e *encoder) { e.keyRaw("event_type", "x", "data", json.RawMessage(raw)) })
		_, jerr := json.Marshal(api.EmitInput{EventType: "x", Data: json.RawMessage(raw)})
		if raw == "" {
			// encoding/json fails on an empty non-nil RawMessage; the
			// codec writes null only for nil, so it fails too.
			jerr = err
		}
		if err == nil || jerr == nil {
			t.Errorf("%q: codec %v, encoding/json %v", raw, err, jerr)
		}
	}
}

// decodeCase decodes doc with the codec and with encoding/json into fresh
// values and compares them.
type decodeCase struct {
	name string
	doc  string
}

func checkDecode[T any](t *testing.T, cases []decodeCase, dec func(d *decoder, v *T)) {
	t.Helper()
	for _, c := range cases {
		var want, got T
		jerr := json.Unmarshal([]byte(c.doc), &want)
		err := decodeWith([]byte(c.doc), func(d *decoder) { dec(d, &got) })
		if (err != nil) != (jerr != nil) {
			t.Errorf("%s: codec error %v, encoding/json error %v", c.name, err, jerr)
			continue
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %#v\nwant %#v", c.name, got, want)
		}
	}
}

func TestDecoderReadsWhatEncodingJSONReads(t *testing.T) {
	seed := mustMarshal(t, []byte("0123456789abcdef0123456789abcdef"))
	full := mustMarshal(t, api.TurnInput{
		Input:      &api.UserInput{Message: tricky, Media: []api.Media{{Type: "image", URL: "u"}}},
		Transcript: sampleMessages(),
		KV:         map[string]json.RawMessage{"a": json.RawMessage(`{"x":[1,2]}`), "n": json.RawMessage(`null`), "K": json.RawMessage(`"v"`)},
		Events: []api.Event{
			{Sequence: 1, RecordedAtMs: -5, EventType: "tool_call_ended", Data: json.RawMessage(`{"outcome":{"status":"ok"}}`)},
			{Sequence: 2, EventType: "x", Data: json.RawMessage(`{}`), Origin: &api.EventOrigin{Kind: "environment", Environment: &api.EnvironmentRef{Name: "e", Sequence: 4}}},
			{Sequence: 3, Origin: &api.EventOrigin{Kind: "tool", Sequence: 7}},
		},
		Configuration: json.RawMessage(`{"max_steps":3}`),
		System:        "be brief",
		Tools:         []api.ActivationTool{{Name: "t", Description: "d", InputSchema: json.RawMessage(`{}`), Environments: []string{"e1", "e2"}}, {Name: "u", Environments: []string{}}},
		Runtime:       api.Runtime{LogicalTimeMs: 1234, DeterministicSeed: []byte("0123456789abcdef0123456789abcdef")},
	})
	checkDecode(t, []decodeCase{
		{"full", string(full)},
		{"minimal", `{"input":{"message":"hello"},"transcript":[],"kv":{},"events":null,"configuration":null,"system":"","tools":null,"runtime":{"logical_time_ms":0,"deterministic_seed":` + string(seed) + `}}`},
		{"nulls", `{"input":null,"transcript":null,"kv":null,"events":[],"configuration":null,"system":null,"tools":[],"runtime":null}`},
		{"empty", `{}`},
		{"null", `null`},
		{"white space and unknown members", " {\n\t\"extra\": {\"a\": [1, {\"b\": \"\\u00e9\\ud83d\\ude00\"}], \"c\": -1.5e-3},\r \"system\" : \"s\" , \"more\": [true, false, null] } "},
		{"folded names", `{"Input":{"MESSAGE":"hi"},"System":"s","KV":{"Key":1}}`},
		{"escapes", `{"system":"\"\\\/\b\f\n\r\t\u0041\u00e9\u20ac\ud83d\ude00 lone \ud800 x \udc00 pair-bad \ud800\u0041 end"}`},
		{"invalid utf-8 in a string", "{\"system\":\"a\xffb\xe2\x82\"}"},
		{"empty seed", `{"runtime":{"deterministic_seed":""}}`},
		{"transcript with empty content", `{"transcript":[{"role":"user","content":[]},{"role":"assistant","content":null},{"role":"x"}]}`},
		{"blocks", `{"transcript":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"c","content":{"a":1},"is_error":true},{"type":"tool_use","input":null,"is_error":null,"media":[]},{"type":"image","media":null}]}]}`},
		// Failures.
		{"truncated", `{"system":"s"`},
		{"trailing data", `{} {}`},
		{"wrong type", `{"system":1}`},
		{"wrong array", `{"transcript":{}}`},
		{"bad seed", `{"runtime":{"deterministic_seed":"***"}}`},
		{"control character", "{\"system\":\"a\x01\"}"},
		{"bad escape", `{"system":"\x"}`},
		{"bad number", `{"runtime":{"logical_time_ms":01}}`},
		{"float for an integer", `{"runtime":{"logical_time_ms":1.5}}`},
		{"bad literal", `{"configuration":nul}`},
		{"missing colon", `{"system" "s"}`},
		{"missing comma", `{"system":"s" "tools":[]}`},
		{"bad raw", `{"configuration":{"a":}}`},
		{"empty input", ``},
	}, func(d *decoder, v *api.TurnInput) { d.turnInput(v) })

	checkDecode(t, []decodeCase{
		{"text", `{"message":{"role":"assistant","content":[{"type":"text","text":"hi"}]},"stop_reason":"end_turn","usage":{}}`},
		{"usage", `{"message":{"role":"assistant","content":[]},"stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":-2,"cache_creation_input_tokens":0,"cache_read_input_tokens":null,"reasoning_tokens":5,"total_input_tokens":15,"provider_cost_usd":0.00125}}`},
		{"cost exponent", `{"usage":{"provider_cost_usd":1e-7}}`},
		{"null usage", `{"message":null,"usage":null}`},
		{"bad usage", `{"usage":{"input_tokens":"1"}}`},
	}, func(d *decoder, v *api.ModelResult) { d.modelResult(v) })

	checkDecode(t, []decodeCase{
		{"returns", `[{"call_id":"a","sequence":3,"events":[{"sequence":4,"recorded_at_ms":1,"event_type":"tool_call_ended","data":{"outcome":{"status":"ok","value":1}},"origin":{"kind":"tool","sequence":3}}],"finished":true},{"call_id":"b","sequence":0,"events":null,"finished":false}]`},
		{"none", `[]`},
		{"null", `null`},
		{"negative sequence", `[{"sequence":-1}]`},
		{"bad bool", `[{"finished":1}]`},
	}, func(d *decoder, v *[]api.ToolReturn) { *v = d.toolReturns() })

	checkDecode(t, []decodeCase{
		{"page", `{"events":[{"sequence":1,"event_type":"x","data":{}},{"sequence":2,"event_type":"y","data":null}],"next_cursor":2}`},
		{"empty page", `{"events":[],"next_cursor":7}`},
		{"max cursor", `{"next_cursor":18446744073709551615}`},
		{"cursor overflow", `{"next_cursor":18446744073709551616}`},
	}, func(d *decoder, v *api.EventPage) { d.eventPage(v) })

	checkDecode(t, []decodeCase{
		{"error", `{"code":"not_granted","message":"no","retryable":true,"details":{"a":[1]},"ref":2}`},
		{"plain", `{"code":"invalid_request","message":"bad"}`},
		{"ref overflow", `{"ref":4294967296}`},
	}, func(d *decoder, v *HostError) { d.hostError(v) })

	checkDecode(t, []decodeCase{
		{"absent", `{}`},
		{"present", `{"value":{"n":1}}`},
		{"stored null", `{"value":null}`},
	}, func(d *decoder, v *api.KVReadResult) { v.Value = d.kvReadResult() })

	checkDecode(t, []decodeCase{
		{"seq", `42`},
		{"null seq", `null`},
		{"negative seq", `-1`},
		{"string seq", `"1"`},
	}, func(d *decoder, v *uint64) { *v = d.Uint() })
}

// TestDecoderValuesAreCut checks that appending to a decoded RawMessage
// does not overwrite the rest of the input it shares.
func TestDecoderValuesAreCut(t *testing.T) {
	doc := []byte(`{"configuration":{"a":1},"system":"sys"}`)
	var in api.TurnInput
	if err := decodeWith(doc, func(d *decoder) { d.turnInput(&in) }); err != nil {
		t.Fatal(err)
	}
	_ = append(in.Configuration, "XXXXXXXXXXXXXXXX"...)
	if in.System != "sys" || string(doc) != `{"configuration":{"a":1},"system":"sys"}` {
		t.Fatalf("input changed: %s %q", doc, in.System)
	}
}

func TestLoopCodecMatchesEncodingJSON(t *testing.T) {
	checkDecode(t, []decodeCase{
		{"ok", `{"sequence":3,"outcome":{"status":"ok","value":{"a":1},"content":[{"type":"text","text":"x"}]},"is_error":false}`},
		{"error", `{"sequence":4,"outcome":{"status":"error","error":{"code":"tool_error","message":"m","retryable":true,"details":{"d":1}},"message":"msg"},"is_error":true}`},
		{"null error", `{"outcome":{"status":"ok","error":null}}`},
		{"bad", `{"outcome":{"status":1}}`},
	}, func(d *decoder, v *api.ToolCallEnded) { d.toolCallEnded(v) })
	checkDecode(t, []decodeCase{
		{"steps", `{"max_steps":3,"other":{"x":[1]}}`},
		{"none", `{}`},
		{"float", `{"max_steps":1.5}`},
		{"string", `{"max_steps":"3"}`},
		{"not an object", `[]`},
	}, func(d *decoder, v *Configuration) { d.configuration(v) })

	for _, o := range []api.Outcome{
		{Status: "ok"},
		{Status: "ok", Value: json.RawMessage(` {"a" : "<b>"} `), Content: json.RawMessage(`[]`)},
		{Status: "error", Error: &api.OutcomeError{Code: "c", Message: "m&"}, Message: "x"},
		{Status: "error", Error: &api.OutcomeError{Code: "c", Retryable: true, Details: json.RawMessage(`{"d":1}`)}},
	} {
		got, err := encodeWith(func(e *encoder) { e.Outcome(&o) })
		if want := mustMarshal(t, o); err != nil || string(got) != string(want) {
			t.Errorf("outcome %+v:\n got %s %v\nwant %s", o, got, err, want)
		}
	}
	for _, parts := range [][]json.RawMessage{nil, {}, {json.RawMessage(`{"a": 1}`), json.RawMessage(`"<"`)}} {
		got, err := encodeWith(func(e *encoder) { e.RawArray(parts) })
		if want := mustMarshal(t, parts); err != nil || string(got) != string(want) {
			t.Errorf("parts %s:\n got %s %v\nwant %s", parts, got, err, want)
		}
	}
}

// TestModelRequestKeepsAnEmptyToolList: a model request that offers no
// tools (an empty, non-nil list) reaches the host as an empty list, which
// offers none, not as an absent one, which offers the session's tools:
// the same loop offers the same tools natively and in Wasm.
func TestModelRequestKeepsAnEmptyToolList(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tools []api.ToolDefinition
	}{
		{"no tools", []api.ToolDefinition{}},
		{"session tools", nil},
		{"one tool", []api.ToolDefinition{{Name: "t", InputSchema: json.RawMessage(`{}`)}}},
	} {
		b, err := encodeWith(func(e *encoder) { e.modelRequest(&api.ModelRequest{Messages: sampleMessages(), Tools: tc.tools}) })
		if err != nil {
			t.Fatal(err)
		}
		var host api.ModelRequest // as the host decodes it
		if err := json.Unmarshal(b, &host); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if (host.Tools == nil) != (tc.tools == nil) || len(host.Tools) != len(tc.tools) {
			t.Errorf("%s: the host reads tools %#v from %s, want %#v", tc.name, host.Tools, b, tc.tools)
		}
	}
}
