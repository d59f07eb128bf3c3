package httpapi

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/brain-in-go/brain/brain/internal/hosts"
)

// TestBearerSchemeIsCaseInsensitive checks that the authentication
// scheme is matched without regard to case (RFC 7235 §2.1): a client
// that writes "bearer" or "BEARER" with the right token is served, on
// the routes behind the server token and on a host's routes, while the
// token itself is still compared exactly.
func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	reg, err := hosts.Open(hosts.Config{Dir: filepath.Join(t.TempDir(), hosts.DirName)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	f := newFixture(t, Options{Hosts: reg})
	id := f.create("c").SessionID
	st, _, b := f.do("POST", "/v1/hosts", "")
	var host struct {
		HostID string `json:"host_id"`
		Token  string `json:"token"`
	}
	if st != 200 || json.Unmarshal(b, &host) != nil {
		t.Fatalf("register = %d %s", st, b)
	}
	for _, scheme := range []string{"bearer", "BEARER", "bEaReR"} {
		if st, _, b := f.do("GET", "/v1/sessions/"+id, "", "Authorization", scheme+" "+testToken); st != 200 {
			t.Errorf("GET session with %q scheme = %d %s, want 200", scheme, st, b)
		}
		if st, _, b := f.do("POST", "/v1/hosts/"+host.HostID+"/suspend", `{"connection":"none"}`, "Authorization", scheme+" "+host.Token); st == 401 {
			t.Errorf("host suspend with %q scheme = %d %s, want the host served", scheme, st, b)
		}
	}
	for _, auth := range []string{"bearer " + testToken + "x", "Basic " + testToken, "bearer", "bearer  " + testToken, testToken} {
		if st, _, _ := f.do("GET", "/v1/sessions/"+id, "", "Authorization", auth); st != 401 {
			t.Errorf("GET session with Authorization %q = %d, want 401", auth, st)
		}
	}
}
