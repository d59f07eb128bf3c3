package pgstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/agentlooptest"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/pgstore"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// testTool is the loophost test Tool (its input names what it does).
func testTool(t *testing.T) []byte {
	t.Helper()
	return agentlooptest.Build(t, "../loophost/testdata/tool")
}

// toolSessionBody is a session create whose Tool "t" runs the admitted
// Tool module id on the built-in brain environment.
func toolSessionBody(id string) []byte {
	return []byte(`{"model":{"provider":"scripted","name":"m"},` +
		`"environments":[{"name":"brain","driver":"brain"}],` +
		`"tools":[{"name":"t","description":"test tool","input_schema":{"type":"object"},` +
		`"placements":{"brain":{"implementation":{"type":"brain_component","entrypoint":"run","id":"` + id + `"}}}}]}`)
}

// admitToolOn posts module to POST /v1/tools on n and answers its id.
func admitToolOn(t *testing.T, n *node, module []byte) string {
	t.Helper()
	status, body := request(t, n, "POST", "/v1/tools", "application/octet-stream", "admit-tool", module)
	var adm struct{ ID, Status string }
	if json.Unmarshal(body, &adm); status != http.StatusOK || adm.Status != "admitted" || len(adm.ID) != 64 {
		t.Fatalf("tool admission = %d %s", status, body)
	}
	return adm.ID
}

// TestToolAdmittedOnOneNodeRunsOnAnother admits a Wasm Tool on node A:
// node B, which never saw the upload, answers GET /v1/tools/{id} with
// A's metadata, runs the Tool in a session it owns, and keeps the module
// in its own tools directory; the Tool is not an agentloop there, and an
// id admitted nowhere stays unknown.
func TestToolAdmittedOnOneNodeRunsOnAnother(t *testing.T) {
	dbURL, keyFile := pgtest.Database(t), sealingKey(t)
	a, b := clusterNode(t, dbURL, keyFile, 10), clusterNode(t, dbURL, keyFile, 10)
	module := testTool(t)
	id := admitToolOn(t, a, module)
	local := filepath.Join(b.dir, "tools", id+".wasm")
	if _, err := os.Stat(local); err == nil {
		t.Fatal("B holds the Tool before it was named there")
	}
	_, onA := request(t, a, "GET", "/v1/tools/"+id, "", "", nil)
	if status, onB := request(t, b, "GET", "/v1/tools/"+id, "", "", nil); status != http.StatusOK || !bytes.Equal(onB, onA) {
		t.Fatalf("GET on B = %d %s, want 200 %s as on A", status, onB, onA)
	}
	if status, _ := request(t, b, "GET", "/v1/tools/"+strings.Repeat("0", 64), "", "", nil); status != http.StatusNotFound {
		t.Errorf("a Tool admitted nowhere = %d on B, want 404", status)
	}
	if status, body := request(t, b, "GET", "/v1/agentloops/"+id, "", "", nil); status != http.StatusNotFound {
		t.Errorf("A's Tool is an agentloop on B: %d %s", status, body)
	}
	if got, err := os.ReadFile(local); err != nil || !bytes.Equal(got, module) {
		t.Errorf("B's local copy of the Tool = %d bytes, %v", len(got), err)
	}

	// A session created on B (so owned by B) runs A's Tool there.
	status, body := request(t, b, "POST", "/v1/sessions", "application/json", "create", toolSessionBody(id))
	var sum struct {
		SessionID string `json:"session_id"`
	}
	if json.Unmarshal(body, &sum); status != http.StatusOK {
		t.Fatalf("create on B with A's Tool = %d %s", status, body)
	}
	call, _ := json.Marshal(map[string]any{"input": map[string]any{"message": `{"tool_calls":[{"name":"t","input":{"op":"echo","n":7}}]}`}})
	if status, body := request(t, b, "POST", "/v1/sessions/"+sum.SessionID+"/messages", "application/json", "m1", call); status != http.StatusOK {
		t.Fatalf("turn on B = %d %s", status, body)
	}
	o, kind := lastToolOutcome(t, b, sum.SessionID)
	if kind != api.KindToolCallEnded || o.Status != api.OutcomeOK || !jsonSame(o.Value, `{"op":"echo","n":7}`) {
		t.Fatalf("the Tool call on B = %s %+v, want ended ok with the echo", kind, o)
	}
}

// TestToolRunsAfterFailover: a session created on node A runs A's Tool
// there; A is SIGKILLed, and node B, which never named the Tool before it
// took the session over, runs the session's next tool call with it.
func TestToolRunsAfterFailover(t *testing.T) {
	dbURL, keyFile := pgtest.Database(t), sealingKey(t)
	const lease = 2
	a, b := clusterNode(t, dbURL, keyFile, lease), clusterNode(t, dbURL, keyFile, lease)
	id := admitToolOn(t, a, testTool(t))
	status, body := request(t, a, "POST", "/v1/sessions", "application/json", "create", toolSessionBody(id))
	var sum struct {
		SessionID string `json:"session_id"`
	}
	if json.Unmarshal(body, &sum); status != http.StatusOK {
		t.Fatalf("create on A = %d %s", status, body)
	}
	turn := func(n int) []byte {
		b, _ := json.Marshal(map[string]any{"input": map[string]any{"message": fmt.Sprintf(`{"tool_calls":[{"name":"t","input":{"op":"echo","n":%d}}]}`, n)}})
		return b
	}
	if status, body := request(t, a, "POST", "/v1/sessions/"+sum.SessionID+"/messages", "application/json", "m1", turn(1)); status != http.StatusOK {
		t.Fatalf("turn on A = %d %s", status, body)
	}
	if _, err := os.Stat(filepath.Join(b.dir, "tools", id+".wasm")); err == nil {
		t.Fatal("B holds the Tool before the failover")
	}
	a.cmd.Process.Signal(syscall.SIGKILL)
	<-a.done
	killed := time.Now()
	for {
		status, body = request(t, b, "POST", "/v1/sessions/"+sum.SessionID+"/messages", "application/json", "m2", turn(2))
		if status == http.StatusOK || time.Since(killed) > (lease+10)*time.Second {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if status != http.StatusOK {
		t.Fatalf("turn on B %v after A died = %d %s", time.Since(killed), status, body)
	}
	o, kind := lastToolOutcome(t, b, sum.SessionID)
	if kind != api.KindToolCallEnded || o.Status != api.OutcomeOK || !jsonSame(o.Value, `{"op":"echo","n":2}`) {
		t.Fatalf("the Tool call on B after the failover = %s %+v, want ended ok with the echo", kind, o)
	}
}

// TestAlteredToolIsRefused admits a Tool on node A and alters its stored
// bytes: node B, fetching it, refuses it (no admission, no session with
// it, no local copy) and runs nothing, while A, which compiled it at
// admission, still answers it.
func TestAlteredToolIsRefused(t *testing.T) {
	dbURL, keyFile := pgtest.Database(t), sealingKey(t)
	a, b := clusterNode(t, dbURL, keyFile, 10), clusterNode(t, dbURL, keyFile, 10)
	id := admitToolOn(t, a, testTool(t))
	// Still a valid module, but not the one admitted: a custom section
	// appended changes the hash and nothing the module does.
	sqlExec(t, dbURL, `UPDATE brain_tool_modules SET bytes = bytes || '\x000403616263'::bytea WHERE id = $1`, id)
	// Refused as an error, not answered unknown: the id is admitted,
	// the bytes are not the ones admitted.
	if status, body := request(t, b, "GET", "/v1/tools/"+id, "", "", nil); status != http.StatusInternalServerError {
		t.Errorf("GET of an altered Tool on B = %d %s, want 500", status, body)
	}
	if status, body := request(t, b, "POST", "/v1/sessions", "application/json", "create", toolSessionBody(id)); status == http.StatusOK {
		t.Errorf("a session with an altered Tool was created on B: %s", body)
	}
	if _, err := os.Stat(filepath.Join(b.dir, "tools", id+".wasm")); err == nil {
		t.Error("B stored the altered Tool")
	}
	if status, _ := request(t, a, "GET", "/v1/tools/"+id, "", "", nil); status != http.StatusOK {
		t.Errorf("GET on A = %d, want 200 (A compiled the Tool at admission)", status)
	}
}

// lastToolOutcome answers the outcome of the session's last tool call on
// n and its terminal record kind.
func lastToolOutcome(t *testing.T, n *node, id string) (api.Outcome, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var started uint64
	var end api.Event
	for ev, err := range n.client(t).Sessions.Open(id).Events(ctx, 0) {
		if err != nil {
			t.Fatalf("events of %s: %v", id, err)
		}
		switch ev.EventType {
		case api.KindToolCallStarted:
			started = ev.Sequence
		case api.KindToolCallEnded, api.KindToolCallFailed:
			end = ev
		}
	}
	if started == 0 || end.EventType == "" {
		t.Fatalf("no finished tool call in session %s", id)
	}
	var d struct {
		Outcome api.Outcome `json:"outcome"`
	}
	if err := json.Unmarshal(end.Data, &d); err != nil {
		t.Fatalf("%s data: %v", end.EventType, err)
	}
	return d.Outcome, end.EventType
}

func jsonSame(a json.RawMessage, b string) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal([]byte(b), &y) == nil && sameJSON(x, y)
}

func sameJSON(x, y any) bool {
	bx, _ := json.Marshal(x)
	by, _ := json.Marshal(y)
	return bytes.Equal(bx, by)
}

// TestToolModules: Tool module bytes put on one node are read on another,
// apart from the agentloop modules; damaged bytes are refused.
func TestToolModules(t *testing.T) {
	url := pgtest.Database(t)
	a, b := openDB(t, url, nil), openDB(t, url, nil)
	ctx := context.Background()
	wasm := []byte("\x00asm\x01\x00\x00\x00 tool bytes")
	id, err := a.Tools().PutModule(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := b.Tools().PutModule(ctx, wasm); err != nil || again != id {
		t.Fatalf("second PutModule = %s, %v", again, err)
	}
	if got, found, err := b.Tools().SharedModule(ctx, id); err != nil || !found || !bytes.Equal(got, wasm) {
		t.Fatalf("Tool module on another node = %q %v %v", got, found, err)
	}
	if _, found, err := b.SharedModule(ctx, id); found || err != nil {
		t.Fatalf("a Tool module is an agentloop module: %v %v", found, err)
	}
	if _, found, err := b.Tools().SharedModule(ctx, strings.Repeat("0", 64)); found || err != nil {
		t.Fatalf("unknown Tool module = %v %v", found, err)
	}
	sqlExec(t, url, "UPDATE brain_tool_modules SET bytes = 'x'::bytea")
	if _, _, err := b.Tools().SharedModule(ctx, id); !errors.Is(err, pgstore.ErrModuleDamaged) {
		t.Fatalf("damaged Tool module = %v, want ErrModuleDamaged", err)
	}
}

// TestVersion2DatabaseMigrates: a database at schema version 2 (before
// Tool modules were shared) is brought to this binary's version at Open,
// keeping what it held.
func TestVersion2DatabaseMigrates(t *testing.T) {
	url := pgtest.Database(t)
	ctx := context.Background()
	db := openDB(t, url, nil)
	id, err := db.PutModule(ctx, []byte("agentloop bytes"))
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	sqlExec(t, url, "DROP TABLE brain_tool_modules")
	sqlExec(t, url, "UPDATE brain_schema SET version = 2")
	db = openDB(t, url, nil)
	if got, err := db.Module(ctx, id); err != nil || string(got) != "agentloop bytes" {
		t.Fatalf("agentloop module after the migration = %q, %v", got, err)
	}
	if _, err := db.Tools().PutModule(ctx, []byte("tool bytes")); err != nil {
		t.Fatalf("Tool module after the migration: %v", err)
	}
}
