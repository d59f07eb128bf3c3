package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
)

const (
	needEmit  = "needs an agentloop that emits events: uploaded agentloops and the execution callback route are not built yet"
	needTools = "needs tools on an environment: the environment transport (environment/v1 delivery and callbacks) is not wired into brain serve yet"
)

func TestLifecycle(t *testing.T) {
	s := start(t, "")

	t.Run("case25_origin", func(t *testing.T) {
		id := s.create().SessionID
		s.send(id, "x")
		for _, ev := range s.events(id) {
			if ev.Origin != nil {
				t.Fatalf("kernel record %s carries origin %+v", ev.EventType, ev.Origin)
			}
		}
		t.Skip("kernel records have no origin; the rest " + needEmit)
	})
	t.Run("case26_reserved_names", func(t *testing.T) { t.Skip(needEmit) })
	t.Run("case27_emit_limit", func(t *testing.T) { t.Skip(needEmit) })
	t.Run("case28_model_call_limit", func(t *testing.T) {
		t.Skip("the built-in loop makes a second model call only after tool results; " + needTools)
	})
	t.Run("case29_tool_deadline", func(t *testing.T) { t.Skip(needTools) })
	t.Run("case30_turn_deadline", func(t *testing.T) { t.Skip(needTools) })
	t.Run("case31_cancel", func(t *testing.T) {
		id := s.create().SessionID
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		resp := s.stream(ctx, id, "?after=0")
		defer resp.Body.Close()
		r := s.do("POST", "/v1/sessions/"+id+"/messages", `{"input":{"message":"{\"delay_ms\":20000}"}}`, "Idempotency-Key", key(), "Prefer", "respond-async")
		if r.Status != 202 {
			t.Fatalf("submit = %d %s", r.Status, r.Body)
		}
		// Cancel once the model call is running.
		frames(resp.Body, func(f frame) bool { return f.Event != "model_call_started" })
		start := time.Now()
		if r := s.do("POST", "/v1/sessions/"+id+"/cancel", "", "Idempotency-Key", key()); r.Status != 204 || len(r.Body) != 0 {
			t.Fatalf("cancel = %d %s", r.Status, r.Body)
		}
		var failed api.Failure
		frames(resp.Body, func(f frame) bool {
			if f.Event == "turn_failed" {
				var ev api.Event
				json.Unmarshal([]byte(f.Data), &ev)
				json.Unmarshal(ev.Data, &failed)
				return false
			}
			return true
		})
		if failed.Code != "cancelled" || time.Since(start) > 10*time.Second {
			t.Fatalf("turn_failed %+v after %v", failed, time.Since(start))
		}
		waitIdle(t, s, id)
		if r := s.send(id, "after cancel"); r.Status != 200 {
			t.Fatalf("next message = %d %s", r.Status, r.Body)
		}
	})
	t.Run("case32_end", func(t *testing.T) {
		id := s.create().SessionID
		s.send(id, "x")
		r := s.do("POST", "/v1/sessions/"+id+"/end", "", "Idempotency-Key", key())
		var sum api.SessionSummary
		json.Unmarshal(r.Body, &sum)
		if r.Status != 200 || sum.Status != api.StatusEnded {
			t.Fatalf("end = %d %s", r.Status, r.Body)
		}
		evs := s.events(id)
		if k := kinds(evs); k[len(k)-1] != "session_ended" {
			t.Fatalf("events end with %v", k[len(k)-3:])
		}
		if r := s.send(id, "too late"); r.Status != 409 || r.apiError(t).Code != "conflict" {
			t.Fatalf("message after end = %d %s", r.Status, r.Body)
		}
		if r := s.do("GET", "/v1/sessions/"+id+"/transcript", ""); r.Status != 200 {
			t.Fatalf("transcript after end = %d", r.Status)
		}
		// environment detach needs declared environments (not wired yet).
	})
	t.Run("case33_delete", func(t *testing.T) {
		id := s.create().SessionID
		dir := filepath.Join(s.DataDir, "sessions", id)
		if r := s.do("DELETE", "/v1/sessions/"+id, "", "Idempotency-Key", key()); r.Status != 409 || r.apiError(t).Code != "conflict" {
			t.Fatalf("delete idle = %d %s", r.Status, r.Body)
		}
		if _, err := os.Stat(dir); err != nil || s.summary(id).Status != api.StatusIdle {
			t.Fatalf("refused delete removed something: %v", err)
		}
		s.do("POST", "/v1/sessions/"+id+"/end", "", "Idempotency-Key", key())
		if r := s.do("DELETE", "/v1/sessions/"+id, "", "Idempotency-Key", key()); r.Status != 204 || len(r.Body) != 0 {
			t.Fatalf("delete ended = %d %s", r.Status, r.Body)
		}
		if r := s.do("GET", "/v1/sessions/"+id, ""); r.Status != 404 {
			t.Fatalf("get after delete = %d", r.Status)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Fatalf("sessions/%s still exists: %v", id, err)
		}
		if _, err := os.Stat(filepath.Join(s.DataDir, "server-metadata", "sessions", id+".sealed")); !os.IsNotExist(err) {
			t.Fatalf("credentials of a deleted session remain: %v", err)
		}
	})
}
