package idem

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// testdata/golden/requests.log holds the bytes this version writes for
// goldenRecords. The tests check that it still decodes and opens to the
// same entries (files written by this version must stay readable) and
// that this version still writes exactly those bytes. After a deliberate
// format change, regenerate it with
//
//	go test ./brain/internal/idem -run Golden -update
//
// and keep reading the old file (add it under a new name).
var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

const goldenAtMs = 1767225600000

func goldenRecords() []record {
	return []record{
		{Type: typeClaim, AtMs: goldenAtMs, Scope: "create_session", Key: "key-1", Digest: Digest([]byte("POST"), []byte(`{"agentloop":"default"}`))},
		{Type: typeAnswer, AtMs: goldenAtMs, Scope: "create_session", Key: "key-1", Status: 201, Body: []byte(`{"session_id":"s1"}`)},
		{Type: typeClaim, AtMs: goldenAtMs + 1, Scope: "send_message", Key: "key-2", Digest: Digest([]byte("b"))},
		{Type: typeRelease, AtMs: goldenAtMs + 2, Scope: "send_message", Key: "key-2"},
		{Type: typeHinted, AtMs: goldenAtMs + 3, Scope: "send_message.async", Key: "key-3", Digest: Digest([]byte("c")), Hint: []byte("s1\x00\x05")},
		{Type: typeAnswer, AtMs: goldenAtMs + 3, Scope: "send_message.async", Key: "key-3", Status: 202, Body: []byte(`{"sequence":5}`)},
		{Type: typeClaim, AtMs: goldenAtMs + 4, Scope: "delete_session", Key: "käy-4 <&>", Digest: Digest([]byte("d"))},
	}
}

func TestGoldenRequestsLog(t *testing.T) {
	want := goldenRecords()
	var enc []byte
	for _, r := range want {
		enc = appendFrame(enc, &r)
	}
	path := filepath.Join("testdata", "golden", "requests.log")
	if *update {
		if err := os.WriteFile(path, enc, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	log, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(enc, log) {
		t.Errorf("this version writes\n%x\nthe golden file holds\n%x", enc, log)
	}

	var got []record
	for rest := log; len(rest) > 0; {
		r, n, st := nextFrame(rest)
		if st != frameOK {
			t.Fatalf("frame %d: status %d", len(got)+1, st)
		}
		got = append(got, r)
		rest = rest[n:]
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded\n%+v\nwant\n%+v", got, want)
	}

	// A store opened on the golden file answers from it.
	p := filepath.Join(t.TempDir(), "requests.log")
	if err := os.WriteFile(p, log, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for _, c := range []struct {
		r      record
		answer *Answer
		err    error
	}{
		{want[0], &Answer{Status: 201, Body: want[1].Body}, nil},
		{want[4], &Answer{Status: 202, Body: want[5].Body}, nil},
		{want[6], nil, ErrAmbiguous},
	} {
		cl, a, err := s.Claim(ctx, c.r.Scope, c.r.Key, c.r.Digest)
		if !errors.Is(err, c.err) || !reflect.DeepEqual(a, c.answer) || cl != nil {
			t.Errorf("Claim(%s, %s) = %v, %+v, %v; want the recorded %+v, %v", c.r.Scope, c.r.Key, cl, a, err, c.answer, c.err)
		}
	}
	if _, _, err := s.Claim(ctx, want[0].Scope, want[0].Key, Digest([]byte("other"))); !errors.Is(err, ErrConflict) {
		t.Errorf("Claim with another digest = %v, want ErrConflict", err)
	}
	// The released key runs anew.
	cl, a, err := s.Claim(ctx, want[2].Scope, want[2].Key, want[2].Digest)
	if err != nil || a != nil || cl == nil {
		t.Fatalf("Claim of the released key = %v, %+v, %v; want a new claim", cl, a, err)
	}
	if err := cl.Release(); err != nil {
		t.Fatal(err)
	}

	// The store itself writes the golden bytes for the same calls.
	p2 := filepath.Join(t.TempDir(), "requests.log")
	now := goldenAtMs
	s2, err := Open(p2, &Options{Now: func() time.Time { return time.UnixMilli(int64(now)) }})
	if err != nil {
		t.Fatal(err)
	}
	cl, _, err = s2.Claim(ctx, want[0].Scope, want[0].Key, want[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Answer(want[1].Status, want[1].Body); err != nil {
		t.Fatal(err)
	}
	now++
	if cl, _, err = s2.Claim(ctx, want[2].Scope, want[2].Key, want[2].Digest); err != nil {
		t.Fatal(err)
	}
	now++
	if err := cl.Release(); err != nil {
		t.Fatal(err)
	}
	now++
	if cl, _, err = s2.ClaimHinted(ctx, want[4].Scope, want[4].Key, want[4].Digest, want[4].Hint); err != nil {
		t.Fatal(err)
	}
	if err := cl.Answer(want[5].Status, want[5].Body); err != nil {
		t.Fatal(err)
	}
	now++
	if _, _, err = s2.Claim(ctx, want[6].Scope, want[6].Key, want[6].Digest); err != nil {
		t.Fatal(err)
	}
	written, err := os.ReadFile(p2)
	if err != nil || !bytes.Equal(written, log) {
		t.Errorf("the store wrote\n%x (%v)\nthe golden file holds\n%x", written, err, log)
	}
	s2.Close()
}
