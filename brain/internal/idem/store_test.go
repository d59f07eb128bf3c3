package idem

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func open(t *testing.T, path string, opts *Options) *Store {
	t.Helper()
	s, err := Open(path, opts)
	if err != nil {
		t.Fatalf("Open(%s) = %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestClaimAnswerReplayAcrossRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "requests", "requests.log")
	s := open(t, path, nil)
	ctx := context.Background()
	d := Digest([]byte("POST"), []byte("body"))
	c, a, err := s.Claim(ctx, "create_session", "k1", d)
	if err != nil || a != nil || c == nil {
		t.Fatalf("first Claim = %v, %v, %v; want a claim", c, a, err)
	}
	if err := c.Answer(200, []byte(`{"ok":true}`)); err != nil {
		t.Fatalf("Answer = %v", err)
	}
	if _, a, err := s.Claim(ctx, "create_session", "k1", d); err != nil || a == nil || a.Status != 200 || string(a.Body) != `{"ok":true}` {
		t.Fatalf("replay = %+v, %v", a, err)
	}
	if _, _, err := s.Claim(ctx, "create_session", "k1", Digest([]byte("other"))); !errors.Is(err, ErrConflict) {
		t.Fatalf("different digest = %v, want ErrConflict", err)
	}
	// The same key in another scope is independent.
	if c, _, err := s.Claim(ctx, "send_message.async", "k1", d); err != nil || c == nil {
		t.Fatalf("other scope = %v, %v", c, err)
	}
	s.Close()

	s2 := open(t, path, nil)
	if _, a, err := s2.Claim(ctx, "create_session", "k1", d); err != nil || a == nil || a.Status != 200 {
		t.Fatalf("replay after restart = %+v, %v", a, err)
	}
	// A claim never answered by the earlier process is ambiguous.
	if _, _, err := s2.Claim(ctx, "send_message.async", "k1", d); !errors.Is(err, ErrAmbiguous) {
		t.Fatalf("unanswered claim after restart = %v, want ErrAmbiguous", err)
	}
}

func TestReleaseDoesNotConsumeKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "requests.log")
	s := open(t, path, nil)
	ctx := context.Background()
	d := Digest([]byte("x"))
	c, _, err := s.Claim(ctx, "s", "k", d)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Release(); err != nil {
		t.Fatalf("Release = %v", err)
	}
	if err := c.Answer(200, nil); err == nil {
		t.Fatalf("Answer after Release succeeded")
	}
	// A different request may now use the key.
	c2, _, err := s.Claim(ctx, "s", "k", Digest([]byte("y")))
	if err != nil || c2 == nil {
		t.Fatalf("claim after release = %v, %v", c2, err)
	}
	c2.Release()
	s.Close()
	s2 := open(t, path, nil)
	if c3, _, err := s2.Claim(ctx, "s", "k", d); err != nil || c3 == nil {
		t.Fatalf("claim after restart of released key = %v, %v", c3, err)
	}
}

func TestConcurrentSameKeyWaitsForAnswer(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "requests.log"), nil)
	ctx := context.Background()
	d := Digest([]byte("x"))
	c, _, err := s.Claim(ctx, "s", "k", d)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *Answer, 1)
	go func() {
		_, a, err := s.Claim(ctx, "s", "k", d)
		if err != nil {
			t.Errorf("waiting Claim = %v", err)
		}
		got <- a
	}()
	// The waiter must not get an answer before one exists.
	select {
	case a := <-got:
		t.Fatalf("waiter answered %+v before the claim was answered", a)
	case <-time.After(20 * time.Millisecond):
	}
	if err := c.Answer(201, []byte("1")); err != nil {
		t.Fatal(err)
	}
	if a := <-got; a == nil || a.Status != 201 {
		t.Fatalf("waiter got %+v", a)
	}
	cctx, cancel := context.WithCancel(ctx)
	c2, _, _ := s.Claim(ctx, "s", "k2", d)
	cancel()
	if _, _, err := s.Claim(cctx, "s", "k2", d); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter = %v", err)
	}
	c2.Answer(200, nil)
}

func TestRetention(t *testing.T) {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	path := filepath.Join(t.TempDir(), "requests.log")
	s := open(t, path, &Options{Retention: time.Second, Now: clock})
	ctx := context.Background()
	d := Digest([]byte("x"))
	c, _, _ := s.Claim(ctx, "s", "k", d)
	c.Answer(200, []byte("a"))
	now = now.Add(900 * time.Millisecond)
	if _, a, _ := s.Claim(ctx, "s", "k", d); a == nil {
		t.Fatalf("answer forgotten before retention ended")
	}
	now = now.Add(2 * time.Second)
	c2, a, err := s.Claim(ctx, "s", "k", Digest([]byte("new")))
	if err != nil || a != nil || c2 == nil {
		t.Fatalf("after retention Claim = %v, %+v, %v; want a fresh claim", c2, a, err)
	}
	c2.Answer(200, []byte("b"))
	s.Close()
	// Expired entries are compacted away on open.
	now = now.Add(5 * time.Second)
	s2 := open(t, path, &Options{Retention: time.Second, Now: clock})
	if s2.Len() != 0 {
		t.Fatalf("Len after expiry = %d", s2.Len())
	}
	if fi, _ := os.Stat(path); fi.Size() != 0 {
		t.Fatalf("compacted file has %d bytes", fi.Size())
	}
}

func TestTornTailIsCutAndDamageRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "requests.log")
	s := open(t, path, nil)
	ctx := context.Background()
	for i := range 3 {
		c, _, _ := s.Claim(ctx, "s", fmt.Sprint(i), Digest([]byte("x")))
		c.Answer(200, []byte("answer"))
	}
	s.Close()
	good, _ := os.ReadFile(path)

	// Half a frame at the end is an incomplete write: cut.
	torn := append(append([]byte(nil), good...), appendFrame(nil, &record{Type: typeClaim, Scope: "s", Key: "torn"})[:15]...)
	os.WriteFile(path, torn, 0o600)
	s2 := open(t, path, nil)
	if s2.Len() != 3 {
		t.Fatalf("Len = %d after torn tail", s2.Len())
	}
	s2.Close()
	if b, _ := os.ReadFile(path); !bytes.Equal(b, good) {
		t.Fatalf("torn tail not cut: %d bytes, want %d", len(b), len(good))
	}

	// A flipped byte inside a complete frame is damage.
	bad := append([]byte(nil), good...)
	bad[20] ^= 0xff
	os.WriteFile(path, bad, 0o600)
	if _, err := Open(path, nil); !errors.Is(err, ErrDamaged) {
		t.Fatalf("Open of damaged log = %v, want ErrDamaged", err)
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, bad) {
		t.Fatalf("damaged log was rewritten")
	}
}

func TestKeyBounds(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "requests.log"), nil)
	ctx := context.Background()
	for _, k := range []string{"", string(make([]byte, 257))} {
		if _, _, err := s.Claim(ctx, "s", k, Digest()); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Claim(key of %d bytes) = %v, want ErrInvalidKey", len(k), err)
		}
	}
	c, _, err := s.Claim(ctx, "s", string(bytes.Repeat([]byte("k"), 256)), Digest())
	if err != nil {
		t.Fatalf("256-byte key = %v", err)
	}
	c.Answer(204, nil)
}

// TestHammerCompaction runs many concurrent claims with large answers so
// that the running store compacts while flushes are in flight, then checks
// every answer survives a reopen.
func TestHammerCompaction(t *testing.T) {
	path := filepath.Join(t.TempDir(), "requests.log")
	s := open(t, path, nil)
	ctx := context.Background()
	body := bytes.Repeat([]byte("b"), 64<<10)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				key := fmt.Sprintf("%d-%d", w, i)
				c, _, err := s.Claim(ctx, "s", key, Digest([]byte(key)))
				if err != nil {
					t.Error(err)
					return
				}
				if i%2 == 0 {
					err = c.Release()
				} else {
					err = c.Answer(200, body)
				}
				if err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	s.Close()
	fi, _ := os.Stat(path)
	if fi.Size() > 2*int64(80*(len(body)+100)) {
		t.Errorf("file is %d bytes; compaction did not run", fi.Size())
	}
	s2 := open(t, path, nil)
	if s2.Len() != 80 {
		t.Fatalf("Len after reopen = %d, want 80", s2.Len())
	}
	for w := range 8 {
		for i := 1; i < 20; i += 2 {
			key := fmt.Sprintf("%d-%d", w, i)
			if _, a, err := s2.Claim(ctx, "s", key, Digest([]byte(key))); err != nil || a == nil || len(a.Body) != len(body) {
				t.Fatalf("%s: replay = %v", key, err)
			}
		}
	}
}

// crashCopy copies the log as a crash would leave it: the first n bytes.
func crashCopy(t *testing.T, from string, n int64) string {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(b)) < n {
		t.Fatalf("log has %d bytes, want at least %d", len(b), n)
	}
	to := filepath.Join(t.TempDir(), "requests.log")
	if err := os.WriteFile(to, b[:n], 0o600); err != nil {
		t.Fatal(err)
	}
	return to
}

func (s *Store) sizeForTest() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.size
}

func TestHintedClaimDerivedAfterCrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "requests.log")
	s := open(t, path, nil)
	ctx := context.Background()
	d := Digest([]byte("submit"))
	c, _, err := s.ClaimHinted(ctx, "send_message.async", "k", d, []byte("s1@5"))
	if err != nil {
		t.Fatal(err)
	}
	claimed := s.sizeForTest()
	if err := c.AnswerDerivable(202, []byte("5")); err != nil {
		t.Fatalf("AnswerDerivable = %v", err)
	}
	if _, a, err := s.Claim(ctx, "send_message.async", "k", d); err != nil || a == nil || a.Status != 202 || string(a.Body) != "5" {
		t.Fatalf("replay = %+v, %v", a, err)
	}
	// A plain claim cannot take a derivable answer.
	pc, _, _ := s.Claim(ctx, "other", "k", d)
	if err := pc.AnswerDerivable(200, nil); err == nil {
		t.Fatalf("AnswerDerivable of a plain claim succeeded")
	}
	pc.Release()

	var asked []string
	derive := func(scope, key string, hint []byte) (Answer, bool) {
		asked = append(asked, scope+"/"+key+"/"+string(hint))
		return Answer{Status: 202, Body: []byte("5")}, string(hint) == "s1@5"
	}
	// The process ended before the answer was durable: it is derived.
	lost := crashCopy(t, path, claimed)
	s2 := open(t, lost, &Options{Derive: derive})
	if _, a, err := s2.Claim(ctx, "send_message.async", "k", d); err != nil || a == nil || a.Status != 202 || string(a.Body) != "5" {
		t.Fatalf("derived replay = %+v, %v", a, err)
	}
	if len(asked) != 1 || asked[0] != "send_message.async/k/s1@5" {
		t.Fatalf("Derive asked %q", asked)
	}
	s2.Close()
	// The derived answer is durable: no further Derive is needed.
	asked = nil
	s3 := open(t, lost, &Options{Derive: derive})
	if _, a, err := s3.Claim(ctx, "send_message.async", "k", d); err != nil || a == nil || a.Status != 202 || len(asked) != 0 {
		t.Fatalf("replay after the derivation = %+v, %v (asked %q)", a, err, asked)
	}

	// Without Derive, or when Derive refuses, the claim is ambiguous,
	// durably: a later Derive is not asked again.
	for _, opts := range []*Options{nil, {Derive: func(string, string, []byte) (Answer, bool) { return Answer{}, false }}} {
		p := crashCopy(t, path, claimed)
		s4 := open(t, p, opts)
		if _, _, err := s4.Claim(ctx, "send_message.async", "k", d); !errors.Is(err, ErrAmbiguous) {
			t.Fatalf("underived claim = %v, want ErrAmbiguous", err)
		}
		s4.Close()
		asked = nil
		s5 := open(t, p, &Options{Derive: derive})
		if _, _, err := s5.Claim(ctx, "send_message.async", "k", d); !errors.Is(err, ErrAmbiguous) || len(asked) != 0 {
			t.Fatalf("claim after an ambiguous outcome = %v (asked %q), want ErrAmbiguous", err, asked)
		}
		s5.Close()
	}

	// Close flushes a derivable answer.
	s.Close()
	asked = nil
	s6 := open(t, path, &Options{Derive: derive})
	if _, a, err := s6.Claim(ctx, "send_message.async", "k", d); err != nil || a == nil || len(asked) != 0 {
		t.Fatalf("replay after Close = %+v, %v (asked %q)", a, err, asked)
	}
}

func TestCompactionKeepsRunningHint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "requests.log")
	s := open(t, path, nil)
	ctx := context.Background()
	d := Digest([]byte("submit"))
	c, _, err := s.ClaimHinted(ctx, "send_message.async", "k", d, []byte("h"))
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	err = s.compactLocked()
	size := s.size
	s.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AnswerDerivable(202, []byte("9")); err != nil {
		t.Fatal(err)
	}
	s2 := open(t, crashCopy(t, path, size), &Options{Derive: func(_, _ string, hint []byte) (Answer, bool) {
		return Answer{Status: 202, Body: []byte("9")}, string(hint) == "h"
	}})
	if _, a, err := s2.Claim(ctx, "send_message.async", "k", d); err != nil || a == nil || string(a.Body) != "9" {
		t.Fatalf("replay = %+v, %v; the compaction lost the hint", a, err)
	}
}

// A compaction cut short by a crash (after its temporary file was written,
// before the rename) leaves the old log, which opens as before, and a
// temporary file as large as the live entries, which Open removes.
func TestCompactionCutShortLeavesNoTemporaryFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "requests.log")
	s := open(t, path, nil)
	ctx := context.Background()
	c, _, err := s.Claim(ctx, "s", "k", Digest([]byte("x")))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Answer(200, []byte("answer")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	log, _ := os.ReadFile(path)
	other := filepath.Join(dir, ".tmp-other.log-1")
	os.WriteFile(other, []byte("x"), 0o600)
	tmp, err := os.CreateTemp(dir, ".tmp-requests.log-*")
	if err != nil {
		t.Fatal(err)
	}
	tmp.Write(log[:len(log)/2])
	tmp.Close()
	s = open(t, path, nil)
	if _, a, err := s.Claim(ctx, "s", "k", Digest([]byte("x"))); err != nil || a == nil || string(a.Body) != "answer" {
		t.Fatalf("replay after a compaction cut short = %+v, %v", a, err)
	}
	if _, err := os.Stat(tmp.Name()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the compaction's temporary file is still there: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another file's temporary file was removed: %v", err)
	}
}
