package journal

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"
)

// MemStore is an in-memory Store for tests of other packages. It keeps
// the same rules as FileStore (sequences, paging, subscriptions,
// checkpoints) without touching disk.
type MemStore struct {
	mu       sync.Mutex
	closed   bool
	sessions map[string]*memSession
}

type memSession struct {
	records    []Record
	frameBytes []int
	lastMs     int64
	checkpoint *memCheckpoint
	subs       map[*Subscription]struct{}
}

type memCheckpoint struct {
	through uint64
	payload []byte
}

var _ Store = (*MemStore)(nil)

// NewMemStore returns an empty in-memory store.
func NewMemStore() *MemStore {
	return &MemStore{sessions: make(map[string]*memSession)}
}

func (m *MemStore) session(id string, create bool) (*memSession, error) {
	if m.closed {
		return nil, ErrClosed
	}
	if err := checkSessionID(id); err != nil {
		return nil, err
	}
	s := m.sessions[id]
	if s == nil && create {
		s = &memSession{subs: make(map[*Subscription]struct{})}
		m.sessions[id] = s
	}
	return s, nil
}

// Append implements Store.
func (m *MemStore) Append(ctx context.Context, session string, expectedNext uint64, records []Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := checkRecords(records, DefaultMaxRecordBytes); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, err := m.session(session, false)
	if err != nil {
		return err
	}
	next := uint64(1)
	if s != nil {
		next = uint64(len(s.records)) + 1
	}
	if expectedNext != next {
		return fmt.Errorf("%w: session %s expected %d, next is %d", ErrConflict, session, expectedNext, next)
	}
	if s == nil {
		s, _ = m.session(session, true)
	}
	s.lastMs = stampTimes(records, time.Now().UnixMilli(), s.lastMs)
	added := make([]Record, len(records))
	for i := range records {
		records[i].Sequence = next + uint64(i)
		added[i] = cloneRecord(records[i])
		s.frameBytes = append(s.frameBytes, frameSize(&records[i]))
	}
	s.records = append(s.records, added...)
	for sub := range s.subs {
		sub.push(added)
	}
	return nil
}

func cloneRecord(r Record) Record {
	if r.Data != nil {
		r.Data = append(json.RawMessage(nil), r.Data...)
	}
	if r.Origin != nil {
		r.Origin = append(json.RawMessage{}, r.Origin...)
	}
	return r
}

// Next implements Store.
func (m *MemStore) Next(ctx context.Context, session string) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, err := m.session(session, false)
	if err != nil || s == nil {
		return 1, err
	}
	return uint64(len(s.records)) + 1, nil
}

// Read implements Store.
func (m *MemStore) Read(ctx context.Context, session string, after uint64, maxRecords, maxBytes int) ([]Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	maxRecords, maxBytes = pageLimits(maxRecords, maxBytes)
	m.mu.Lock()
	defer m.mu.Unlock()
	s, err := m.session(session, false)
	if err != nil || s == nil || after >= uint64(len(s.records)) {
		return nil, err
	}
	var out []Record
	bytes := 0
	for i := int(after); i < len(s.records) && len(out) < maxRecords; i++ {
		if len(out) > 0 && bytes+s.frameBytes[i] > maxBytes {
			break
		}
		bytes += s.frameBytes[i]
		out = append(out, cloneRecord(s.records[i]))
	}
	return out, nil
}

// Subscribe implements Store.
func (m *MemStore) Subscribe(ctx context.Context, session string, after uint64, backlog int) (*Subscription, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, err := m.session(session, true)
	if err != nil {
		return nil, err
	}
	read := func(ctx context.Context, after uint64) ([]Record, error) {
		return m.Read(ctx, session, after, 0, 0)
	}
	var sub *Subscription
	unregister := func(*Subscription) {
		m.mu.Lock()
		defer m.mu.Unlock()
		if cur := m.sessions[session]; cur != nil {
			delete(cur.subs, sub)
		}
	}
	sub = newSubscription(session, after, uint64(len(s.records))+1, backlog, read, unregister)
	s.subs[sub] = struct{}{}
	return sub, nil
}

// Sessions implements Store.
func (m *MemStore) Sessions(ctx context.Context) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	var ids []string
	for id, s := range m.sessions {
		if len(s.records) > 0 {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// WriteCheckpoint implements Store.
func (m *MemStore) WriteCheckpoint(ctx context.Context, session string, through uint64, payload []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, err := m.session(session, false)
	if err != nil {
		return err
	}
	var n uint64
	if s != nil {
		n = uint64(len(s.records))
	}
	if n == 0 {
		return errCheckpointNothing(session)
	}
	if through > n {
		return fmt.Errorf("%w: checkpoint through %d but session %s ends at %d", ErrInvalid, through, session, n)
	}
	s.checkpoint = &memCheckpoint{through: through, payload: slices.Clone(payload)}
	return nil
}

// ReadCheckpoint implements Store.
func (m *MemStore) ReadCheckpoint(ctx context.Context, session string) (uint64, []byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, err := m.session(session, false)
	if err != nil {
		return 0, nil, err
	}
	if s == nil || s.checkpoint == nil || s.checkpoint.through > uint64(len(s.records)) {
		return 0, nil, fmt.Errorf("journal: checkpoint of %s: %w", session, ErrNotFound)
	}
	return s.checkpoint.through, slices.Clone(s.checkpoint.payload), nil
}

// Delete implements Store.
func (m *MemStore) Delete(ctx context.Context, session string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, err := m.session(session, false)
	if err != nil || s == nil {
		return err
	}
	for sub := range s.subs {
		sub.end(fmt.Errorf("journal: session %s deleted: %w", session, ErrNotFound))
	}
	delete(m.sessions, session)
	return nil
}

// Close implements Store.
func (m *MemStore) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	m.closed = true
	for _, s := range m.sessions {
		for sub := range s.subs {
			sub.end(ErrClosed)
		}
	}
	return nil
}
