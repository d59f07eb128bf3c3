// Package guestjson is the reflection-free JSON codec shared by the guest
// SDKs (brain/agentloop and brain/tool) for the payloads of their Wasm
// ABIs. encoding/json builds its codec for a type by reflection the first
// time it sees the type, and in a fresh instance every use is the first,
// which costs milliseconds per activation or invocation.
//
// Encoder writes the same bytes as json.Marshal (HTML-safe strings,
// compacted RawMessage values); Decoder reads values as json.Unmarshal
// does (invalid UTF-8 and lone surrogates become U+FFFD, member names
// match ignoring ASCII case through Object) and refuses what it refuses,
// objects and arrays nested more than MaxDepth deep included. The guest
// SDKs build the codecs of their types from these primitives; their tests
// compare the results with encoding/json. The package uses the standard
// library only, so that it builds for wasip1.
package guestjson
