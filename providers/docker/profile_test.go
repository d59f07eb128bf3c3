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

// An operator's profiles file gets its defaults, and whatever would weaken
// a container or is not understood is refused with the field named.
func TestParseProfiles(t *testing.T) {
	ps, err := ParseProfiles([]byte(`{"default": {"image": "sandbox:1", "memory_mb": 512, "timeout": "90s"},
		"reader": {"image": "sandbox:1", "workspace": "read", "user": "1001:1001", "env_allow": ["LANG"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := Profiles{
		"default": {Image: "sandbox:1", Workspace: WorkspaceWrite, User: DefaultUser, MemoryMB: 512, Pids: DefaultPids,
			Network: DefaultNetwork, TmpfsMB: DefaultTmpfsMB, OutputBytes: DefaultOutputBytes, Timeout: Duration(90 * time.Second)},
		"reader": {Image: "sandbox:1", Workspace: WorkspaceRead, User: "1001:1001", MemoryMB: DefaultMemoryMB, Pids: DefaultPids,
			Network: DefaultNetwork, TmpfsMB: DefaultTmpfsMB, OutputBytes: DefaultOutputBytes, EnvAllow: []string{"LANG"}},
	}
	if !reflect.DeepEqual(ps, want) {
		t.Fatalf("profiles\n%+v\nwant\n%+v", ps, want)
	}
	for body, wantErr := range map[string]string{
		`{}`:                                   "no profiles",
		`{"d": {"image": "i", "user": "0:0"}}`: "root",
		`{"d": {"image": "i", "user": "me"}}`:  "uid:gid",
		`{"d": {"image": "i", "user": "1000:2147483648"}}`:       "at most 2147483647",
		`{"d": {"image": "i", "user": "4294967296:1000"}}`:       "at most 2147483647",
		`{"d": {"image": "i", "network": "host"}}`:               "network",
		`{"d": {"image": "i", "network": "container:db"}}`:       "network",
		`{"d": {"image": "i", "memory_mb": 1}}`:                  "field memory_mb",
		`{"d": {"image": "i", "memory_mb": 17592186044416}}`:     "field memory_mb",
		`{"d": {"image": "i", "pids": -1}}`:                      "field pids",
		`{"d": {"image": "i", "cpus": 0.005}}`:                   "field cpus",
		`{"d": {"image": "i", "cpus": -1}}`:                      "field cpus",
		`{"d": {"image": "i", "workspace": "rw"}}`:               "field workspace",
		`{"d": {"image": "i", "timeout": "-1s"}}`:                "negative",
		`{"d": {"image": "i", "timeout": 90}}`:                   "duration",
		`{"d": {"image": "i", "env_allow": ["A=B"]}}`:            "field env_allow",
		`{"d": {"image": "i", "env_allow": ["BRAIN_EXEC_TAG"]}}`: "provider's own",
		`{"d": {"image": "i", "privileged": true}}`:              "unknown field",
		`{"d": {}}`:                "field image",
		`{"../d": {"image": "i"}}`: "profile name",
		`{"d": {"image": "i"}} {}`: "trailing",
		`{"d": {"image": "i"}}}`:   "trailing",
		`{"d": {"image": "i"}}]`:   "trailing",
		`{"d": {"image": "i"}`:     "decode",
	} {
		if _, err := ParseProfiles([]byte(body)); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%s: error %v, want one naming %q", body, err, wantErr)
		}
	}
	path := filepath.Join(t.TempDir(), "profiles.json")
	if err := os.WriteFile(path, []byte(`{"d": {"image": "i", "user": "0:0"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadProfiles(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("LoadProfiles error %v, want the file named", err)
	}
}

// FuzzParseProfiles: any bytes give valid profiles or an error, never a
// panic; parsed profiles never run as root or share the host's network,
// and encode back to the same profiles.
func FuzzParseProfiles(f *testing.F) {
	f.Add([]byte(`{"default": {"image": "sandbox:1", "memory_mb": 512, "timeout": "90s", "cpus": 0.5}}`))
	f.Add([]byte(`{"r": {"image": "i", "workspace": "read", "user": "1001:1001", "env_allow": ["LANG"], "network": "bridge"}}`))
	f.Add([]byte(`{"d": {"image": "i", "user": "0:0"}}`))
	f.Add([]byte(`{"d": {"image": "i", "timeout": "1h2m3.5s", "output_bytes": 9}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := ParseProfiles(data)
		if err != nil {
			return
		}
		for name, p := range ps {
			if err := p.check(); err != nil || p.Network == "host" || strings.HasPrefix(p.User, "0:") {
				t.Fatalf("profile %q parsed but unsafe: %+v %v", name, p, err)
			}
		}
		again, err := json.Marshal(ps)
		if err != nil {
			t.Fatalf("encode %+v: %v", ps, err)
		}
		ps2, err := ParseProfiles(again)
		if err != nil || !reflect.DeepEqual(ps, ps2) {
			t.Fatalf("round trip of %s: %+v %v, want %+v", again, ps2, err, ps)
		}
	})
}
