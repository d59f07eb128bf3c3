package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
)

// foldKinds are the kinds FuzzFold picks from: every kind the fold reads.
var foldKinds = []string{
	api.KindSessionCreationStarted, api.KindSessionCreationEnded, api.KindSessionCreationFailed,
	api.KindSessionEndStarted, api.KindSessionEndFailed, api.KindSessionEnded,
	api.KindTurnStarted, api.KindTurnEnded, api.KindTurnFailed,
	api.KindActivationStarted, api.KindActivationEnded, api.KindActivationFailed,
	api.KindTranscriptDelta, api.KindKVSet, api.KindKVDelete,
	api.KindModelCallStarted, api.KindModelCallEnded, api.KindModelCallFailed,
	api.KindToolCallStarted, api.KindToolCallEnded, api.KindToolCallFailed, api.KindToolCallReturned,
	api.KindEnvironmentSetupStarted, api.KindEnvironmentSetupEnded, api.KindEnvironmentSetupFailed,
	api.KindEnvironmentCallStarted, api.KindEnvironmentDetachStarted, api.KindEnvironmentDetachFailed,
	api.KindEnvironmentTeardownStarted, api.KindEnvironmentTeardownEnded, api.KindOutputEmitted,
	kindEnvironmentCreated, kindEnvironmentUpdated, kindEnvironmentReplaced, kindEnvironmentDeleted,
}

// FuzzFold folds records of any kind with any JSON data after a session's
// creation, as a journal whose bytes check out but whose records are
// hostile would: the fold refuses what it cannot fold and never panics,
// and whatever it folded survives its checkpoint: the projection decoded
// from its own encoding encodes to the same bytes and folds the next
// record alike.
func FuzzFold(f *testing.F) {
	f.Add([]byte{12}, `{"keep":0,"append":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"saved":0}`)
	f.Add([]byte{12}, `{"keep":-1,"append":[],"saved":0}`)
	f.Add([]byte{12, 12}, `{"keep":0,"append":[],"saved":0,"refs":[{"sequence":2,"path":"input","at":0}]}`+"\n"+`{"keep":5}`)
	f.Add([]byte{6, 9, 15, 16, 12, 10, 7}, `{"input":{"message":"hello"}}`+"\n"+`{}`+"\n"+`{"messages":1,"context":{"through_sequence":3,"delta":{"keep":0,"append":[],"saved":0}}}`+
		"\n"+`{"sequence":4,"result":{"message":{"role":"assistant","content":[{"type":"text","text":"x"}]}}}`+
		"\n"+`{"keep":0,"append":[],"saved":0}`+"\n"+`{"sequence":3,"delivered_through":99}`+"\n"+`{"sequence":2}`)
	f.Add([]byte{31, 22, 23, 34}, `{"declaration":{"name":"box"}}`+"\n"+`{"environment":"box"}`+"\n"+`{"sequence":3,"receipt":{"on_turn_end":"detach"}}`+"\n"+`{"environment":{"name":"box","sequence":2}}`)
	f.Add([]byte{30, 13, 14}, `{"environment":"box","output":{"observation":{"scope":"operation","sequence":3,"resolution":{"status":"ready"}}}}`+"\n"+`{"key":"k","value":[1]}`+"\n"+`{"key":"k"}`)
	f.Fuzz(func(t *testing.T, kinds []byte, datas string) {
		// Both projections read referenced records from the journal, as
		// a loaded session does.
		journaled := map[uint64]journal.Record{}
		lookup := func(seq uint64) (journal.Record, error) {
			if r, ok := journaled[seq]; ok {
				return r, nil
			}
			return journal.Record{}, journal.ErrNotFound
		}
		st := newState()
		st.lookup = lookup
		create, _ := json.Marshal(api.CreateSessionRequest{
			Model:        api.ModelConfig{Provider: "scripted", Name: "m"},
			Environments: []api.Environment{{Name: "box", Driver: api.DriverHTTP, URL: "http://127.0.0.1:1"}},
		})
		if err := st.apply(journal.Record{Sequence: 1, Kind: api.KindSessionCreationStarted, Data: create}); err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(datas, "\n")
		var next journal.Record
		for i, k := range kinds {
			if i >= len(parts) || i >= 64 {
				break
			}
			r := journal.Record{Sequence: st.Next, Kind: foldKinds[int(k)%len(foldKinds)], RecordedAtMs: int64(i), Data: json.RawMessage(parts[i])}
			if len(r.Data) == 0 {
				r.Data = nil
			} else if !json.Valid(r.Data) {
				continue // the journal stores JSON only
			}
			if i == len(kinds)-1 || i == len(parts)-1 {
				next = r // kept for after the checkpoint
				break
			}
			journaled[r.Sequence] = r
			_, _ = Project(r)
			_ = st.apply(r)
		}
		enc, err := st.encode()
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		c := newState()
		c.lookup = lookup
		if err := json.Unmarshal(enc, c); err != nil {
			t.Fatalf("the projection's own checkpoint does not decode: %v\n%s", err, enc)
		}
		again, err := c.encode()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(enc, again) {
			t.Fatalf("a projection decoded from its checkpoint encodes otherwise:\n%s\n%s", enc, again)
		}
		if next.Kind == "" {
			return
		}
		next.Sequence = st.Next
		journaled[next.Sequence] = next
		e1, e2 := st.apply(next), c.apply(next)
		if (e1 == nil) != (e2 == nil) {
			t.Fatalf("the next record folds differently after the checkpoint: %v, %v", e1, e2)
		}
		a, _ := st.encode()
		b, _ := c.encode()
		if !bytes.Equal(a, b) {
			t.Fatalf("the next record folds differently after the checkpoint:\n%s\n%s", a, b)
		}
	})
}

// FuzzCheckpointProjection starts a projection from any checkpoint payload
// whose frame checked out, as a load does, and runs the records of a turn
// and an environment's life on it: a payload is taken only when the
// engine can go on from it, and nothing it holds makes the fold panic.
func FuzzCheckpointProjection(f *testing.F) {
	base := newState()
	create, _ := json.Marshal(api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m"},
		Environments: []api.Environment{{Name: "box", Driver: api.DriverHTTP, URL: "http://127.0.0.1:1"}}})
	_ = base.apply(journal.Record{Sequence: 1, Kind: api.KindSessionCreationStarted, Data: create})
	base.Session = "s"
	good, _ := base.encode()
	f.Add(good, uint64(1))
	f.Add([]byte(`{"session":"s","status":"idle","next":2,"config":{},"kv":null,"open":null,"envs":null,"returned":null}`), uint64(1))
	f.Add([]byte(`{"session":"s","status":"idle","next":2,"config":{},"envs":{"box":null}}`), uint64(1))
	f.Add([]byte(`{"session":"s","status":"running","next":5,"config":{},"transcript":[{"role":"user"}],"turn":3,"activation":4,"open":{"4":{"prefix":"tool_call","environment":"box"}},"actionable":[1,2],"observed":{"1":5}}`), uint64(4))
	f.Fuzz(func(t *testing.T, payload []byte, through uint64) {
		st := fromCheckpoint(payload, "s", through)
		if st == nil {
			return
		}
		if st.Config == nil || st.Next != through+1 {
			t.Fatalf("took a checkpoint of %d with next %d, config %v", through, st.Next, st.Config)
		}
		for name, e := range st.Envs {
			if e == nil {
				t.Fatalf("took a checkpoint naming environment %q without its state", name)
			}
		}
		if st.Next > 1<<62 {
			return
		}
		seq := st.Next
		recs := []struct{ kind, data string }{
			{api.KindTurnStarted, `{"input":{"message":"hi"}}`},
			{api.KindActivationStarted, `{}`},
			{api.KindKVSet, `{"key":"k","value":1}`},
			{api.KindTranscriptDelta, `{"keep":0,"append":[{"role":"user","content":[]}],"saved":0}`},
			{api.KindEnvironmentSetupStarted, `{"environment":"box"}`},
			{api.KindEnvironmentSetupEnded, `{"sequence":` + fmt.Sprint(seq+4) + `}`},
			{api.KindOutputEmitted, `{"environment":"box","output":{"observation":{"scope":"environment","availability":"up"}}}`},
			{api.KindActivationEnded, `{"sequence":` + fmt.Sprint(seq+1) + `,"delivered_through":` + fmt.Sprint(seq+6) + `}`},
			{api.KindTurnEnded, `{}`},
		}
		for i, r := range recs {
			_ = st.apply(journal.Record{Sequence: seq + uint64(i), Kind: r.kind, Data: json.RawMessage(r.data)})
		}
		if _, err := st.encode(); err != nil {
			t.Fatalf("encode: %v", err)
		}
		_ = st.heapBytes()
	})
}
