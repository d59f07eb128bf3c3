package builtin_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/agentloop/builtin"
)

var update = flag.Bool("update", false, "rebuild default.wasm and record the toolchain version")

// TestEmbeddedDefaultLoop rebuilds ./defaultloop with the reproducible
// flags and compares the bytes with the embedded module.
func TestEmbeddedDefaultLoop(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH: cannot rebuild the embedded module")
	}
	out, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimSpace(string(out))
	if !*update && version != builtin.GoVersion() {
		t.Skipf("default.wasm was built with %s and this toolchain is %s: the bytes are only comparable with the same toolchain (go generate rebuilds it)", builtin.GoVersion(), version)
	}
	tmp := filepath.Join(t.TempDir(), "default.wasm")
	// The command of the package doc.
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-buildmode=c-shared", "-ldflags=-buildid=", "-o", tmp, "./defaultloop")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0", "GOFLAGS=", "GOWASM=", "GOEXPERIMENT=")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, b)
	}
	got, err := os.ReadFile(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("default.wasm", got, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("default.wasm.goversion", []byte(version+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote default.wasm (%d bytes, %s)", len(got), version)
		return
	}
	if !bytes.Equal(got, builtin.DefaultWasm()) {
		t.Fatalf("rebuilding ./defaultloop gives %d bytes that differ from the embedded %d bytes: the loop or a package it uses changed; run go generate ./brain/agentloop/builtin", len(got), len(builtin.DefaultWasm()))
	}
	sum := sha256.Sum256(got)
	if builtin.DefaultID() != hex.EncodeToString(sum[:]) {
		t.Fatalf("DefaultID %s", builtin.DefaultID())
	}
}
