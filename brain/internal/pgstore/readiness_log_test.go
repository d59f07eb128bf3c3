package pgstore_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/braintest"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// TestReadinessChangesAreLoggedOnce: while PostgreSQL is down
// /health/ready answers 503 and the server's log says why, once however
// often it is probed, without the database URL's password; once the
// database is back the log says the server is ready again, once.
func TestReadinessChangesAreLoggedOnce(t *testing.T) {
	const password = "pw-Zq83-secret"
	url := strings.Replace(pgtest.Database(t), "postgres://postgres@", "postgres://postgres:"+password+"@", 1)
	if !strings.Contains(url, password) {
		t.Skip("the test database's URL is not of the form postgres://postgres@...")
	}
	srv := pgtest.Control(t)
	keyFile := filepath.Join(t.TempDir(), "sealing.key")
	if err := os.WriteFile(keyFile, []byte(strings.Repeat("ab", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs envtest.Buffer
	b := braintest.Start(t, braintest.Options{Token: "tok", Logs: &logs, Edit: func(c *brain.Config) {
		c.Storage = brain.Storage{DatabaseURL: url, SealingKeyFile: keyFile}
	}})
	count := func(msg string) int {
		n := 0
		for _, line := range strings.Split(logs.String(), "\n") {
			var l struct {
				Msg string `json:"msg"`
			}
			if json.Unmarshal([]byte(line), &l) == nil && strings.HasPrefix(l.Msg, msg) {
				n++
			}
		}
		return n
	}
	for range 3 {
		if st := readyStatus(t, b); st != http.StatusNoContent {
			t.Fatalf("ready = %d, want 204", st)
		}
	}
	if n := count("not ready"); n != 0 {
		t.Fatalf("%d lines say not ready while the server is:\n%s", n, logs.String())
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if st := readyStatus(t, b); st != http.StatusServiceUnavailable {
			t.Fatalf("ready with the database down = %d, want 503", st)
		}
	}
	if n := count("not ready: the storage backend is unavailable"); n != 1 {
		t.Errorf("%d lines say the storage backend is unavailable after 5 probes, want 1:\n%s", n, logs.String())
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for readyStatus(t, b) != http.StatusNoContent {
		if time.Now().After(deadline) {
			t.Fatal("not ready after the database came back")
		}
		time.Sleep(50 * time.Millisecond)
	}
	for range 3 {
		readyStatus(t, b)
	}
	if n := count("ready again"); n != 1 {
		t.Errorf("%d lines say the server is ready again, want 1:\n%s", n, logs.String())
	}
	if strings.Contains(logs.String(), password) {
		t.Errorf("the log holds the database URL's password:\n%s", logs.String())
	}
}
