package hosts

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func open(t *testing.T, cfg Config) *Registry {
	t.Helper()
	r, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestRegistrationsSurviveReopen registers hosts, reopens the directory and
// checks that their tokens still authenticate, that only token digests are
// on disk, and that a damaged registration is skipped without stopping
// the others.
func TestRegistrationsSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	r := open(t, Config{Dir: dir})
	a, err := r.Register(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := r.Register(context.Background())
	if !ValidHostID(a.HostID) || a.HostID == b.HostID || a.Token == b.Token {
		t.Fatalf("registrations %+v %+v", a, b)
	}
	r.Close()
	for _, reg := range []string{a.HostID, b.HostID} {
		raw, err := os.ReadFile(filepath.Join(dir, reg+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), a.Token) || strings.Contains(string(raw), b.Token) {
			t.Fatalf("a token is stored in clear: %s", raw)
		}
	}
	// Damage b's file: cut in the middle.
	pb := filepath.Join(dir, b.HostID+".json")
	raw, _ := os.ReadFile(pb)
	os.WriteFile(pb, raw[:len(raw)/2], 0o600)
	os.WriteFile(filepath.Join(dir, "host_junk.json.tmp"), []byte("partial"), 0o600)

	r2 := open(t, Config{Dir: dir})
	if err := r2.Authenticate(a.HostID, a.Token); err != nil {
		t.Fatalf("a after reopen: %v", err)
	}
	if err := r2.Authenticate(a.HostID, b.Token); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("a with b's token: %v", err)
	}
	if err := r2.Authenticate(b.HostID, b.Token); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("damaged registration still authenticates: %v", err)
	}
	if r2.Len() != 1 {
		t.Fatalf("%d hosts after reopen, want 1", r2.Len())
	}
}

func TestMaxHostsAndExpiry(t *testing.T) {
	dir := t.TempDir()
	clk := &clock{now: time.Unix(1000, 0)}
	r := open(t, Config{Dir: dir, MaxHosts: 2, Unconnected: time.Minute, Now: clk.Now})
	ctx := context.Background()
	a, _ := r.Register(ctx)
	if _, err := r.Register(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Register(ctx); !errors.Is(err, ErrLimit) {
		t.Fatalf("third host = %v, want ErrLimit", err)
	}
	// A connected host never expires; an unconnected one does.
	conn, err := r.Connect(a.HostID)
	if err != nil {
		t.Fatal(err)
	}
	clk.advance(2 * time.Minute)
	c, err := r.Register(ctx)
	if err != nil {
		t.Fatalf("after the unconnected host expired: %v", err)
	}
	if r.Len() != 2 || !r.Registered(a.HostID) || !r.Registered(c.HostID) {
		t.Fatalf("hosts after expiry: %d", r.Len())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Fatalf("%d registration files, want 2 (the expired one removed)", len(entries))
	}
	// Once its connection ends the window starts again.
	conn.Close()
	clk.advance(30 * time.Second)
	if err := r.Authenticate(a.HostID, a.Token); err != nil {
		t.Fatalf("within the window: %v", err)
	}
	clk.advance(31 * time.Second)
	if err := r.Authenticate(a.HostID, a.Token); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("past the window: %v", err)
	}
}

func TestConnectDisplaces(t *testing.T) {
	r := open(t, Config{Dir: t.TempDir()})
	a, _ := r.Register(context.Background())
	first, err := r.Connect(a.HostID)
	if err != nil {
		t.Fatal(err)
	}
	second, err := r.Connect(a.HostID)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-first.Done():
	default:
		t.Fatal("the first connection was not displaced")
	}
	if !first.Displaced() || second.Displaced() || first.ID == second.ID {
		t.Fatalf("displaced: first %v second %v", first.Displaced(), second.Displaced())
	}
	if ok, _ := r.Suspend(a.HostID, first.ID); ok {
		t.Fatal("suspended a displaced connection")
	}
	if ok, _ := r.Suspend(a.HostID, second.ID); !ok {
		t.Fatal("an idle connection was not suspended")
	}
	select {
	case <-second.Done():
	default:
		t.Fatal("suspend left the connection open")
	}
	if _, err := r.Connect("host_unknownunknownunknown"); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("Connect of an unknown host = %v", err)
	}
}

// FuzzDecodeRecord feeds arbitrary bytes to the registration decoder: it
// never panics, and what it accepts names its file's host.
func FuzzDecodeRecord(f *testing.F) {
	f.Add([]byte(`{"host_id":"host_abcdefghijklmnopqrstuvwx","token_sha256":"` + strings.Repeat("ab", 32) + `","registered_at_ms":1}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"host_id":"host_abcdefghijklmnopqrstuvwx"} x`))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := decodeRecord(b, "host_abcdefghijklmnopqrstuvwx")
		if err == nil && h.id != "host_abcdefghijklmnopqrstuvwx" {
			t.Fatalf("accepted a record of %q", h.id)
		}
	})
}

// recordingEnvs is a next Environments that records what it validates.
type recordingEnvs struct{ placements int }

func (n *recordingEnvs) Deliver(context.Context, session.Operation) (envapi.Receipt, error) {
	return envapi.Receipt{Type: envapi.ReceiptAccepted}, nil
}
func (n *recordingEnvs) ValidateEnvironment(api.Environment) error { return errors.New("next refused") }
func (n *recordingEnvs) ValidatePlacement(api.Environment, json.RawMessage) error {
	n.placements++
	return errors.New("next refused the placement")
}

// TestRouteKeepsTheNextValidators checks that Route answers host
// declarations itself and leaves every other to next's validators.
func TestRouteKeepsTheNextValidators(t *testing.T) {
	r := open(t, Config{Dir: t.TempDir()})
	reg, _ := r.Register(context.Background())
	next := &recordingEnvs{}
	ro := Route(r, next)
	host := api.Environment{Name: "h", Driver: api.DriverHost, HostID: reg.HostID}
	if err := ro.(session.Validator).ValidateEnvironment(host); err != nil {
		t.Fatalf("registered host refused: %v", err)
	}
	if err := ro.(session.Validator).ValidateEnvironment(api.Environment{Name: "h", Driver: api.DriverHost, HostID: "host_nobodynobodynobodynob"}); err == nil {
		t.Fatal("an unregistered host was accepted")
	}
	other := api.Environment{Name: "b", Driver: api.DriverBrain}
	if err := ro.(session.Validator).ValidateEnvironment(other); err == nil {
		t.Fatal("next's environment validator was skipped")
	}
	pv := ro.(session.PlacementValidator)
	if err := pv.ValidatePlacement(host, nil); err != nil || next.placements != 0 {
		t.Fatalf("host placement: %v, next asked %d times", err, next.placements)
	}
	if err := pv.ValidatePlacement(other, nil); err == nil || next.placements != 1 {
		t.Fatalf("other placement: %v, next asked %d times", err, next.placements)
	}
}

// TestDecodeRecordRefusesWhatFollowsIt: a registration file with anything
// after its object, a stray closing brace included, is damaged and is
// not read as a registration.
func TestDecodeRecordRefusesWhatFollowsIt(t *testing.T) {
	const id = "host_abcdefghijklmnopqrstuvwx"
	rec := `{"host_id":"` + id + `","token_sha256":"` + strings.Repeat("ab", 32) + `","registered_at_ms":1}`
	if _, err := decodeRecord([]byte(rec+"\n"), id); err != nil {
		t.Fatalf("a whole record was refused: %v", err)
	}
	for _, tail := range []string{"}", "]", " {}", "x"} {
		if _, err := decodeRecord([]byte(rec+tail), id); err == nil {
			t.Errorf("a record followed by %q was read", tail)
		}
	}
}
