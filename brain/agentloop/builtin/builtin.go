// Package builtin embeds the Wasm build of Brain's default agentloop
// (the program in ./defaultloop, which runs agentloop.Default as a guest).
//
// The build is reproducible: with the Go toolchain recorded in
// default.wasm.goversion,
//
//	cd <module root>
//	GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 GOFLAGS= GOWASM= GOEXPERIMENT= \
//	  go build -trimpath -buildvcs=false -buildmode=c-shared -ldflags=-buildid= \
//	  -o brain/agentloop/builtin/default.wasm ./brain/agentloop/builtin/defaultloop
//
// produces default.wasm byte for byte. A test rebuilds it and compares;
// after a change to the loop or to the types it uses, regenerate with
// go generate (which runs that test with -update).
package builtin

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"strings"
	"sync"
)

//go:generate go test -run TestEmbeddedDefaultLoop -update .

//go:embed default.wasm
var defaultWasm []byte

//go:embed default.wasm.goversion
var goVersion string

// DefaultWasm answers the embedded module of the default loop. Callers must
// not modify it.
func DefaultWasm() []byte { return defaultWasm }

// GoVersion answers the Go toolchain version that built DefaultWasm.
func GoVersion() string { return strings.TrimSpace(goVersion) }

var defaultID = sync.OnceValue(func() string {
	sum := sha256.Sum256(defaultWasm)
	return hex.EncodeToString(sum[:])
})

// DefaultID answers the SHA-256 hex of DefaultWasm: its AgentloopId.
func DefaultID() string { return defaultID() }
