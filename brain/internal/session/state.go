package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
)

// openEffect is a started effect without a terminal record.
type openEffect struct {
	Prefix      string `json:"prefix"`
	Environment string `json:"environment,omitempty"`
}

// envState is the folded state of one environment binding.
type envState struct {
	Binding   uint64 `json:"binding"`
	State     string `json:"state"`
	OnTurnEnd string `json:"on_turn_end,omitempty"`
	// SetUp is set once a setup was started for the binding; update is
	// refused from then on.
	SetUp bool `json:"set_up,omitempty"`
	// Decl is the declaration of an instance created through the control
	// API (declared environments live in the creation record).
	Decl *api.Environment `json:"decl,omitempty"`
	// Template names the template an instance was created from.
	Template string `json:"template,omitempty"`
	// Configuration replaces the declaration's after an update.
	Configuration json.RawMessage `json:"configuration,omitempty"`
	// Observation is the last actionable observation reported for the
	// binding; Availability follows environment-scope observations.
	Availability string          `json:"availability,omitempty"`
	Observation  json.RawMessage `json:"observation,omitempty"`
	ObservedAtMs int64           `json:"observed_at_ms,omitempty"`
	// Pending is a lifecycle operation (setup, detach, teardown) whose
	// outcome is unknown: the binding stays unknown, and keeps its
	// capacity, until an operation-scope observation resolves it.
	Pending uint64 `json:"pending,omitempty"`
}

// Private record kinds of the environment control API. They are journal
// records like any other (folded, checkpointed), but not public events.
const (
	kindEnvironmentCreated = "_environment_created"
	kindEnvironmentUpdated = "_environment_updated"
	kindEnvironmentDeleted = "_environment_deleted"
	// kindEnvironmentReplaced starts a new incarnation of a binding after
	// a method with effect "replace": its sequence is the new binding.
	kindEnvironmentReplaced = "_environment_replaced"
)

// kindSessionInterrupted is the private record of an interrupt (and of a
// restart's recovery): no automatic activation starts until the next
// turn_started. It is a record, not engine memory, so that the rule
// outlives passivation and restarts.
const kindSessionInterrupted = "_session_interrupted"

// Environment binding states.
const (
	envDeclared = "declared"
	envStarting = "starting"
	envReady    = "ready"
	envFailed   = "failed"
	envUnknown  = "unknown"
	envDetached = "detached"
	envDeleted  = "deleted"
)

// state is the projection of one session's journal. It is what the
// checkpoint stores.
//
// Its JSON is the fields of stateHead, "transcript", then the fields of
// stateTail, as if they were declared in that order in one struct (the
// embedded structs' fields are promoted). The split lets a checkpoint
// reuse the encoding of the transcript's earlier messages (see encode).
type state struct {
	stateHead
	Transcript []api.Message `json:"transcript"`
	stateTail

	// enc is the JSON of the transcript's first encMsgs messages, joined
	// by commas: what the last checkpoint encoded of it (see encode).
	enc     []byte
	encMsgs int
	// ckptThrough is the sequence the loaded checkpoint covered.
	ckptThrough uint64
	// cfgBytes caches the heap estimate of Config (see heapBytes).
	cfgBytes int64
	// heapMsgBytes caches the heap estimate of the first heapMsgs
	// messages of the transcript (see heapBytes).
	heapMsgs     int
	heapMsgBytes int64
	// held are the large messages of this activation's model calls since
	// the last transcript_delta; lookup reads a record the fold did not
	// see (see messageRef).
	held   []heldMessage
	lookup func(uint64) (journal.Record, error)
	// lent says the transcript's spare capacity was lent to a loop
	// (lend): the state no longer writes into it (extend).
	lent bool
}

// stateHead holds the fields of the projection encoded before its
// transcript.
type stateHead struct {
	// Session is the id of the session the projection belongs to, set
	// when a checkpoint is written: a checkpoint of another session is
	// not started from (see fromCheckpoint).
	Session  string                    `json:"session,omitempty"`
	Status   api.Status                `json:"status"`
	Next     uint64                    `json:"next"`
	LastAtMs int64                     `json:"last_at_ms"`
	Config   *api.CreateSessionRequest `json:"config,omitempty"`
}

// stateTail holds the fields of the projection encoded after its
// transcript.
type stateTail struct {
	TranscriptSeq uint64                     `json:"transcript_seq"`
	KV            map[string]json.RawMessage `json:"kv"`
	Open          map[uint64]openEffect      `json:"open"`
	Turn          uint64                     `json:"turn"`
	Activation    uint64                     `json:"activation"`
	Envs          map[string]*envState       `json:"envs"`
	Returned      map[uint64]bool            `json:"returned"`
	Actionable    []uint64                   `json:"actionable"`
	Delivered     uint64                     `json:"delivered"`
	// Observed holds the size of each pending actionable observation
	// (output_emitted), by sequence: together they share the emission
	// budget until an activation completes their delivery.
	Observed map[uint64]int64 `json:"observed,omitempty"`
	// Interrupted holds automatic activations back until the next
	// message: set by _session_interrupted, cleared by turn_started.
	Interrupted bool `json:"interrupted,omitempty"`
	// Handed is the newest actionable record pending when the running
	// activation started: the newest of its activation_started events,
	// or of the records past the page it was handed (api.MaxPageEvents).
	// Held is the newest pending when an activation that failed started:
	// what it left pending wakes no activation of its own, only a newer
	// actionable record or a message does, until an activation ends
	// (then what it did not deliver wakes the loop). Both are folded, so
	// that the rule outlives passivation and restarts.
	Handed uint64 `json:"handed,omitempty"`
	Held   uint64 `json:"held,omitempty"`
}

func newState() *state {
	return &state{
		stateHead: stateHead{Next: 1},
		stateTail: stateTail{
			KV: map[string]json.RawMessage{}, Open: map[uint64]openEffect{},
			Envs: map[string]*envState{}, Returned: map[uint64]bool{},
		},
	}
}

// observedBytes is what pending observations hold of the emission budget.
func (st *state) observedBytes() int64 {
	var n int64
	for _, b := range st.Observed {
		n += b
	}
	return n
}

// last is the last committed sequence.
func (st *state) last() uint64 { return st.Next - 1 }

// apply folds one committed record into the state.
func (st *state) apply(r journal.Record) error { return st.fold(r, nil) }

// fold is apply for a record the engine has just built: what it knows of
// the record (k, when not nil) is taken as given instead of decoded back
// out of the record's data, where it is the same (see known).
func (st *state) fold(r journal.Record, k *known) error {
	if r.Sequence != st.Next {
		return fmt.Errorf("session: record %d folded at %d: %w", r.Sequence, st.Next, ErrInvalid)
	}
	st.Next = r.Sequence + 1
	st.LastAtMs = r.RecordedAtMs
	var p foldPayload
	if needsPayload(r.Kind) {
		if err := json.Unmarshal(r.Data, &p); err != nil {
			return fmt.Errorf("session: record %d (%s): %w", r.Sequence, r.Kind, err)
		}
	} else if k != nil && k.hasRef {
		p.Sequence = k.ref
	} else if hasRef(r.Kind) {
		var rf ref
		if err := json.Unmarshal(r.Data, &rf); err != nil {
			return fmt.Errorf("session: record %d (%s): %w", r.Sequence, r.Kind, err)
		}
		p.Sequence = rf.Sequence
	}
	switch r.Kind {
	case api.KindSessionCreationStarted:
		var c api.CreateSessionRequest
		if err := json.Unmarshal(r.Data, &c); err != nil {
			return fmt.Errorf("session: creation record: %w", err)
		}
		st.Config = &c
		st.Status = api.StatusCreating
		for _, e := range c.Environments {
			st.Envs[e.Name] = &envState{Binding: r.Sequence, State: envDeclared}
		}
	case api.KindSessionCreationEnded:
		st.Status = api.StatusIdle
	case api.KindSessionCreationFailed:
		st.Status = api.StatusFailed
	case api.KindTurnStarted:
		st.Status, st.Turn = api.StatusRunning, r.Sequence
		st.Interrupted = false
		st.holdInput(r)
	case api.KindTurnEnded, api.KindTurnFailed:
		st.Status, st.Turn = api.StatusIdle, 0
		st.held = nil
	case api.KindActivationStarted:
		st.Activation, st.Handed = r.Sequence, 0
		for _, seq := range p.Events {
			st.Handed = max(st.Handed, seq)
		}
		if n := len(st.Actionable); n > 0 {
			st.Handed = max(st.Handed, st.Actionable[n-1])
		}
	case api.KindActivationEnded:
		st.Activation, st.Handed = 0, 0
		st.held = nil
		if p.DeliveredThrough > st.Delivered {
			st.Delivered = p.DeliveredThrough
		}
		st.Held = min(st.Held, st.Delivered)
		kept := st.Actionable[:0]
		for _, s := range st.Actionable {
			if s > st.Delivered {
				kept = append(kept, s)
			}
		}
		st.Actionable = kept
		for seq := range st.Observed {
			if seq <= st.Delivered {
				delete(st.Observed, seq)
			}
		}
	case api.KindActivationFailed:
		st.Held = max(st.Held, st.Handed)
		st.Activation, st.Handed = 0, 0
		st.held = nil
	case api.KindSessionEndStarted:
		st.Status = api.StatusEnding
	case api.KindSessionEnded:
		st.Status = api.StatusEnded
	case api.KindTranscriptDelta:
		var d transcriptDelta
		if k != nil && k.delta != nil {
			d = *k.delta
		} else if err := json.Unmarshal(r.Data, &d); err != nil {
			return fmt.Errorf("session: record %d: %w", r.Sequence, err)
		}
		if d.Keep < 0 || d.Keep > len(st.Transcript) {
			return fmt.Errorf("session: record %d keeps %d of %d messages: %w", r.Sequence, d.Keep, len(st.Transcript), ErrInvalid)
		}
		app, err := st.appended(r.Sequence, d)
		if err != nil {
			return err
		}
		if d.Keep == len(st.Transcript) {
			st.Transcript = st.extend(app)
		} else {
			// A rewrite must not change messages someone still holds.
			st.Transcript = append(st.Transcript[:d.Keep:d.Keep], app...)
			st.lent = false
		}
		if d.Keep < st.heapMsgs {
			st.heapMsgs, st.heapMsgBytes = 0, 0
		}
		st.forget(d.Keep)
		st.TranscriptSeq = r.Sequence
		st.held = nil
	case api.KindModelCallStarted, api.KindModelCallEnded:
		st.holdMessages(r)
	case api.KindKVSet:
		st.KV[p.Key] = p.Value
	case api.KindKVDelete:
		delete(st.KV, p.Key)
	case api.KindOutputEmitted:
		st.Actionable = append(st.Actionable, r.Sequence)
		if st.Observed == nil {
			st.Observed = map[uint64]int64{}
		}
		st.Observed[r.Sequence] = int64(len(r.Data))
		st.observe(r)
	case kindSessionInterrupted:
		st.Interrupted = true
	case kindEnvironmentCreated:
		var c envCreated
		if err := json.Unmarshal(r.Data, &c); err != nil {
			return fmt.Errorf("session: record %d: %w", r.Sequence, err)
		}
		decl := c.Declaration
		st.Envs[decl.Name] = &envState{Binding: r.Sequence, State: envDeclared, Decl: &decl, Template: c.Template}
	case kindEnvironmentUpdated:
		var u envUpdated
		if err := json.Unmarshal(r.Data, &u); err != nil {
			return fmt.Errorf("session: record %d: %w", r.Sequence, err)
		}
		if e := st.Envs[u.Environment.Name]; e != nil && e.Binding == u.Environment.Sequence {
			e.Configuration = u.Configuration
		}
	case kindEnvironmentReplaced:
		var u envUpdated
		if err := json.Unmarshal(r.Data, &u); err != nil {
			return fmt.Errorf("session: record %d: %w", r.Sequence, err)
		}
		if e := st.Envs[u.Environment.Name]; e != nil && e.Binding == u.Environment.Sequence {
			e.Binding = r.Sequence
			e.Availability, e.Observation, e.ObservedAtMs = "", nil, 0
		}
	case kindEnvironmentDeleted:
		var u envUpdated
		if err := json.Unmarshal(r.Data, &u); err != nil {
			return fmt.Errorf("session: record %d: %w", r.Sequence, err)
		}
		if e := st.Envs[u.Environment.Name]; e != nil && e.Binding == u.Environment.Sequence {
			e.State = envDeleted
		}
	case api.KindToolCallReturned:
		if _, open := st.Open[p.Sequence]; open {
			st.Returned[p.Sequence] = true
		}
	}
	// Effect fences.
	if prefix, ok := strings.CutSuffix(r.Kind, "_started"); ok && isEffect(prefix) {
		st.Open[r.Sequence] = openEffect{Prefix: prefix, Environment: p.Environment}
		if prefix == "environment_setup" {
			if e := st.Envs[p.Environment]; e != nil {
				e.State, e.SetUp = envStarting, true
			}
		}
	}
	for _, suffix := range []string{"_ended", "_failed"} {
		prefix, ok := strings.CutSuffix(r.Kind, suffix)
		if !ok || !isEffect(prefix) {
			continue
		}
		eff, open := st.Open[p.Sequence]
		if !open {
			continue
		}
		delete(st.Open, p.Sequence)
		if prefix == "tool_call" && st.Returned[p.Sequence] {
			delete(st.Returned, p.Sequence)
			st.Actionable = append(st.Actionable, r.Sequence)
		}
		if e := st.Envs[eff.Environment]; e != nil {
			e.fold(prefix, suffix == "_ended", p.Ambiguous, p.Sequence, p.Receipt.OnTurnEnd)
		}
	}
	return nil
}

func (e *envState) fold(prefix string, ok, ambiguous bool, seq uint64, onTurnEnd string) {
	lifecycle := prefix == "environment_setup" || prefix == "environment_detach" || prefix == "environment_teardown"
	switch {
	case lifecycle && ok:
		e.Pending = 0
	case lifecycle && ambiguous:
		// The outcome is unknown: nothing is assumed until the provider
		// resolves the operation.
		e.State, e.Pending = envUnknown, seq
		return
	}
	switch {
	case prefix == "environment_setup" && ok:
		e.State, e.OnTurnEnd = envReady, onTurnEnd
	case prefix == "environment_setup":
		e.State = envFailed
	case prefix == "environment_detach":
		e.State = envDetached
	case prefix == "environment_teardown" && ok:
		e.State = envDeleted
	}
}

func isEffect(prefix string) bool {
	for _, p := range api.EffectPrefixes {
		if p == prefix {
			return true
		}
	}
	return false
}

// observe folds an actionable environment report into its binding.
func (st *state) observe(r journal.Record) {
	var o outputEmitted
	if json.Unmarshal(r.Data, &o) != nil {
		return
	}
	e := st.Envs[o.Environment]
	if e == nil {
		return
	}
	var out struct {
		Observation json.RawMessage `json:"observation"`
	}
	if json.Unmarshal(o.Output, &out) != nil || len(out.Observation) == 0 {
		return
	}
	var obs struct {
		Scope        string `json:"scope"`
		Availability string `json:"availability"`
		Sequence     uint64 `json:"sequence"`
		Resolution   *struct {
			Status string `json:"status"`
		} `json:"resolution"`
	}
	_ = json.Unmarshal(out.Observation, &obs)
	e.Observation, e.ObservedAtMs = out.Observation, r.RecordedAtMs
	switch {
	case obs.Scope == "environment" && obs.Availability != "":
		e.Availability = obs.Availability
	case obs.Scope == "operation" && obs.Resolution != nil && obs.Sequence != 0 && obs.Sequence == e.Pending:
		// The correlated resolution of an unknown lifecycle operation.
		switch obs.Resolution.Status {
		case "ready":
			e.State = envReady
		case "deleted":
			e.State = envDeleted
		case "detached":
			e.State = envDetached
		case "failed":
			e.State = envFailed
		default:
			return
		}
		e.Pending = 0
	}
}

// delta computes the transcript_delta that turns saved into next.
func delta(saved, next []api.Message) transcriptDelta {
	keep := 0
	if n := len(saved); n > 0 && len(next) >= n && &saved[0] == &next[0] {
		// next extends the very array saved is (a lent transcript): its
		// first n messages are saved's, whatever the length.
		keep = n
	}
	// A loop usually extends (a copy of) the transcript it was given:
	// messages that share their blocks with the saved ones are equal
	// without comparing the blocks (sameMessage), so the common prefix
	// costs a pointer test per message.
	for keep < len(saved) && keep < len(next) && sameMessage(saved[keep], next[keep]) {
		keep++
	}
	return transcriptDelta{Keep: keep, Append: append([]api.Message{}, next[keep:]...), Saved: len(saved)}
}

func sameMessage(a, b api.Message) bool {
	if a.Role != b.Role || len(a.Content) != len(b.Content) {
		return false
	}
	if len(a.Content) > 0 && &a.Content[0] == &b.Content[0] {
		// Copies of one message share its blocks.
		return true
	}
	for i := range a.Content {
		if !sameBlock(&a.Content[i], &b.Content[i]) {
			return false
		}
	}
	return true
}

func sameBlock(a, b *api.ContentBlock) bool {
	if a.Type != b.Type || a.Text != b.Text || a.URL != b.URL || a.MediaType != b.MediaType ||
		a.Format != b.Format || a.ID != b.ID || a.Name != b.Name || a.ToolUseID != b.ToolUseID ||
		!bytes.Equal(a.Data, b.Data) || !bytes.Equal(a.Input, b.Input) || !bytes.Equal(a.Content, b.Content) ||
		(a.IsError == nil) != (b.IsError == nil) || (a.IsError != nil && *a.IsError != *b.IsError) ||
		len(a.Media) != len(b.Media) {
		return false
	}
	for i := range a.Media {
		if a.Media[i] != b.Media[i] {
			return false
		}
	}
	return true
}

// foldPayload holds the payload fields the fold reads.
type foldPayload struct {
	Sequence    uint64          `json:"sequence"`
	Environment string          `json:"environment"`
	Key         string          `json:"key"`
	Value       json.RawMessage `json:"value"`
	Ambiguous   bool            `json:"ambiguous"`
	Receipt     struct {
		OnTurnEnd string `json:"on_turn_end"`
	} `json:"receipt"`
	DeliveredThrough uint64 `json:"delivered_through"`
	// Events are the actionable records an activation is handed.
	Events []uint64 `json:"events"`
}

// needsPayload reports kinds whose fold reads more than a sequence.
func needsPayload(kind string) bool {
	switch kind {
	case api.KindKVSet, api.KindKVDelete, api.KindActivationStarted, api.KindActivationEnded,
		api.KindEnvironmentSetupStarted, api.KindEnvironmentSetupEnded, api.KindEnvironmentCallStarted,
		api.KindEnvironmentDetachStarted, api.KindEnvironmentTeardownStarted,
		api.KindEnvironmentSetupFailed, api.KindEnvironmentDetachFailed, api.KindEnvironmentTeardownFailed:
		return true
	}
	return false
}

// hasRef reports kinds whose fold reads only the referenced sequence: an
// effect's end and a tool's return. The ends of anything else (a turn, an
// activation, the session's creation) fold without reading their payload.
func hasRef(kind string) bool {
	if kind == api.KindToolCallReturned {
		return true
	}
	prefix, ok := strings.CutSuffix(kind, "_ended")
	if !ok {
		prefix, ok = strings.CutSuffix(kind, "_failed")
	}
	return ok && isEffect(prefix)
}
