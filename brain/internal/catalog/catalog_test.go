package catalog

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestProvidersFile merges a providers file over the snapshot: a new
// provider appears, a same-named one supersedes, and the digest changes.
func TestProvidersFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "providers.json")
	os.WriteFile(path, []byte(`{"providers":[
	  {"name":"local","dialect":"openai_chat_completions","base_url":"http://127.0.0.1:8000/v1","models":[{"id":"llama-3.1-8b","context_window_tokens":131072}]},
	  {"name":"anthropic","dialect":"anthropic_messages","base_url":"https://proxy.internal/v1","models":[{"id":"claude-private"}]}]}`), 0o600)
	f, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := New(nil)
	c, err := New(f)
	if err != nil {
		t.Fatal(err)
	}
	if c.List().SnapshotDigest == base.List().SnapshotDigest {
		t.Error("the digest did not change with the providers file")
	}
	local, ok := c.Provider("local")
	if !ok || local.Dialect != DialectOpenAIChat || len(local.Models) != 1 || local.Models[0].ContextWindowTokens != 131072 || len(local.MediaInputs) != 1 {
		t.Errorf("local = %+v", local)
	}
	if a, _ := c.Provider("anthropic"); len(a.Models) != 1 || a.Models[0].ID != "claude-private" {
		t.Errorf("anthropic = %+v, want the file's models only", a)
	}
	if _, ok := c.Provider("openai"); !ok {
		t.Error("openai from the snapshot is gone")
	}
	// The same catalogue always has the same digest.
	again, _ := New(f)
	if again.List().SnapshotDigest != c.List().SnapshotDigest {
		t.Error("the digest is not deterministic")
	}
	big := filepath.Join(t.TempDir(), "big.json")
	os.WriteFile(big, []byte(`{"providers":[]}`+strings.Repeat(" ", MaxFileBytes)), 0o600)
	if _, err := ReadFile(big); !errors.Is(err, ErrInvalid) {
		t.Errorf("oversized file: %v", err)
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("a missing file was accepted")
	}
}

func TestDecodeRejects(t *testing.T) {
	ok := `{"name":"p","dialect":"openai_responses","base_url":"https://h/v1","models":[]}`
	if _, err := Decode([]byte(`{"providers":[` + ok + `]}`)); err != nil {
		t.Fatalf("valid file refused: %v", err)
	}
	for _, bad := range []string{
		``, `null`, `[]`, `{}`, `{"providers":[` + ok + `]} {}`,
		`{"providers":[` + ok + `]}}`, `{"providers":[` + ok + `]}]`,
		`{"providers":[` + ok + `],"extra":1}`,
		`{"providers":[` + ok + `,` + ok + `]}`,
		`{"providers":[{"name":"p","dialect":"openai_responses","base_url":"https://h/v1","models":[],"api_key":"x"}]}`,
		`{"providers":[{"name":"-p","dialect":"openai_responses","base_url":"https://h","models":[]}]}`,
		`{"providers":[{"name":"scripted","dialect":"openai_responses","base_url":"https://h","models":[]}]}`,
		`{"providers":[{"name":"p","dialect":"scripted","base_url":"https://h","models":[]}]}`,
		`{"providers":[{"name":"p","dialect":"openai_responses","base_url":"ftp://h","models":[]}]}`,
		`{"providers":[{"name":"p","dialect":"openai_responses","base_url":"https://u:pw@h","models":[]}]}`,
		`{"providers":[{"name":"p","dialect":"openai_responses","models":[]}]}`,
		`{"providers":[{"name":"p","dialect":"openai_responses","base_url":"https://h/v1 ","models":[]}]}`,
		`{"providers":[{"name":"p","dialect":"openai_responses","base_url":"https://h/v1?","models":[]}]}`,
		`{"providers":[{"name":"p","dialect":"openai_responses","base_url":"https://h","models":[{"id":"a b"}]}]}`,
		`{"providers":[{"name":"p","dialect":"openai_responses","base_url":"https://h","models":[{"id":""}]}]}`,
		`{"providers":[{"name":"p","dialect":"openai_responses","base_url":"https://h","models":[{"id":"a"},{"id":"a"}]}]}`,
		`{"providers":[{"name":"p","dialect":"openai_responses","base_url":"https://h","models":[{"id":"a","context_window_tokens":-1}]}]}`,
	} {
		if _, err := Decode([]byte(bad)); !errors.Is(err, ErrInvalid) {
			t.Errorf("Decode(%s) = %v, want ErrInvalid", bad, err)
		}
	}
}

// FuzzDecode: any bytes either decode to a file that merges into a
// catalogue, or fail with ErrInvalid.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"providers":[{"name":"p","dialect":"openai_responses","base_url":"https://h/v1","models":[{"id":"m","context_window_tokens":5}]}]}`))
	f.Add([]byte(`{"providers":[]}`))
	f.Add([]byte(`{"providers":[{"name":"p"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		c, err := New(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range file.Providers {
			got, ok := c.Provider(p.Name)
			if !ok || got.Dialect != p.Dialect || len(got.Models) != len(p.Models) {
				t.Fatalf("provider %q: %+v", p.Name, got)
			}
		}
	})
}

// TestRefusedBaseURLHidesCredentials: a base_url refused for the
// credentials, query or fragment written into it is named by its
// provider, never quoted: the error goes to the operator's terminal and
// logs.
func TestRefusedBaseURLHidesCredentials(t *testing.T) {
	for _, u := range []string{"https://user:sekrit@h/v1", "https://sekrit@h/v1", "https://h/v1?key=sekrit", "https://h/v1#sekrit", "https://h/v1 sekrit%zz"} {
		body := `{"providers":[{"name":"gw","dialect":"openai_responses","base_url":` + strconv.Quote(u) + `,"models":[]}]}`
		_, err := Decode([]byte(body))
		if !errors.Is(err, ErrInvalid) || strings.Contains(err.Error(), "sekrit") || !strings.Contains(err.Error(), `"gw"`) {
			t.Errorf("base_url %s: error %v, want ErrInvalid naming the provider and not the credential", u, err)
		}
	}
}
