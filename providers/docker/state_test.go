package docker

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// goodState is a state as the provider writes it.
func goodState(key string) *bindingState {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	return &bindingState{Version: stateVersion, Key: key, SessionID: "s", Environment: "e", BindingSequence: 3,
		Resource: "0123456789abcdef", Profile: DefaultProfileName, Phase: phaseReady, CreatedAt: now, UpdatedAt: now}
}

// A damaged or foreign state file is refused, never acted on: a resource
// that is no resource id (it would name another container to stop or
// exec in), an unknown phase, a file holding another binding's state.
func TestDamagedStateIsRefused(t *testing.T) {
	s, err := openStateStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	good := goodState("s/e")
	if err := s.put(good); err != nil {
		t.Fatal(err)
	}
	if st, ok, err := s.get("s/e"); err != nil || !ok || !reflect.DeepEqual(st, good) {
		t.Fatalf("get = %+v %v %v, want the state written", st, ok, err)
	}
	for name, edit := range map[string]func(*bindingState){
		"resource naming another container": func(st *bindingState) { st.Resource = "other-app" },
		"resource with a path":              func(st *bindingState) { st.Resource = "../0123456789ab" },
		"upper-case resource":               func(st *bindingState) { st.Resource = "0123456789ABCDEF" },
		"empty resource":                    func(st *bindingState) { st.Resource = "" },
		"unknown phase":                     func(st *bindingState) { st.Phase = "running" },
		"no key":                            func(st *bindingState) { st.Key = "" },
		"another version":                   func(st *bindingState) { st.Version = stateVersion + 1 },
	} {
		st := *good
		edit(&st)
		data, _ := json.Marshal(&st)
		if _, err := decodeState(data); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	// A file that holds another binding's state, under this one's name.
	other := goodState("s/other")
	data, _ := json.Marshal(other)
	if err := os.WriteFile(s.path("s/e"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.get("s/e"); err == nil || !strings.Contains(err.Error(), `"s/other"`) {
		t.Fatalf("get of a file holding another key: %v", err)
	}
	// list reports it and still answers the others.
	if err := s.put(goodState("s/f")); err != nil {
		t.Fatal(err)
	}
	sts, err := s.list()
	if err == nil || !strings.Contains(err.Error(), filepath.Base(s.path("s/e"))) {
		t.Fatalf("list error %v, want the mismatched file named", err)
	}
	if len(sts) != 1 || sts[0].Key != "s/f" {
		t.Fatalf("list answered %+v, want the good state alone", sts)
	}
}

// FuzzDecodeState: any bytes decode to a state the provider may act on or
// to an error, never a panic; a decoded state holds a resource id and a
// known phase, and encodes back to a state that decodes the same.
func FuzzDecodeState(f *testing.F) {
	good, _ := json.Marshal(goodState("s/e"))
	f.Add(good)
	f.Add([]byte(`{"version":1,"key":"k","resource":"0123456789abcdef","phase":"new"}`))
	f.Add([]byte(`{"version":1,"key":"k","resource":"x","phase":"new"}`))
	f.Add([]byte(`{"version":1,"key":"k","resource":"0123456789abcdef","phase":"new","created_at":"x"}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := decodeState(data)
		if err != nil {
			return
		}
		if !validResourceID(st.Resource) || st.Key == "" || st.Version != stateVersion {
			t.Fatalf("decoded an unusable state %+v", st)
		}
		again, err := json.Marshal(st)
		if err != nil {
			t.Fatalf("encode %+v: %v", st, err)
		}
		st2, err := decodeState(again)
		if err != nil || !reflect.DeepEqual(st, st2) {
			t.Fatalf("round trip: %+v %v, want %+v", st2, err, st)
		}
	})
}

// The longest identifiers environment/v1 allows (128 characters each)
// make a binding key whose base64url name is longer than a file name may
// be: its state is still created, read, listed and removed.
func TestLongBindingKeyState(t *testing.T) {
	s, err := openStateStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	key := strings.Repeat("s", 128) + "/" + strings.Repeat("e", 128)
	st := goodState(key)
	if err := s.create(st); err != nil {
		t.Fatalf("create: %v", err)
	}
	if err := s.create(goodState(key)); err != errStateExists {
		t.Fatalf("second create = %v, want errStateExists", err)
	}
	st.Phase = phaseDeleted
	if err := s.put(st); err != nil {
		t.Fatalf("put: %v", err)
	}
	if got, ok, err := s.get(key); err != nil || !ok || got.Phase != phaseDeleted {
		t.Fatalf("get = %+v %v %v", got, ok, err)
	}
	if all, err := s.list(); err != nil || len(all) != 1 || all[0].Key != key {
		t.Fatalf("list = %v %v", all, err)
	}
	if err := s.remove(key); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.get(key); ok || err != nil {
		t.Fatalf("get after remove = %v %v", ok, err)
	}
}

// A binding's file as an earlier version wrote it, its chown decided for
// the workspace's root alone, has the chown decided again before the
// allocation, as one that does not say for whom it was decided; one
// written now for the profile's user keeps it.
func TestEarlierChownDecisionIsDecidedAgain(t *testing.T) {
	prof := Profile{Image: "i", User: "1000:1000", Workspace: WorkspaceWrite}
	for _, tc := range []struct {
		name, file string
		again      bool
	}{
		{"root alone", `"chown_for": "1000:1000"`, true},
		{"no user", `"chown": true`, true},
		{"another user", `"chown_for": "1001:1001", "chown_whole": true`, true},
		{"whole, for the user", `"chown_for": "1000:1000", "chown_whole": true`, false},
	} {
		data := `{"version": 1, "key": "s/e", "resource": "0123456789abcdef", "phase": "new", "image_id": "sha256:x", ` + tc.file + `}`
		st, err := decodeState([]byte(data))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if want, again := ownerAgain(st, prof); again != tc.again || want != prof.User {
			t.Errorf("%s: decided again %v for %q; want %v for %q", tc.name, again, want, tc.again, prof.User)
		}
	}
	// A read workspace is never chowned: nothing is decided.
	st := goodState("s/e")
	if _, again := ownerAgain(st, Profile{Image: "i", User: "1000:1000", Workspace: WorkspaceRead}); again {
		t.Errorf("a read workspace's owner decided again")
	}
}
