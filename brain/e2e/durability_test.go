package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
)

// killedBySIGKILL reports whether the process ended by SIGKILL.
func killedBySIGKILL(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

func failurePayload(ev api.Event) api.Failure {
	var f api.Failure
	json.Unmarshal(ev.Data, &f)
	return f
}

func TestCrashMidTurn(t *testing.T) {
	s := start(t, "")
	id := s.create().SessionID
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	resp := s.stream(ctx, id, "?after=0")
	r := s.do("POST", "/v1/sessions/"+id+"/messages", `{"input":{"message":"{\"delay_ms\":60000}"}}`, "Idempotency-Key", key(), "Prefer", "respond-async")
	if r.Status != 202 {
		t.Fatalf("submit = %d %s", r.Status, r.Body)
	}
	frames(resp.Body, func(f frame) bool { return f.Event != "model_call_started" })
	resp.Body.Close()
	s.kill()
	if !killedBySIGKILL(s.waitErr) {
		t.Fatalf("server ended with %v, want SIGKILL", s.waitErr)
	}

	s2 := start(t, s.DataDir)
	if st := s2.summary(id).Status; st != api.StatusIdle {
		t.Fatalf("status after restart = %s, want idle", st)
	}
	evs := s2.events(id)
	if n := count(evs, "model_call_started"); n != 1 || count(evs, "model_call_ended") != 0 {
		t.Fatalf("model calls: %d started, %d ended; the model must have been asked once and never again", n, count(evs, "model_call_ended"))
	}
	var started uint64
	for _, ev := range evs {
		switch ev.EventType {
		case "model_call_started":
			started = ev.Sequence
		case "model_call_failed":
			if f := failurePayload(ev); f.Code != "interrupted" || !f.Ambiguous || f.Sequence != started {
				t.Fatalf("model_call_failed %+v (started %d)", f, started)
			}
		case "turn_failed":
			if f := failurePayload(ev); f.Code != "interrupted" {
				t.Fatalf("turn_failed %+v", f)
			}
		}
	}
	k := kinds(evs)
	for _, want := range []string{"model_call_failed", "activation_failed", "turn_failed"} {
		if !slices.Contains(k, want) {
			t.Fatalf("events %v lack %s", k, want)
		}
	}
	// Nothing re-ran it: a second look shows the same records.
	if again := s2.events(id); len(again) != len(evs) {
		t.Fatalf("events grew from %d to %d without a request", len(evs), len(again))
	}
	if r := s2.send(id, "after the crash"); r.Status != 200 {
		t.Fatalf("send after recovery = %d %s", r.Status, r.Body)
	}
}

func TestIdempotencyDurability(t *testing.T) {
	t.Run("case37_create_replayed_after_crash", func(t *testing.T) {
		s := start(t, "")
		k := key()
		r1 := s.do("POST", "/v1/sessions", createBody, "Idempotency-Key", k)
		if r1.Status != 200 {
			t.Fatalf("create = %d", r1.Status)
		}
		s.kill()
		s2 := start(t, s.DataDir)
		r2 := s2.do("POST", "/v1/sessions", createBody, "Idempotency-Key", k)
		if r2.Status != 200 || string(r2.Body) != string(r1.Body) {
			t.Fatalf("replay after restart = %d %s, want %s", r2.Status, r2.Body, r1.Body)
		}
		if ids := listIDs(t, s2); len(ids) != 1 {
			t.Fatalf("sessions after replay: %v", ids)
		}
	})
	t.Run("case38_claim_without_answer_is_ambiguous", func(t *testing.T) {
		// Reference case 38: the process dies after a key is claimed
		// and before its answer is recorded; the key is ambiguous and
		// the operation is not executed again. A synchronous send's
		// claim is durable with its turn's first commit and its answer
		// only with the turn's end; a create's claim is flushed before
		// the create runs. (An async submission's claim is never
		// durable without its answer: see
		// case38_async_claim_carries_its_answer.)
		k := key()
		s := start(t, "", "BRAIN_TEST_KILL_AFTER_CLAIM="+k)
		id := s.create().SessionID
		// The process kills itself right after the claim is durable.
		req := `{"input":{"message":"runs once"}}`
		res, err := doRaw(s, "POST", "/v1/sessions/"+id+"/messages", req, "Idempotency-Key", k)
		if err == nil {
			t.Fatalf("the request was answered (%d) instead of killing the server", res)
		}
		<-s.done
		if !killedBySIGKILL(s.waitErr) {
			t.Fatalf("server ended with %v, want SIGKILL", s.waitErr)
		}
		ck := key()
		s2 := start(t, s.DataDir, "BRAIN_TEST_KILL_AFTER_CLAIM="+ck)
		if _, err := doRaw(s2, "POST", "/v1/sessions", createBody, "Idempotency-Key", ck); err == nil {
			t.Fatalf("create was answered instead of killing the server")
		}
		<-s2.done

		s3 := start(t, s.DataDir)
		for _, c := range []struct{ path, body, key string }{
			{"/v1/sessions/" + id + "/messages", req, k},
			{"/v1/sessions", createBody, ck},
		} {
			r := s3.do("POST", c.path, c.body, "Idempotency-Key", c.key)
			if r.Status != 500 || r.apiError(t).Code != "ambiguous" {
				t.Fatalf("reuse of %s = %d %s, want 500 ambiguous", c.path, r.Status, r.Body)
			}
		}
		evs := s3.events(id)
		if n := count(evs, "turn_started"); n != 1 {
			t.Fatalf("the claimed send started %d turns, want 1", n)
		}
		if n := count(evs, "model_call_ended"); n != 0 {
			t.Fatalf("the claimed send's model call ended %d times, want never", n)
		}
		for _, ev := range evs {
			if ev.EventType == "turn_failed" && failurePayload(ev).Code != "interrupted" {
				t.Fatalf("turn_failed %+v, want interrupted", failurePayload(ev))
			}
		}
		if n := count(evs, "turn_failed"); n != 1 {
			t.Fatalf("the interrupted turn has %d turn_failed, want 1", n)
		}
		if ids := listIDs(t, s3); len(ids) != 1 || ids[0] != id {
			t.Fatalf("the claimed create ran: sessions %v", ids)
		}
	})
	t.Run("case38_async_claim_carries_its_answer", func(t *testing.T) {
		// An async submission's claim and its answer (the sequence of
		// its turn_started record) ride the one journal commit of
		// turn_started, so there is no instant at which its claim is
		// durable without its answer. The process kills itself right
		// after that commit, before the 202 is sent. The requests log
		// is then cut back to what it held before the submission, as
		// if the frames written there without a flush of their own had
		// been lost with the page cache: the journal's commit log holds
		// the claim and the answer. After the restart the key answers
		// the 202 the submission would have had, the turn closes as
		// interrupted, and nothing runs again.
		k := key()
		s := start(t, "", "BRAIN_TEST_KILL_AFTER_CLAIM="+k)
		id := s.create().SessionID
		reqLog := filepath.Join(s.DataDir, "requests", "requests.log")
		fi, err := os.Stat(reqLog)
		if err != nil {
			t.Fatal(err)
		}
		req := `{"input":{"message":"never runs"}}`
		if res, err := doRaw(s, "POST", "/v1/sessions/"+id+"/messages", req, "Idempotency-Key", k, "Prefer", "respond-async"); err == nil {
			t.Fatalf("the request was answered (%d) instead of killing the server", res)
		}
		<-s.done
		if !killedBySIGKILL(s.waitErr) {
			t.Fatalf("server ended with %v, want SIGKILL", s.waitErr)
		}
		if err := os.Truncate(reqLog, fi.Size()); err != nil {
			t.Fatal(err)
		}
		s2 := start(t, s.DataDir)
		r := s2.do("POST", "/v1/sessions/"+id+"/messages", req, "Idempotency-Key", k, "Prefer", "respond-async")
		var seq uint64
		if r.Status != 202 || json.Unmarshal(r.Body, &seq) != nil || seq == 0 {
			t.Fatalf("retry of the submission = %d %s, want its 202", r.Status, r.Body)
		}
		if got := r.Header.Get("Preference-Applied"); got != "respond-async" {
			t.Fatalf("Preference-Applied = %q", got)
		}
		evs := s2.events(id)
		var turns []uint64
		for _, ev := range evs {
			switch ev.EventType {
			case "turn_started":
				turns = append(turns, ev.Sequence)
			case "turn_failed":
				if f := failurePayload(ev); f.Code != "interrupted" || f.Sequence != seq {
					t.Fatalf("turn_failed %+v, want interrupted for turn %d", f, seq)
				}
			}
		}
		if len(turns) != 1 || turns[0] != seq {
			t.Fatalf("turn_started at %v, want only the submission's at %d (its answer)", turns, seq)
		}
		if n := count(evs, "turn_failed"); n != 1 {
			t.Fatalf("the interrupted turn has %d turn_failed, want 1", n)
		}
		if n := count(evs, "model_call_started"); n != 0 {
			t.Fatalf("the killed submission's turn called the model %d times, want never", n)
		}
		// The answer is the key's from now on: replayed again, also
		// after a clean restart, and nothing runs.
		if again := s2.do("POST", "/v1/sessions/"+id+"/messages", req, "Idempotency-Key", k, "Prefer", "respond-async"); again.Status != 202 || string(again.Body) != string(r.Body) {
			t.Fatalf("second retry = %d %s, want 202 %s", again.Status, again.Body, r.Body)
		}
		s2.stop()
		s3 := start(t, s.DataDir)
		if again := s3.do("POST", "/v1/sessions/"+id+"/messages", req, "Idempotency-Key", k, "Prefer", "respond-async"); again.Status != 202 || string(again.Body) != string(r.Body) {
			t.Fatalf("retry after a clean restart = %d %s, want 202 %s", again.Status, again.Body, r.Body)
		}
		if n := count(s3.events(id), "turn_started"); n != 1 {
			t.Fatalf("%d turns after the retries, want 1", n)
		}
		if r := s3.send(id, "after"); r.Status != 200 {
			t.Fatalf("send after recovery = %d %s", r.Status, r.Body)
		}
	})
	t.Run("sync_claim_rides_the_turn", func(t *testing.T) {
		// A synchronous send's claim is durable only with its turn's
		// first commit: the process kills itself right after that
		// commit, before the model answered. The requests log is then
		// cut back to what it held before the send, as if the claim's
		// frame (written there without a flush of its own) had been
		// lost with the page cache: the journal's commit log still holds
		// the claim, and the restarted server must not run the request
		// again.
		k := key()
		s := start(t, "", "BRAIN_TEST_KILL_AFTER_CLAIM="+k)
		id := s.create().SessionID
		reqLog := filepath.Join(s.DataDir, "requests", "requests.log")
		fi, err := os.Stat(reqLog)
		if err != nil {
			t.Fatal(err)
		}
		req := `{"input":{"message":"runs once"}}`
		if res, err := doRaw(s, "POST", "/v1/sessions/"+id+"/messages", req, "Idempotency-Key", k); err == nil {
			t.Fatalf("the request was answered (%d) instead of killing the server", res)
		}
		<-s.done
		if !killedBySIGKILL(s.waitErr) {
			t.Fatalf("server ended with %v, want SIGKILL", s.waitErr)
		}
		if err := os.Truncate(reqLog, fi.Size()); err != nil {
			t.Fatal(err)
		}
		s2 := start(t, s.DataDir)
		r := s2.do("POST", "/v1/sessions/"+id+"/messages", req, "Idempotency-Key", k)
		if r.Status != 500 || r.apiError(t).Code != "ambiguous" {
			t.Fatalf("retry of the claimed send = %d %s, want 500 ambiguous", r.Status, r.Body)
		}
		evs := s2.events(id)
		if n := count(evs, "turn_started"); n != 1 {
			t.Fatalf("the claimed send started %d turns, want 1", n)
		}
		if n := count(evs, "turn_failed"); n != 1 {
			t.Fatalf("the interrupted turn has %d turn_failed, want 1", n)
		}
		// A clean restart keeps the outcome.
		s2.stop()
		s3 := start(t, s.DataDir)
		if r := s3.do("POST", "/v1/sessions/"+id+"/messages", req, "Idempotency-Key", k); r.Status != 500 {
			t.Fatalf("retry after a clean restart = %d %s, want 500 ambiguous", r.Status, r.Body)
		}
		if r := s3.send(id, "after"); r.Status != 200 {
			t.Fatalf("send after recovery = %d %s", r.Status, r.Body)
		}
	})
	t.Run("case39_retention", func(t *testing.T) {
		s := start(t, "", "BRAIN_REQUEST_RETENTION_SECS=1")
		k := key()
		first := s.do("POST", "/v1/sessions", createBody, "Idempotency-Key", k)
		began := time.Now()
		for {
			r := s.do("POST", "/v1/sessions", createBody, "Idempotency-Key", k)
			if r.Status != 200 {
				t.Fatalf("create = %d %s", r.Status, r.Body)
			}
			if string(r.Body) != string(first.Body) {
				break
			}
			if time.Since(began) > 10*time.Second {
				t.Fatalf("the answer was still replayed after 10 s")
			}
			time.Sleep(200 * time.Millisecond)
		}
		if d := time.Since(began); d < 900*time.Millisecond {
			t.Fatalf("the answer expired after %v, before its retention", d)
		}
		if ids := listIDs(t, s); len(ids) != 2 {
			t.Fatalf("sessions %v: the expired key did not execute anew", ids)
		}
	})
}

// doRaw sends a request and reports a transport error instead of failing.
func doRaw(s *server, method, path, body string, headers ...string) (int, error) {
	req, _ := newRequest(s, method, path, body, headers...)
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func TestDataDirectory(t *testing.T) {
	t.Run("case40_format_marker", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "foo"), []byte("keep"), 0o600)
		if _, err := tryStart(t, dir); err == nil {
			t.Fatalf("started on a directory holding only foo")
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "foo")); string(b) != "keep" {
			t.Fatalf("foo was touched")
		}
		if _, err := os.Stat(filepath.Join(dir, "format")); !os.IsNotExist(err) {
			t.Fatalf("format was written into a foreign directory")
		}
		dir2 := t.TempDir()
		os.WriteFile(filepath.Join(dir2, "format"), []byte("unknown-format\n"), 0o600)
		_, err := tryStart(t, dir2)
		if err == nil || !strings.Contains(err.Error(), "unknown-format") {
			t.Fatalf("unknown format: %v", err)
		}
		dir3 := filepath.Join(t.TempDir(), "fresh")
		start(t, dir3)
		if b, _ := os.ReadFile(filepath.Join(dir3, "format")); string(b) != "brain-data/1\n" {
			t.Fatalf("format = %q", b)
		}
	})
	t.Run("case41_lock", func(t *testing.T) {
		s := start(t, "")
		_, err := tryStart(t, s.DataDir)
		if err == nil || !strings.Contains(err.Error(), "in use") {
			t.Fatalf("second server on the same directory: %v", err)
		}
		if r := s.do("GET", "/v1/sessions", ""); r.Status != 200 {
			t.Fatalf("first server after the refused second = %d", r.Status)
		}
	})
	t.Run("case42_torn_tail", func(t *testing.T) {
		s := start(t, "")
		id := s.create().SessionID
		s.send(id, "one")
		last := s.summary(id).LastSequence
		s.stop()
		seg := lastSegment(t, s.DataDir, id)
		f, _ := os.OpenFile(seg, os.O_APPEND|os.O_WRONLY, 0)
		f.Write([]byte{200, 0, 0, 0, 1, 2, 3, 4, 1, 0, 9}) // a header announcing 200 bytes, then 3
		f.Close()
		s2 := start(t, s.DataDir)
		if got := s2.summary(id).LastSequence; got != last {
			t.Fatalf("last sequence after a torn tail = %d, want %d", got, last)
		}
		s2.send(id, "two")
		evs := s2.events(id)
		var after []uint64
		for _, ev := range evs {
			if ev.Sequence > last {
				after = append(after, ev.Sequence)
			}
		}
		if len(after) == 0 || after[0] != last+1 {
			t.Fatalf("appends after recovery start at %v, want %d", after, last+1)
		}
	})
	t.Run("case43_corrupt_frame", func(t *testing.T) {
		s := start(t, "")
		bad := s.create().SessionID
		good := s.create().SessionID
		s.send(bad, "x")
		s.send(good, "y")
		s.stop()
		seg := firstSegment(t, s.DataDir, bad)
		b, _ := os.ReadFile(seg)
		b[20] ^= 0xff // inside the first frame's payload; frames follow it
		os.WriteFile(seg, b, 0o600)
		s2 := start(t, s.DataDir)
		if r := s2.do("GET", "/v1/sessions/"+bad, ""); r.Status < 500 {
			t.Fatalf("damaged session answered %d %s", r.Status, r.Body)
		}
		if ids := listIDs(t, s2); len(ids) != 1 || ids[0] != good {
			t.Fatalf("list = %v, want only %s", ids, good)
		}
		if r := s2.send(good, "still works"); r.Status != 200 {
			t.Fatalf("healthy session = %d %s", r.Status, r.Body)
		}
		if b2, _ := os.ReadFile(seg); len(b2) != len(b) {
			t.Fatalf("the damaged segment was rewritten")
		}
	})
	t.Run("case44_corrupt_checkpoint", func(t *testing.T) {
		s := start(t, "")
		id := s.create().SessionID
		c := s.client().Sessions.Open(id)
		ckpt := filepath.Join(s.DataDir, "sessions", id, "checkpoint")
		for i := 0; ; i++ {
			if _, err := c.Send(t.Context(), api.UserInput{Message: "turn"}); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(ckpt); err == nil {
				break
			}
			if i > 100 {
				t.Fatalf("no checkpoint after %d turns", i)
			}
		}
		evs := s.events(id)
		tr := s.do("GET", "/v1/sessions/"+id+"/transcript", "").Body
		sum := s.summary(id)
		s.stop()
		b, _ := os.ReadFile(ckpt)
		for i := 12; i < len(b); i += 7 {
			b[i] ^= 0x5a
		}
		os.WriteFile(ckpt, b, 0o600)
		s2 := start(t, s.DataDir)
		if got := s2.summary(id); got != sum {
			t.Fatalf("summary %+v, want %+v", got, sum)
		}
		if got := s2.do("GET", "/v1/sessions/"+id+"/transcript", "").Body; string(got) != string(tr) {
			t.Fatalf("transcript differs after rebuild")
		}
		evs2 := s2.events(id)
		a, _ := json.Marshal(evs)
		b2, _ := json.Marshal(evs2)
		if string(a) != string(b2) {
			t.Fatalf("events differ after rebuild")
		}
	})
}

func segments(t *testing.T, dataDir, id string) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dataDir, "sessions", id, "journal", "*.segment"))
	slices.Sort(m)
	if len(m) == 0 {
		t.Fatalf("no segments for %s", id)
	}
	return m
}

func firstSegment(t *testing.T, dataDir, id string) string { return segments(t, dataDir, id)[0] }

func lastSegment(t *testing.T, dataDir, id string) string {
	m := segments(t, dataDir, id)
	return m[len(m)-1]
}

// beginDrain sends SIGTERM and waits until the server refuses new work:
// readiness answers 503 and a create is refused as overloaded.
func (s *server) beginDrain(t *testing.T) {
	t.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM)
	for {
		st, err := doRaw(s, "GET", "/health/ready", "")
		if err != nil {
			t.Fatalf("the server stopped before refusing new work: %v", err)
		}
		if st == 503 {
			break
		}
	}
	if r := s.do("POST", "/v1/sessions", createBody, "Idempotency-Key", key()); r.Status != 503 || r.apiError(t).Code != "overloaded" {
		t.Fatalf("create while draining = %d %s", r.Status, r.Body)
	}
}

// waitDrained waits for the draining process to exit, and requires exit
// status 0.
func (s *server) waitDrained(t *testing.T) {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("no exit after the drain\n%s", s.stderr)
	}
	if s.waitErr != nil {
		t.Fatalf("exit after drain: %v\n%s", s.waitErr, s.stderr)
	}
}

// drainedEvents reads session id's events after a drain (on a restarted
// server) and requires that nothing was interrupted or failed and that
// the last event is turn_ended, or the activation_ended of an activation
// after it (one that results the turn left pending woke).
func (s *server) drainedEvents(t *testing.T, id string) []api.Event {
	t.Helper()
	evs := s.events(id)
	for _, ev := range evs {
		if strings.Contains(string(ev.Data), "interrupted") || ev.EventType == api.KindToolCallFailed || ev.EventType == api.KindTurnFailed || ev.EventType == api.KindActivationFailed {
			t.Fatalf("drained turn left %s %s", ev.EventType, ev.Data)
		}
	}
	k := kinds(evs)
	last := k[len(k)-1]
	if last == api.KindActivationEnded {
		if woke := ofKind(evs, api.KindActivationStarted); dataField[uint64](t, evs[len(evs)-1], "sequence") != woke[len(woke)-1].Sequence ||
			woke[len(woke)-1].Sequence < ofKind(evs, api.KindTurnEnded)[0].Sequence {
			t.Fatalf("events end with %v", k[max(0, len(k)-2):])
		}
		return evs
	}
	if last != api.KindTurnEnded {
		t.Fatalf("events end with %v", k[max(0, len(k)-2):])
	}
	return evs
}

func TestDrain(t *testing.T) {
	t.Run("case59_sigterm_during_turn", func(t *testing.T) {
		s := start(t, "")
		id := s.create().SessionID
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		resp := s.stream(ctx, id, "?after=0")
		r := s.do("POST", "/v1/sessions/"+id+"/messages", `{"input":{"message":"{\"delay_ms\":1500}"}}`, "Idempotency-Key", key(), "Prefer", "respond-async")
		if r.Status != 202 {
			t.Fatalf("submit = %d", r.Status)
		}
		frames(resp.Body, func(f frame) bool { return f.Event != "model_call_started" })
		s.beginDrain(t)
		// The open stream sees the turn finish, then is closed.
		var tail []string
		frames(resp.Body, func(f frame) bool { tail = append(tail, f.Event); return true })
		if !slices.Contains(tail, "turn_ended") {
			t.Fatalf("stream during drain saw %v", tail)
		}
		s.waitDrained(t)
		start(t, s.DataDir).drainedEvents(t, id)
	})
	t.Run("signal_delivered_twice_drains", func(t *testing.T) {
		// timeout(1) and other supervisors signal the process, then its
		// process group: the same SIGTERM arrives twice, and must drain
		// as one does.
		s := start(t, "")
		id := s.create().SessionID
		r := s.do("POST", "/v1/sessions/"+id+"/messages", `{"input":{"message":"{\"delay_ms\":1500}"}}`, "Idempotency-Key", key(), "Prefer", "respond-async")
		if r.Status != 202 {
			t.Fatalf("submit = %d", r.Status)
		}
		s.cmd.Process.Signal(syscall.SIGTERM)
		time.Sleep(20 * time.Millisecond)
		s.cmd.Process.Signal(syscall.SIGTERM)
		s.waitDrained(t)
		start(t, s.DataDir).drainedEvents(t, id)
	})
	t.Run("second_signal_forces_exit", func(t *testing.T) {
		s := start(t, "")
		id := s.create().SessionID
		r := s.do("POST", "/v1/sessions/"+id+"/messages", `{"input":{"message":"{\"delay_ms\":60000}"}}`, "Idempotency-Key", key(), "Prefer", "respond-async")
		if r.Status != 202 {
			t.Fatalf("submit = %d", r.Status)
		}
		s.cmd.Process.Signal(syscall.SIGTERM)
		for {
			st, err := doRaw(s, "GET", "/health/ready", "")
			if err != nil || st == 503 {
				break
			}
		}
		// A signal sooner than a quarter second after the first is the
		// first delivered again (see signal_delivered_twice_drains).
		time.Sleep(300 * time.Millisecond)
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(20 * time.Second):
			t.Fatalf("the second signal did not end the process")
		}
		if s.waitErr == nil {
			t.Fatalf("forced exit reported success")
		}
	})
	t.Run("second_signal_stops_a_running_workspace_command", func(t *testing.T) {
		s := start(t, "")
		create := `{"model":{"provider":"scripted","name":"demo"},
		 "environments":[{"name":"ws","driver":"workspace"}],
		 "tools":[{"name":"sh","description":"run a shell line","input_schema":{"type":"object","properties":{"shell":{"type":"string"}},"required":["shell"]},
		   "placements":{"ws":{"implementation":{"tool":"command"}}}}]}`
		r := s.do("POST", "/v1/sessions", create, "Idempotency-Key", key())
		if r.Status != 200 {
			t.Fatalf("create = %d %s", r.Status, r.Body)
		}
		var sum api.SessionSummary
		json.Unmarshal(r.Body, &sum)
		script, _ := json.Marshal(map[string]any{"input": map[string]string{
			"message": `{"tool_calls":[{"name":"sh","input":{"shell":"echo $$ > sleeper.pid; exec sleep 300"}}]}`,
		}})
		if r := s.do("POST", "/v1/sessions/"+sum.SessionID+"/messages", string(script), "Idempotency-Key", key(), "Prefer", "respond-async"); r.Status != 202 {
			t.Fatalf("submit = %d %s", r.Status, r.Body)
		}
		pid := waitPIDFile(t, filepath.Join(s.DataDir, "native-workspaces"), "sleeper.pid")
		t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
		s.beginDrain(t)
		time.Sleep(300 * time.Millisecond)
		s.cmd.Process.Signal(syscall.SIGTERM)
		// The drain would wait for the command (300 s); the second signal
		// ends the process well before the workspace's 30 s stop grace.
		select {
		case <-s.done:
		case <-time.After(15 * time.Second):
			t.Fatalf("the second signal did not end the process while a workspace command ran\n%s", s.stderr)
		}
		if s.waitErr == nil {
			t.Fatalf("forced exit reported success")
		}
		if running(pid) {
			t.Fatalf("the workspace command %d outlived brain serve", pid)
		}
	})
}

// running reports whether process pid exists and, where /proc tells, is
// not a zombie.
func running(pid int) bool {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// waitPIDFile waits for a file named name under dir holding a process id
// and answers it.
func waitPIDFile(t *testing.T, dir, name string) int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		pid := 0
		filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.Name() == name {
				if b, err := os.ReadFile(path); err == nil {
					pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
				}
			}
			return nil
		})
		if pid > 0 {
			return pid
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no %s under %s", name, dir)
	return 0
}

// TestCheckpointPrefixDamageRefusesSession flips a byte inside the journal
// prefix a checkpoint vouches for (so the open does not read it): the
// session is still refused as a whole. The startup check logs it with its
// file and offset and lists it, reads answer an error naming the offset,
// nothing is appended after the damage, and other sessions work.
func TestCheckpointPrefixDamageRefusesSession(t *testing.T) {
	s := start(t, "")
	bad := s.create().SessionID
	good := s.create().SessionID
	ckpt := filepath.Join(s.DataDir, "sessions", bad, "checkpoint")
	for i := 0; ; i++ {
		if r := s.send(bad, "turn"); r.Status != 200 {
			t.Fatalf("send = %d %s", r.Status, r.Body)
		}
		if _, err := os.Stat(ckpt); err == nil {
			break
		}
		if i > 100 {
			t.Fatalf("no checkpoint after %d turns", i)
		}
	}
	s.send(good, "y")
	s.stop()
	seg := firstSegment(t, s.DataDir, bad)
	b, _ := os.ReadFile(seg)
	b[20] ^= 0xff // inside the first frame's payload, far before the checkpoint's end
	os.WriteFile(seg, b, 0o600)

	s2 := start(t, s.DataDir)
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(s2.stderr.String(), "damaged sessions") {
		if time.Now().After(deadline) {
			t.Fatalf("no startup line lists the damaged session:\n%s", s2.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	logs := s2.stderr.String()
	if !strings.Contains(logs, bad) || !strings.Contains(logs, seg) || !strings.Contains(logs, "offset=0") {
		t.Errorf("the log does not name %s, %s and its offset:\n%s", bad, seg, logs)
	}
	if r := s2.do("GET", "/v1/sessions/"+bad+"/events?after=0", ""); r.Status != 500 || !strings.Contains(string(r.Body), "offset 0") {
		t.Errorf("events of the damaged session = %d %s", r.Status, r.Body)
	}
	if r := s2.send(bad, "more"); r.Status < 500 {
		t.Errorf("send to the damaged session = %d %s", r.Status, r.Body)
	}
	if ids := listIDs(t, s2); len(ids) != 1 || ids[0] != good {
		t.Errorf("list = %v, want only %s", ids, good)
	}
	if r := s2.send(good, "still works"); r.Status != 200 {
		t.Fatalf("healthy session = %d %s", r.Status, r.Body)
	}
	for _, p := range segments(t, s2.DataDir, bad) {
		if p == seg {
			if after, _ := os.ReadFile(p); string(after) != string(b) {
				t.Errorf("the damaged segment was rewritten or appended to")
			}
		}
	}
}
