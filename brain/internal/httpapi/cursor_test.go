package httpapi

import (
	"net/http"
	"testing"
)

// TestRepeatedLastEventIDRefused checks that a request naming its cursor
// twice in Last-Event-ID is refused 400 rather than answered from one of
// them, chosen silently, as a repeated after is.
func TestRepeatedLastEventIDRefused(t *testing.T) {
	f := newFixture(t, Options{})
	id := f.create("c").SessionID
	req, _ := http.NewRequest("GET", f.url+"/v1/sessions/"+id+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Add("Last-Event-ID", "1")
	req.Header.Add("Last-Event-ID", "7")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("two Last-Event-ID headers = %d, want 400", resp.StatusCode)
	}
	if st, _, b := f.do("GET", "/v1/sessions/"+id+"/events", "", "Last-Event-ID", "1"); st != 200 {
		t.Errorf("one Last-Event-ID = %d %s, want 200", st, b)
	}
}
