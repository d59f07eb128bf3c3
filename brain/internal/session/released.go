package session

import (
	"encoding/json"
	"math/rand/v2"
	"unsafe"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/model"
)

// DefaultReleasedBytes is the default bound of Config.ReleasedBytes.
const DefaultReleasedBytes = 64 << 20

// released keeps the projections of recently released sessions, bounded
// by an estimate of their heap bytes. A projection is handed back (and
// removed) when its session is activated again and its journal still ends
// where the projection does; otherwise the session is folded from its
// checkpoint and journal as usual. The session's model client is kept with
// its projection, so that a session taken back does not read and unseal
// its model key again. It holds no goroutine, and its bytes do not grow
// with the number of sessions.
//
// Past the bound, a projection chosen at random (never the one just kept)
// goes. Not the least recently released: sessions that take turns in a
// cycle longer than the bound holds — the usual shape of many concurrent
// conversations — would then each be pushed out just before its next
// message, so that every message reloaded its session from the checkpoint
// (a pass over the whole transcript) however much the bound held. Chosen
// at random, a share of them in proportion to the bound is still kept when
// their next message comes, and a workload that reuses a few sessions
// while many others pass still finds those few most of the time.
//
// Guarded by Engine.mu.
type released struct {
	max     int64
	used    int64
	entries []releasedEntry // in no order
	byID    map[string]int  // index in entries
	rnd     *rand.Rand
}

type releasedEntry struct {
	id     string
	st     *state
	client model.Client // the session's model client, opened with its key
	size   int64
}

func (r *released) init(max int64) {
	r.max = max
	r.byID = map[string]int{}
	r.rnd = rand.New(rand.NewPCG(uint64(max), 0x62726169))
}

// put keeps st as id's projection, with the model client the session had
// opened (or nil), dropping others chosen at random beyond the bound. A
// projection larger than the bound is not kept.
func (r *released) put(id string, st *state, client model.Client, size int64) {
	r.drop(id)
	if r.max <= 0 || size > r.max {
		return
	}
	r.byID[id] = len(r.entries)
	r.entries = append(r.entries, releasedEntry{id: id, st: st, client: client, size: size})
	r.used += size
	for r.used > r.max {
		keep := r.byID[id]
		i := r.rnd.IntN(len(r.entries) - 1)
		if i >= keep {
			i++
		}
		r.drop(r.entries[i].id)
	}
}

// take removes and answers id's projection and model client, or nils.
func (r *released) take(id string) (*state, model.Client) {
	i, ok := r.byID[id]
	if !ok {
		return nil, nil
	}
	st, client := r.entries[i].st, r.entries[i].client
	r.drop(id)
	return st, client
}

func (r *released) drop(id string) {
	i, ok := r.byID[id]
	if !ok {
		return
	}
	r.used -= r.entries[i].size
	last := len(r.entries) - 1
	if i != last {
		r.entries[i] = r.entries[last]
		r.byID[r.entries[i].id] = i
	}
	r.entries[last] = releasedEntry{}
	r.entries = r.entries[:last]
	delete(r.byID, id)
}

// len reports how many projections are kept.
func (r *released) len() int { return len(r.byID) }

// Approximate heap costs used by heapBytes.
const (
	stateOverhead = 1024 // the state, its four maps and the entry
	mapEntryBytes = 64
	messageBytes  = int64(unsafe.Sizeof(api.Message{})) + 16
	blockBytes    = int64(unsafe.Sizeof(api.ContentBlock{}))
)

// heapBytes estimates the heap the projection holds: fixed overheads plus
// every variable-length field of the transcript, the checkpoint's
// encoding of it, the KV, the environment bindings and the configuration
// (measured once as its JSON size).
func (st *state) heapBytes() int64 {
	if st.cfgBytes == 0 && st.Config != nil {
		b, _ := json.Marshal(st.Config)
		// The decoded configuration holds about twice its JSON size.
		st.cfgBytes = 2*int64(len(b)) + 512
	}
	// The transcript's estimate is kept for the messages already counted:
	// only the ones appended since are visited.
	for i := st.heapMsgs; i < len(st.Transcript); i++ {
		m := &st.Transcript[i]
		b := messageBytes + int64(len(m.Role))
		for j := range m.Content {
			c := &m.Content[j]
			b += blockBytes + int64(len(c.Type)+len(c.Text)+len(c.URL)+len(c.MediaType)+len(c.Format)+
				len(c.Data)+len(c.ID)+len(c.Name)+len(c.Input)+len(c.ToolUseID)+len(c.Content))
			for _, md := range c.Media {
				b += int64(unsafe.Sizeof(md)) + int64(len(md.Type)+len(md.URL)+len(md.MediaType))
			}
		}
		st.heapMsgBytes += b
	}
	st.heapMsgs = len(st.Transcript)
	n := stateOverhead + st.cfgBytes + st.heapMsgBytes + int64(cap(st.enc))
	for k, v := range st.KV {
		n += mapEntryBytes + int64(len(k)+len(v))
	}
	for k, e := range st.Envs {
		n += mapEntryBytes + int64(len(k)) + int64(unsafe.Sizeof(*e)) + int64(len(e.Configuration)+len(e.Observation))
		if e.Decl != nil {
			n += int64(unsafe.Sizeof(*e.Decl)) + 512 + int64(len(e.Decl.Configuration))
		}
	}
	n += int64(len(st.Open)+len(st.Returned))*mapEntryBytes + int64(len(st.Actionable))*8
	return n
}
