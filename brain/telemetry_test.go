package brain_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/braintest"
	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// forgedRecord is what the Tool sends for input {"forge":true}: it tries
// to set its own origin, and its text appears nowhere else.
const forgedRecord = `{"probe":"sent-by-the-tool","session_id":"ses_forged","origin":{"kind":"agentloop","sequence":1}}`

// telemetryTool is a provider whose Tool sends the telemetry records its
// input lists, then answers how many calls failed.
type telemetryTool struct{ envsdk.Base }

func (telemetryTool) Execute(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	var in struct {
		Records []json.RawMessage `json:"records"`
		Repeat  int               `json:"repeat"`
		Forge   bool              `json:"forge"`
	}
	if err := json.Unmarshal(x.Input, &in); err != nil {
		return envapi.Receipt{}, envsdk.Fail(envapi.CodeInvalidInput, err.Error())
	}
	failed := 0
	if in.Forge {
		in.Records = append(in.Records, json.RawMessage(forgedRecord))
	}
	for range max(in.Repeat, 1) {
		for _, r := range in.Records {
			if err := x.Invocation.Telemetry(c.Context(), r); err != nil {
				failed++
			}
		}
	}
	return envsdk.Output(map[string]int{"failed": failed})
}

// startTelemetry runs Brain with the telemetry tool on environment "box"
// and the telemetry file path, and answers a session using it.
func startTelemetry(t *testing.T, path string, edit func(*brain.Telemetry)) (*braintest.Brain, string) {
	t.Helper()
	return startTelemetryWith(t, func(c *brain.Config) {
		c.Telemetry.File = path
		if edit != nil {
			edit(&c.Telemetry)
		}
	})
}

// startTelemetryWith is startTelemetry with the whole configuration
// edited.
func startTelemetryWith(t *testing.T, edit func(*brain.Config)) (*braintest.Brain, string) {
	t.Helper()
	b := braintest.Start(t, braintest.Options{
		Environments: map[string]braintest.Environment{"box": {Handler: envsdk.NewHandler(telemetryTool{}, nil)}},
		Edit:         edit,
	})
	sess, err := b.Client(t).Sessions.Create(context.Background(), api.CreateSessionRequest{
		Model:        api.ModelConfig{Provider: "scripted", Name: "m"},
		Environments: []api.Environment{{Name: "box", Driver: "box"}},
		Tools: []api.Tool{{Name: "probe", Description: "sends telemetry", InputSchema: json.RawMessage(`{"type":"object"}`),
			Placements: map[string]api.Placement{"box": {Implementation: json.RawMessage(`{}`)}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b, sess.ID
}

// probeTurn runs a turn whose model calls the probe tool with input, and
// streams its answer as live deltas.
func probeTurn(t *testing.T, b *braintest.Brain, id string, input any) []api.Event {
	t.Helper()
	msg, _ := json.Marshal(map[string]any{"tool_calls": []any{map[string]any{"name": "probe", "input": input}},
		"reply": "probed and streamed", "stream": true})
	s := b.Client(t).Sessions.Open(id)
	if _, err := s.Send(context.Background(), api.UserInput{Message: string(msg)}); err != nil {
		t.Fatalf("turn: %v", err)
	}
	var evs []api.Event
	for ev, err := range s.Events(context.Background(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// liveFrames follows session id's event stream from its last committed
// event, and answers once that event arrived: the stream is then past its
// catch-up from the journal, so what the session does next reaches it
// live (the catch-up writes records committed meanwhile from the journal,
// without the live deltas that came between them). The channel it
// returns yields the data of the live frames (those without an id) seen
// until turn_ended.
func liveFrames(ctx context.Context, t *testing.T, b *braintest.Brain, id string) <-chan []string {
	t.Helper()
	sum, err := b.Client(t).Sessions.Open(id).Refresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/v1/sessions/%s/events?after=%d", b.URL, id, sum.LastSequence-1), nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan []string, 1)
	caught := make(chan struct{})
	go func() {
		defer resp.Body.Close()
		var deltas []string
		hasID, event := false, ""
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 8<<20)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				hasID = true
				if line[4:] == strconv.FormatUint(sum.LastSequence, 10) {
					close(caught)
				}
			case strings.HasPrefix(line, "event: "):
				event = line[7:]
			case strings.HasPrefix(line, "data: "):
				if !hasID {
					deltas = append(deltas, line[6:])
				}
			case line == "":
				if hasID && event == api.KindTurnEnded {
					out <- deltas
					return
				}
				hasID, event = false, ""
			}
		}
		out <- deltas
	}()
	select {
	case <-caught:
	case <-ctx.Done():
		t.Fatalf("the stream never sent the session's last event %d", sum.LastSequence)
	}
	return out
}

func lastOf(evs []api.Event, kind string) api.Event {
	var out api.Event
	for _, e := range evs {
		if e.EventType == kind {
			out = e
		}
	}
	return out
}

// metricValue reads one sample of /metrics ("" when absent).
func metricValue(t *testing.T, b *braintest.Brain, sample string) string {
	t.Helper()
	resp, err := http.Get(b.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), sample+" "); ok {
			return v
		}
	}
	return ""
}

func waitMetric(t *testing.T, b *braintest.Brain, sample, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := metricValue(t, b, sample)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %q, want %q", sample, got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func telemetryLines(t *testing.T, path string) []map[string]json.RawMessage {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]json.RawMessage
	for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if l == "" {
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// TestTelemetryOfAToolTurnLandsInTheFile: a tool's record is written with
// the origin Brain assigns (session, turn, activation, tool call) however
// the record dresses itself; it is not journalled; the turn's live model
// deltas are not written.
func TestTelemetryOfAToolTurnLandsInTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "telemetry.jsonl")
	b, id := startTelemetry(t, path, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	live := liveFrames(ctx, t, b, id)
	evs := probeTurn(t, b, id, map[string]any{"forge": true})
	deltas := <-live
	if len(deltas) == 0 {
		t.Fatal("the turn streamed no live model output")
	}
	waitMetric(t, b, "brain_telemetry_records_total", "1")
	if got := lastOf(evs, api.KindTurnEnded); got.Sequence == 0 {
		t.Fatalf("the turn did not end: %v", evs)
	}
	lines := telemetryLines(t, path)
	if len(lines) != 1 {
		t.Fatalf("%d lines, want the tool's one: %v", len(lines), lines)
	}
	l := lines[0]
	tool := lastOf(evs, "tool_call_started")
	want := map[string]string{
		"session_id": `"` + id + `"`,
		"turn":       jsonNum(lastOf(evs, "turn_started").Sequence),
		"activation": jsonNum(lastOf(evs, "activation_started").Sequence),
		"origin":     `{"kind":"tool","sequence":` + jsonNum(tool.Sequence) + `}`,
		"tool":       `"probe"`, "environment": `"box"`, "record": forgedRecord,
	}
	for k, v := range want {
		if string(l[k]) != v {
			t.Errorf("%s = %s, want %s", k, l[k], v)
		}
	}
	for _, e := range evs {
		if bytes.Contains(e.Data, []byte("sent-by-the-tool")) {
			t.Errorf("the record reached the journal in %s", e.EventType)
		}
	}
	// The live deltas the stream carried are not in the file.
	data, _ := os.ReadFile(path)
	for _, d := range deltas {
		if bytes.Contains(data, []byte("probed")) || bytes.Contains(data, []byte(d)) {
			t.Errorf("a live model delta %q was written as telemetry:\n%s", d, data)
		}
	}
	if metricValue(t, b, `brain_telemetry_dropped_total{reason="no_sink"}`) != "0" {
		t.Error("records counted as dropped for want of a sink")
	}
}

func jsonNum(n uint64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestTelemetryFloodIsDroppedAndCounted: an oversized record and a flood
// beyond the session's rate are dropped and counted; the turn ends well
// and the tool's calls all succeed.
func TestTelemetryFloodIsDroppedAndCounted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "telemetry.jsonl")
	b, id := startTelemetry(t, path, func(c *brain.Telemetry) { c.MaxRecordBytes = 1024; c.SessionRate = 1 })
	big := json.RawMessage(`"` + strings.Repeat("x", 2000) + `"`)
	start := time.Now()
	probeTurn(t, b, id, map[string]any{"records": []json.RawMessage{big}})
	evs := probeTurn(t, b, id, map[string]any{"records": []json.RawMessage{json.RawMessage(`{"flood":1}`)}, "repeat": 60})
	elapsed := time.Since(start)
	ended := lastOf(evs, "tool_call_ended")
	if !bytes.Contains(ended.Data, []byte(`"failed":0`)) {
		t.Errorf("telemetry calls failed: %s", ended.Data)
	}
	waitMetric(t, b, `brain_telemetry_dropped_total{reason="oversized"}`, "1")
	// The bucket holds 2 and refills at 1 a second.
	written := len(telemetryLines(t, path))
	if bound := 2 + int(elapsed.Seconds()) + 1; written < 2 || written > bound {
		t.Errorf("%d records written in %v, want 2..%d", written, elapsed, bound)
	}
	waitMetric(t, b, "brain_telemetry_records_total", jsonNum(uint64(written)))
	waitMetric(t, b, `brain_telemetry_dropped_total{reason="rate_session"}`, jsonNum(uint64(60-written)))
}

// TestTelemetryFileFaultPasses: while the file cannot be written (a full
// device stands in for it) records are dropped and counted and turns are
// unaffected; once the fault passes records land again.
func TestTelemetryFileFaultPasses(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /dev/full")
	}
	path := filepath.Join(t.TempDir(), "telemetry.jsonl")
	if err := os.Symlink("/dev/full", path); err != nil {
		t.Fatal(err)
	}
	b, id := startTelemetry(t, path, nil)
	rec := func(s string) map[string]any {
		return map[string]any{"records": []json.RawMessage{json.RawMessage(`{"phase":"` + s + `"}`)}}
	}
	evs := probeTurn(t, b, id, rec("full"))
	if lastOf(evs, api.KindTurnEnded).Sequence == 0 || !bytes.Contains(lastOf(evs, "tool_call_ended").Data, []byte(`"failed":0`)) {
		t.Fatalf("a failing sink affected the turn: %v", evs)
	}
	waitMetric(t, b, `brain_telemetry_dropped_total{reason="write_error"}`, "1")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	probeTurn(t, b, id, rec("recovered"))
	waitMetric(t, b, "brain_telemetry_records_total", "1")
	lines := telemetryLines(t, path)
	if len(lines) != 1 || string(lines[0]["record"]) != `{"phase":"recovered"}` {
		t.Errorf("after the fault: %v", lines)
	}
}

// TestTelemetryFileMustOpen: a telemetry file that cannot be opened fails
// New, naming the field.
func TestTelemetryFileMustOpen(t *testing.T) {
	_, err := brain.New(context.Background(), brain.Config{DataDir: t.TempDir(), Telemetry: brain.Telemetry{File: t.TempDir()}})
	if err == nil || !strings.Contains(err.Error(), "Config.Telemetry.File") {
		t.Errorf("New with a directory as the telemetry file = %v", err)
	}
	err = (&brain.Config{DataDir: "d", Telemetry: brain.Telemetry{MaxFileBytes: 10, SessionRate: -1}}).Validate()
	if err == nil || !strings.Contains(err.Error(), "BRAIN_TELEMETRY_MAX_FILE_BYTES") || !strings.Contains(err.Error(), "BRAIN_TELEMETRY_SESSION_RATE") {
		t.Errorf("Validate = %v", err)
	}
}
